#pragma once
// ember::distributed — process groups and collectives over MPI (host tensors) and NCCL (CUDA
// tensors), and data-parallel training (DistributedDataParallel). Library ember::distributed.
// No MPI or NCCL header here: both stay inside ember/distributed/*.cpp.
//
//   auto& world = distributed::init();            // from mpirun's or torchrun-style env
//   distributed::all_reduce(t, ReduceOp::Sum).wait();
//
// Every collective returns a Work handle at once; its result is written into the given tensor
// by wait() (which throws DistributedError when a rank failed or the timeout passed).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::distributed {

/// A collective that failed: a timeout (a rank died or hangs), an error the transport reported,
/// or (debug mode) tensors that differ across ranks. what() names the collective and the rank.
class DistributedError : public Error { using Error::Error; };

enum class ReduceOp { Sum, Avg, Max, Min };
/// MPI: host tensors (flex, cpu). NCCL: CUDA tensors. Local: a world of one process.
enum class Transport { Mpi, Nccl, Local };

struct InitOptions {
  /// How long a collective may wait for the other ranks before DistributedError; unset: the
  /// env EMBER_DIST_TIMEOUT (seconds), else 300 s.
  std::optional<std::chrono::milliseconds> timeout = {};
  /// Check shapes and dtypes across ranks before each collective (one extra small collective);
  /// unset: env EMBER_DIST_DEBUG=1.
  std::optional<bool> debug = {};
};

/// How this process was launched, read from the environment by init().
struct LaunchInfo {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string launcher;  // "mpirun", "torchrun" or "none"
  std::string master_addr;
  int master_port = 0;
};
/// Reads OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}, else RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/
/// MASTER_PORT, else a world of one; ValueError for a malformed or inconsistent variable.
LaunchInfo launch_info();

class Work {
 public:
  struct Impl;
  Work() = default;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  /// Blocks until the collective is done and its result written; throws DistributedError on a
  /// timeout or a transport error. Later calls return at once.
  void wait();
  /// Whether wait() would return without blocking (no result is written by this call).
  bool is_completed();

 private:
  std::shared_ptr<Impl> impl_;
};

/// A set of ranks that run collectives together: the world (init) or a sub-group (new_group).
/// Every member must call the same collectives in the same order.
class ProcessGroup {
 public:
  struct Impl;
  explicit ProcessGroup(std::shared_ptr<Impl> impl);
  /// This process's rank in the group, and the group's size.
  int rank() const;
  int size() const;
  /// The transport that host tensors (Mpi or Local) use.
  Transport host_transport() const;
  /// The timeout of this group's collectives.
  std::chrono::milliseconds timeout() const;

  /// Reduces `t` across ranks, in place (Avg: floating dtypes only).
  [[nodiscard]] Work all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
  /// Copies `t` of rank `root` into `t` on every rank.
  [[nodiscard]] Work broadcast(Tensor& t, int root = 0);
  /// out = the `in` of every rank, concatenated along dim 0 in rank order (a 0-d `in` gives
  /// out of shape [size()]).
  [[nodiscard]] Work all_gather(Tensor& out, const Tensor& in);
  /// Reduces `in` across ranks and gives rank r the r-th of size() equal chunks along dim 0.
  [[nodiscard]] Work reduce_scatter(Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::Sum);
  /// Chunk j of `in` (size() equal chunks along dim 0) goes to rank j; out's chunk i came
  /// from rank i.
  [[nodiscard]] Work all_to_all(Tensor& out, const Tensor& in);
  [[nodiscard]] Work barrier();
  /// Point to point: the receiver's tensor must have the sender's shape and dtype.
  [[nodiscard]] Work send(const Tensor& t, int dst, int tag = 0);
  [[nodiscard]] Work recv(Tensor& t, int src, int tag = 0);

  Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

/// Starts the world group once (later calls return it): MPI under mpirun, NCCL rendezvous for
/// CUDA tensors under torchrun-style variables, a world of one otherwise.
ProcessGroup& init(const InitOptions& o = {});
/// Whether init() has run.
bool is_initialized();
/// The world group; ValueError before init().
ProcessGroup& world();
/// A sub-group of world ranks `ranks` (sorted, distinct). Every world rank must call it, also
/// those not in `ranks`, which get std::nullopt.
std::optional<ProcessGroup> new_group(const std::vector<int>& ranks);
/// Finalizes MPI and frees the communicators (also done at exit). Groups are unusable after.
void shutdown();

/// The world group's collectives (init() first).
[[nodiscard]] Work all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
[[nodiscard]] Work broadcast(Tensor& t, int root = 0);
[[nodiscard]] Work all_gather(Tensor& out, const Tensor& in);
[[nodiscard]] Work reduce_scatter(Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::Sum);
[[nodiscard]] Work all_to_all(Tensor& out, const Tensor& in);
void barrier();
int rank();
int world_size();

}  // namespace ember::distributed

#include "ember/distributed/ddp.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/zero.h"
