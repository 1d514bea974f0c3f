#pragma once
// The transports behind a ProcessGroup (private): MPI for host memory, NCCL for CUDA memory.
// A transport moves raw buffers; the group (process_group.cpp) checks tensors, stages them
// (contiguous, materialised through the device's layers) and writes results back.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed.h"

namespace ember::distributed::detail {

/// A nonblocking operation in flight.
class Request {
 public:
  virtual ~Request() = default;
  /// Makes progress; true once done. Throws DistributedError for an error the transport
  /// reported (naming `op`).
  virtual bool test(const char* op) = 0;
  /// Called after a timeout: tear down what can be (NCCL aborts its communicator).
  virtual void abort() {}
};

/// A communicator over the ranks of one group. Counts are in elements of `dtype`; buffers are
/// host pointers (Mpi) or device pointers on the communicator's GPU (Nccl). Every call starts a
/// nonblocking operation.
class Comm {
 public:
  virtual ~Comm() = default;
  virtual Transport transport() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Whether reductions take this dtype as it is (else the group reduces a f32 copy).
  virtual bool reduces(DType d, ReduceOp op) const = 0;
  /// Whether ReduceOp::Avg is native (else the group sums and divides).
  virtual bool has_avg() const = 0;
  virtual std::unique_ptr<Request> all_reduce(const void* in, void* out, size_t n, DType d,
                                              ReduceOp op) = 0;
  virtual std::unique_ptr<Request> broadcast(void* buf, size_t n, DType d, int root) = 0;
  /// `n` elements from every rank; out holds size() * n.
  virtual std::unique_ptr<Request> all_gather(const void* in, void* out, size_t n, DType d) = 0;
  /// in holds size() * n elements; out gets n.
  virtual std::unique_ptr<Request> reduce_scatter(const void* in, void* out, size_t n, DType d,
                                                  ReduceOp op) = 0;
  /// `n` elements to and from every rank.
  virtual std::unique_ptr<Request> all_to_all(const void* in, void* out, size_t n, DType d) = 0;
  virtual std::unique_ptr<Request> send(const void* buf, size_t n, DType d, int dst, int tag) = 0;
  virtual std::unique_ptr<Request> recv(void* buf, size_t n, DType d, int src, int tag) = 0;
  virtual std::unique_ptr<Request> barrier() = 0;
  /// The communicator of the sub-group `ranks` (ranks of this communicator, sorted); null on
  /// ranks outside it. Every rank of this communicator calls it.
  virtual std::unique_ptr<Comm> split(const std::vector<int>& ranks,
                                      std::chrono::milliseconds timeout) = 0;
};

/// Waits for `r` until `timeout` has passed since `start`; throws DistributedError naming `op`
/// and `who` on a timeout (after r.abort()).
void wait_for(Request& r, const char* op, const std::string& who,
              std::chrono::steady_clock::time_point start, std::chrono::milliseconds timeout);

#ifdef EMBER_HAVE_MPI
/// MPI_COMM_WORLD (MPI_Init_thread on first use), with MPI_ERRORS_RETURN.
std::unique_ptr<Comm> mpi_world();
void mpi_finalize(bool clean);
#endif
#ifdef EMBER_HAVE_NCCL
/// A NCCL communicator of `size` ranks on GPU `device`, joined with the 128-byte unique id that
/// `exchange` gives every rank (it is called with rank 0's fresh id on rank 0).
/// Made nonblocking (ncclCommInitRankConfig) and polled until `timeout` (then aborted and a
/// DistributedError naming `who`).
std::unique_ptr<Comm> nccl_comm(int rank, int size, int device,
                                const std::vector<uint8_t>& unique_id,
                                std::chrono::milliseconds timeout, const std::string& who);
/// A fresh NCCL unique id (128 bytes).
std::vector<uint8_t> nccl_unique_id();
#endif

/// The torchrun-style rendezvous over TCP: rank 0 listens on MASTER_ADDR:MASTER_PORT for as
/// long as the object lives, and each all_gather is one round in which every other rank
/// connects, sends its blob and receives every rank's.
class TcpRendezvous {
 public:
  /// Rank 0 binds and listens here (DistributedError if it cannot).
  explicit TcpRendezvous(const LaunchInfo& l);
  ~TcpRendezvous();
  TcpRendezvous(const TcpRendezvous&) = delete;
  TcpRendezvous& operator=(const TcpRendezvous&) = delete;
  /// Every rank's `blob` (all of one size), in rank order. Every rank calls it the same number
  /// of times; DistributedError after `timeout` (naming the ranks that never came, on rank 0).
  std::vector<uint8_t> all_gather(const std::vector<uint8_t>& blob,
                                  std::chrono::milliseconds timeout);
  const LaunchInfo& launch() const { return l_; }

 private:
  LaunchInfo l_;
  int listen_fd_ = -1;
  uint32_t round_ = 0;
};

/// Rank 0 sends `blob` to every rank over TCP at addr:port (one round of a TcpRendezvous);
/// other ranks return what rank 0 sent. DistributedError after `timeout`.
std::vector<uint8_t> tcp_broadcast(const LaunchInfo& l, std::vector<uint8_t> blob, size_t n,
                                   std::chrono::milliseconds timeout);

/// new_group's id exchange under a torchrun-style launch: the sub-group's first rank makes a
/// blob with `make` (a NCCL unique id), one round of `r` carries every rank's, and the members
/// of `ranks` (world ranks, sorted) return their first rank's; the others return nothing.
std::vector<uint8_t> subgroup_blob(TcpRendezvous& r, const std::vector<int>& ranks, size_t n,
                                   const std::function<std::vector<uint8_t>()>& make,
                                   std::chrono::milliseconds timeout);

}  // namespace ember::distributed::detail
