// The NCCL transport: CUDA buffers, one communicator per group and GPU, collectives on a stream
// of their own that first waits for ember's default stream (where the inputs were written), and
// completion seen through an event. Errors come from ncclCommGetAsyncError; a timeout aborts the
// communicator (ncclCommAbort), so no collective is left hanging on a dead peer.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "ember/backends/cuda/runtime.h"
#include "ember/distributed/comm.h"

namespace ember::distributed::detail {
namespace {

[[noreturn]] void nccl_fail(const char* op, const char* call, ncclResult_t r) {
  throw DistributedError(std::string("[") + op + "] " + call + " failed: " +
                         ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")");
}
void check(ncclResult_t r, const char* op, const char* call) {
  if (r != ncclSuccess && r != ncclInProgress) nccl_fail(op, call, r);
}
void check_cuda(cudaError_t e, const char* op, const char* call) {
  if (e != cudaSuccess)
    throw DistributedError(std::string("[") + op + "] " + call + " failed: " +
                           cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// The NCCL type and element count for n elements of d in a reduction (complex: pairs of reals).
std::pair<ncclDataType_t, size_t> nccl_type(DType d, size_t n) {
  switch (d) {
    case DType::F32: return {ncclFloat32, n};
    case DType::F64: return {ncclFloat64, n};
    case DType::F16: return {ncclFloat16, n};
    case DType::BF16: return {ncclBfloat16, n};
    case DType::I8: return {ncclInt8, n};
    case DType::U8: case DType::Bool: return {ncclUint8, n};
    case DType::I32: return {ncclInt32, n};
    case DType::I64: return {ncclInt64, n};
    case DType::C64: return {ncclFloat32, 2 * n};
    case DType::C128: return {ncclFloat64, 2 * n};
    default: return {ncclUint8, n * itemsize(d)};
  }
}
ncclRedOp_t nccl_op(DType d, ReduceOp op) {
  if (d == DType::Bool) return op == ReduceOp::Min ? ncclMin : ncclMax;  // or / and
  switch (op) {
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    default: return ncclSum;
  }
}

// A communicator being made (nonblocking): done when its async state leaves ncclInProgress.
class NcclInit final : public Request {
 public:
  explicit NcclInit(ncclComm_t c) : c_(c) {}
  bool test(const char* op) override {
    ncclResult_t st = ncclInProgress;
    check(ncclCommGetAsyncError(c_, &st), op, "ncclCommGetAsyncError");
    if (st == ncclInProgress) return false;
    if (st != ncclSuccess) nccl_fail(op, "ncclCommInitRankConfig", st);
    return true;
  }
  void abort() override { ncclCommAbort(c_); }

 private:
  ncclComm_t c_;
};

struct Shared {
  ncclComm_t comm = nullptr;
  bool aborted = false;
};

class NcclRequest final : public Request {
 public:
  NcclRequest(std::shared_ptr<Shared> s, cudaEvent_t ev) : s_(std::move(s)), ev_(ev) {}
  ~NcclRequest() override { cudaEventDestroy(ev_); }
  bool test(const char* op) override {
    if (s_->aborted) throw DistributedError(std::string("[") + op + "] the NCCL communicator was aborted");
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(s_->comm, &async), op, "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress) nccl_fail(op, "a NCCL collective", async);
    cudaError_t e = cudaEventQuery(ev_);
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, op, "cudaEventQuery");
    return true;
  }
  void abort() override {
    if (!s_->aborted) {
      s_->aborted = true;
      ncclCommAbort(s_->comm);
    }
  }

 private:
  std::shared_ptr<Shared> s_;
  cudaEvent_t ev_;
};

class NcclComm final : public Comm {
 public:
  NcclComm(ncclComm_t c, int rank, int size, int dev, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), dev_(dev), timeout_(timeout) {
    s_ = std::make_shared<Shared>();
    s_->comm = c;
    cuda::set_device(dev_);
    check_cuda(cudaSetDevice(dev_), "init", "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "init",
               "cudaStreamCreate");
    check_cuda(cudaMalloc(&scratch_, 16), "init", "cudaMalloc");
  }
  ~NcclComm() override {
    if (!s_->aborted) ncclCommDestroy(s_->comm);
    cudaFree(scratch_);
    cudaStreamDestroy(stream_);
  }
  Transport transport() const override { return Transport::Nccl; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool reduces(DType d, ReduceOp op) const override {
    if (d == DType::I16) return false;
    if (d == DType::C64 || d == DType::C128) return op == ReduceOp::Sum || op == ReduceOp::Avg;
    return true;
  }
  bool has_avg() const override { return true; }

  std::unique_ptr<Request> all_reduce(const void* in, void* out, size_t n, DType d,
                                      ReduceOp op) override {
    auto [t, k] = nccl_type(d, n);
    begin("all_reduce");
    check(ncclAllReduce(in, out, k, t, nccl_op(d, op), s_->comm, stream_), "all_reduce",
          "ncclAllReduce");
    return end("all_reduce");
  }
  std::unique_ptr<Request> broadcast(void* buf, size_t n, DType d, int root) override {
    begin("broadcast");
    check(ncclBroadcast(buf, buf, n * itemsize(d), ncclUint8, root, s_->comm, stream_),
          "broadcast", "ncclBroadcast");
    return end("broadcast");
  }
  std::unique_ptr<Request> all_gather(const void* in, void* out, size_t n, DType d) override {
    begin("all_gather");
    check(ncclAllGather(in, out, n * itemsize(d), ncclUint8, s_->comm, stream_), "all_gather",
          "ncclAllGather");
    return end("all_gather");
  }
  std::unique_ptr<Request> reduce_scatter(const void* in, void* out, size_t n, DType d,
                                          ReduceOp op) override {
    auto [t, k] = nccl_type(d, n);
    begin("reduce_scatter");
    check(ncclReduceScatter(in, out, k, t, nccl_op(d, op), s_->comm, stream_), "reduce_scatter",
          "ncclReduceScatter");
    return end("reduce_scatter");
  }
  std::unique_ptr<Request> all_to_all(const void* in, void* out, size_t n, DType d) override {
    const size_t bytes = n * itemsize(d);
    begin("all_to_all");
    check(ncclGroupStart(), "all_to_all", "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      check(ncclSend(static_cast<const char*>(in) + r * bytes, bytes, ncclUint8, r, s_->comm,
                     stream_), "all_to_all", "ncclSend");
      check(ncclRecv(static_cast<char*>(out) + r * bytes, bytes, ncclUint8, r, s_->comm, stream_),
            "all_to_all", "ncclRecv");
    }
    check(ncclGroupEnd(), "all_to_all", "ncclGroupEnd");
    return end("all_to_all");
  }
  // NCCL has no tags: messages between two ranks arrive in the order they were sent.
  std::unique_ptr<Request> send(const void* buf, size_t n, DType d, int dst, int) override {
    begin("send");
    check(ncclSend(buf, n * itemsize(d), ncclUint8, dst, s_->comm, stream_), "send", "ncclSend");
    return end("send");
  }
  std::unique_ptr<Request> recv(void* buf, size_t n, DType d, int src, int) override {
    begin("recv");
    check(ncclRecv(buf, n * itemsize(d), ncclUint8, src, s_->comm, stream_), "recv", "ncclRecv");
    return end("recv");
  }
  std::unique_ptr<Request> barrier() override {
    begin("barrier");
    check(ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, s_->comm, stream_), "barrier",
          "ncclAllReduce");
    return end("barrier");
  }
  std::unique_ptr<Comm> split(const std::vector<int>& ranks, std::chrono::milliseconds) override {
    int me = -1;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rank_) me = int(i);
    ncclComm_t sub = nullptr;
    check(ncclCommSplit(s_->comm, me >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, rank_, &sub, nullptr),
          "new_group", "ncclCommSplit");
    if (me < 0) return nullptr;
    NcclInit pending(sub);  // the parent is nonblocking, and so is its split
    wait_for(pending, "new_group", "rank " + std::to_string(rank_), std::chrono::steady_clock::now(),
             timeout_);
    return std::make_unique<NcclComm>(sub, me, int(ranks.size()), dev_, timeout_);
  }

