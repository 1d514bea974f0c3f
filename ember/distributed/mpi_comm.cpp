// The MPI transport (OpenMPI): host buffers, nonblocking collectives (MPI-3), MPI_ERRORS_RETURN
// so that a failure reaches the caller as DistributedError instead of aborting the job.
#include <mpi.h>

#include <climits>
#include <string>

#include "ember/distributed/comm.h"

namespace ember::distributed::detail {
namespace {

std::string mpi_error(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, size_t(len));
}

void check(int code, const char* op, const char* call) {
  if (code != MPI_SUCCESS)
    throw DistributedError(std::string("[") + op + "] " + call + " failed: " + mpi_error(code));
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I8: return MPI_INT8_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::I16: return MPI_INT16_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::Bool: return MPI_C_BOOL;
    case DType::C64: return MPI_C_FLOAT_COMPLEX;
    case DType::C128: return MPI_C_DOUBLE_COMPLEX;
    case DType::F16: case DType::BF16: return MPI_UINT16_T;  // moved as bits, never reduced
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(DType d, ReduceOp op) {
  if (d == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    default: return MPI_SUM;
  }
}

int count_of(size_t n, const char* op) {
  if (n > size_t(INT_MAX))
    throw DistributedError(std::string("[") + op + "] " + std::to_string(n) +
                           " elements in one message: the MPI transport takes at most " +
                           std::to_string(INT_MAX));
  return int(n);
}

class MpiRequest final : public Request {
 public:
  MpiRequest() = default;
  MPI_Request req = MPI_REQUEST_NULL;
  bool test(const char* op) override {
    int done = 0;
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), op, "MPI_Test");
    return done != 0;
  }
};

class MpiComm final : public Comm {
 public:
  explicit MpiComm(MPI_Comm c, bool owned) : comm_(c), owned_(owned) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
  }
  Transport transport() const override { return Transport::Mpi; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool reduces(DType d, ReduceOp op) const override {
    if (d == DType::F16 || d == DType::BF16) return false;
    if (d == DType::C64 || d == DType::C128) return op == ReduceOp::Sum;
    return true;
  }
  bool has_avg() const override { return false; }

  std::unique_ptr<Request> all_reduce(const void* in, void* out, size_t n, DType d,
                                      ReduceOp op) override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Iallreduce(in, out, count_of(n, "all_reduce"), mpi_type(d), mpi_op(d, op), comm_,
                         &r->req), "all_reduce", "MPI_Iallreduce");
    return r;
  }
  std::unique_ptr<Request> broadcast(void* buf, size_t n, DType d, int root) override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Ibcast(buf, count_of(n, "broadcast"), mpi_type(d), root, comm_, &r->req),
          "broadcast", "MPI_Ibcast");
    return r;
  }
  std::unique_ptr<Request> all_gather(const void* in, void* out, size_t n, DType d) override {
    auto r = std::make_unique<MpiRequest>();
    const int c = count_of(n, "all_gather");
    check(MPI_Iallgather(in, c, mpi_type(d), out, c, mpi_type(d), comm_, &r->req), "all_gather",
          "MPI_Iallgather");
    return r;
  }
  std::unique_ptr<Request> reduce_scatter(const void* in, void* out, size_t n, DType d,
                                          ReduceOp op) override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Ireduce_scatter_block(in, out, count_of(n, "reduce_scatter"), mpi_type(d),
                                    mpi_op(d, op), comm_, &r->req),
          "reduce_scatter", "MPI_Ireduce_scatter_block");
    return r;
  }
  std::unique_ptr<Request> all_to_all(const void* in, void* out, size_t n, DType d) override {
    auto r = std::make_unique<MpiRequest>();
    const int c = count_of(n, "all_to_all");
    check(MPI_Ialltoall(in, c, mpi_type(d), out, c, mpi_type(d), comm_, &r->req), "all_to_all",
          "MPI_Ialltoall");
    return r;
  }
  std::unique_ptr<Request> send(const void* buf, size_t n, DType d, int dst, int tag) override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Isend(buf, count_of(n, "send"), mpi_type(d), dst, tag, comm_, &r->req), "send",
          "MPI_Isend");
    return r;
  }
  std::unique_ptr<Request> recv(void* buf, size_t n, DType d, int src, int tag) override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Irecv(buf, count_of(n, "recv"), mpi_type(d), src, tag, comm_, &r->req), "recv",
          "MPI_Irecv");
    return r;
  }
  std::unique_ptr<Request> barrier() override {
    auto r = std::make_unique<MpiRequest>();
    check(MPI_Ibarrier(comm_, &r->req), "barrier", "MPI_Ibarrier");
    return r;
  }
  std::unique_ptr<Comm> split(const std::vector<int>& ranks,
                              std::chrono::milliseconds timeout) override {
    // MPI_Comm_split blocks with no deadline: a barrier with one comes first, so a rank that
    // never calls new_group fails the others in time instead of hanging them.
    auto b = barrier();
    wait_for(*b, "new_group", "rank " + std::to_string(rank_), std::chrono::steady_clock::now(),
             timeout);
    bool member = false;
    for (int r : ranks) member = member || r == rank_;
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &sub), "new_group",
          "MPI_Comm_split");
    if (!member) return nullptr;
    return std::make_unique<MpiComm>(sub, true);
  }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    // Collectives start on the caller's thread and are polled there; SERIALIZED also allows a
    // DataLoader worker or the dashboard thread to exist without calling MPI.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "init",
          "MPI_Init_thread");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiComm>(MPI_COMM_WORLD, false);
}

void mpi_finalize(bool clean) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized) return;
  // After a timeout a collective may still be pending on a dead peer: MPI_Finalize would wait
  // for it. Abort the job instead (mpirun then ends the other ranks too).
  if (!clean) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

}  // namespace ember::distributed::detail