 private:
  // The collective's stream waits for ember's default stream, where the inputs were written.
  void begin(const char* op) {
    cuda::set_device(dev_);
    check_cuda(cudaSetDevice(dev_), op, "cudaSetDevice");
    cudaEvent_t ready;
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), op, "cudaEventCreate");
    auto ember_stream = static_cast<cudaStream_t>(cuda::stream_handle(nullptr, dev_));
    check_cuda(cudaEventRecord(ready, ember_stream), op, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, ready, 0), op, "cudaStreamWaitEvent");
    cudaEventDestroy(ready);  // released once the wait is done
  }
  std::unique_ptr<Request> end(const char* op) {
    // A nonblocking communicator may return ncclInProgress from an enqueue: the call is done
    // (and the event below orders after it) once its async state leaves that.
    NcclInit settle(s_->comm);
    try {
      wait_for(settle, op, "rank " + std::to_string(rank_) + " of " + std::to_string(size_),
               std::chrono::steady_clock::now(), timeout_);
    } catch (...) {
      s_->aborted = true;
      throw;
    }
    cudaEvent_t done;
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), op, "cudaEventCreate");
    check_cuda(cudaEventRecord(done, stream_), op, "cudaEventRecord");
    return std::make_unique<NcclRequest>(s_, done);
  }

  std::shared_ptr<Shared> s_;
  int rank_, size_, dev_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;
};

}  // namespace

std::vector<uint8_t> nccl_unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "init", "ncclGetUniqueId");
  std::vector<uint8_t> v(sizeof id.internal);
  std::memcpy(v.data(), id.internal, v.size());
  return v;
}


std::unique_ptr<Comm> nccl_comm(int rank, int size, int device,
                                const std::vector<uint8_t>& unique_id,
                                std::chrono::milliseconds timeout, const std::string& who) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal)
    throw DistributedError("[init] a NCCL unique id has " + std::to_string(sizeof id.internal) +
                           " bytes, found " + std::to_string(unique_id.size()));
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  cuda::set_device(device);
  check_cuda(cudaSetDevice(device), "init", "cudaSetDevice");
  // Nonblocking, so that a rank that never joins fails the others within the timeout (a
  // blocking ncclCommInitRank waits for ever); the wait is the collectives' (wait_for), and on
  // expiry the half-made communicator is aborted.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c = nullptr;
  check(ncclCommInitRankConfig(&c, size, id, rank, &config), "init (NCCL)",
        "ncclCommInitRankConfig");
  NcclInit pending(c);
  wait_for(pending, "init (NCCL)", who, std::chrono::steady_clock::now(), timeout);
  return std::make_unique<NcclComm>(c, rank, size, device, timeout);
}

}  // namespace ember::distributed::detail
