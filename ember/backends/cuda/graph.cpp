// ember::capture on CUDA: the step's work is recorded by stream capture on the device's default
// stream (relaxed mode: ember's own checks, below and in the backend, stop host syncs and name
// the op) and instantiated once; a replay is one cudaGraphLaunch after a little host work:
//   - the tensors the step reads are checked to still exist (a replaced parameter or state
//     invalidates the graph: CaptureError, capture again);
//   - on_replay hooks advance host counters (optimizer step counts), replay scalars (bias
//     corrections, lr) are written to device memory in one copy;
//   - kernels that draw random numbers get the Philox offsets an eager step would draw now
//     (cudaGraphExecKernelNodeSetParams), and the generator advances past them.
// Memory: the capture allocates from the graph's private pool (allocator.cpp), so the replays
// find their intermediates where the capture put them; kernel tables and constants copied from
// the host live as long as the graph.
#include "ember/backends/cuda/graph.h"

#include <cuda_runtime.h>

#include <cstring>
#include <unordered_set>

#include "ember/backends/cuda/runtime.h"
#include "ember/error.h"
#include "ember/fusion/queue.h"
#include "ember/graph.h"
#include "ember/tensor_impl.h"

namespace ember::cuda {
namespace {

constexpr int64_t kMaxScalars = 4096;     // replay scalars of one graph
constexpr size_t kMaxStatusWords = 4096;  // checked launches of one graph
constexpr size_t kWordBytes = 16;

// A kernel whose parameters a replay rewrites (its Philox offsets).
struct Patch {
  cudaGraphNode_t node = nullptr;
  const void* fn = nullptr;
  unsigned blocks = 0, threads = 0;
  std::vector<uint64_t> args;
  long long begin = 0, end = 0, grain = 0;
  std::vector<std::pair<int, uint64_t>> slots;  // (slot, offset drawn during the capture)
  cudaKernelNodeParams kp{};                     // the node's own, kernelParams ours
};

class CudaCapture final : public detail::Capture {
 public:
  int dev = 0;
  cudaStream_t stream = nullptr;
  std::unique_ptr<Stream> side;  // copies of constants, outside the graph
  std::shared_ptr<GraphPool> pool;
  std::shared_ptr<GraphStatus> status;
  Tensor scalars;  // kMaxScalars f32 in the pool
  std::vector<std::function<double()>> scalar_fns;
  std::unordered_set<const Storage*> seen;
  std::vector<std::weak_ptr<Storage>> reads;
  std::vector<Patch> patches;
  uint64_t philox_start = 0;

  Tensor replay_scalar(Device d, std::function<double()> value) override {
    const int64_t i = int64_t(scalar_fns.size());
    if (i == kMaxScalars)
      detail::throw_capture("capture", "expected at most " + std::to_string(kMaxScalars) +
                                           " per-step scalars in one step, found more");
    scalar_fns.push_back(std::move(value));
    return detail::retag(detail::make_view(scalars, {}, {}, i), d);
  }

  void note_inputs(std::span<const Tensor> inputs) override {
    for (const Tensor& t : inputs) {
      if (!t.defined() || t.impl()->is_constant) continue;
      const std::shared_ptr<Storage>& s = t.impl()->storage;
      // Pending storages are the step's own values (written by this capture's queue).
      if (!s || !s->place.same_place(place) || in_graph_pool(*s) ||
          s->pending.load(std::memory_order_acquire))
        continue;
      if (seen.insert(s.get()).second) reads.push_back(s);
    }
  }
};

thread_local CudaCapture* t_capture = nullptr;

class CudaGraph final : public detail::GraphExec {
 public:
  ~CudaGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    cudaGetLastError();
  }
  CudaGraph(CudaCapture& c, cudaGraph_t g, cudaGraphExec_t e)
      : dev_(c.dev),
        stream_(c.stream),
        graph_(g),
        exec_(e),
        pool_(c.pool),
        status_(c.status),
        scalars_(c.scalars),
        scalar_fns_(std::move(c.scalar_fns)),
        hooks_(std::move(c.hooks)),
        reads_(std::move(c.reads)),
        patches_(std::move(c.patches)),
        philox_start_(c.philox_start),
        draws_(c.draws.size()) {
    host_scalars_.resize(scalar_fns_.size());
    for (Patch& p : patches_) {
      // The node's function as the graph holds it (else the handle the launch took).
      if (cudaGraphKernelNodeGetParams(p.node, &p.kp) != cudaSuccess) {
        cudaGetLastError();
        p.kp = {};
        p.kp.func = const_cast<void*>(p.fn);
        p.kp.gridDim = dim3(p.blocks);
        p.kp.blockDim = dim3(p.threads);
      }
      p.kp.extra = nullptr;
    }
  }

  void replay() override {
    for (const std::weak_ptr<Storage>& r : reads_)
      if (r.expired())
        detail::throw_capture(
            "CapturedStep::replay",
            "expected every tensor the captured step reads to exist, found one gone (a parameter "
            "or state replaced instead of updated in place, a state dict loaded, an input "
            "dropped): capture the step again");
    const Device place = Device::cuda(dev_);
    fusion::queue_for(place).flush();  // copies into the static inputs, queued since the last replay
    set_device(dev_);
    for (auto& h : hooks_) h();
    if (!scalar_fns_.empty()) {
      for (size_t i = 0; i < scalar_fns_.size(); ++i) host_scalars_[i] = float(scalar_fns_[i]());
      // From pageable memory: staged before this returns, ordered before the launch.
      check(cudaMemcpyAsync(scalars_.impl()->data(), host_scalars_.data(),
                            host_scalars_.size() * sizeof(float), cudaMemcpyHostToDevice, stream_),
            "CapturedStep::replay", "per-step scalars");
    }
    if (draws_) {
      const uint64_t base = detail::philox_counter(place);
      for (Patch& p : patches_) {
        for (auto [slot, offset] : p.slots) p.args[size_t(slot)] = base + (offset - philox_start_);
        void* params[] = {p.args.data(), &p.begin, &p.end, &p.grain};
        p.kp.kernelParams = params;
        check(cudaGraphExecKernelNodeSetParams(exec_, p.node, &p.kp), "CapturedStep::replay",
              "cudaGraphExecKernelNodeSetParams (Philox offsets)");
      }
      detail::set_philox_counter(place, base + draws_);
    }
    check(cudaGraphLaunch(exec_, stream_), "CapturedStep::replay", "cudaGraphLaunch");
    if (!status_->checks.empty()) note_graph_replay(dev_, status_);
  }

  int64_t pool_bytes() const override { return pool_->bytes(); }

 private:
  int dev_;
  cudaStream_t stream_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  std::shared_ptr<GraphPool> pool_;
  std::shared_ptr<GraphStatus> status_;
  Tensor scalars_;
  std::vector<std::function<double()>> scalar_fns_;
  std::vector<float> host_scalars_;
  std::vector<std::function<void()>> hooks_;
  std::vector<std::weak_ptr<Storage>> reads_;
  std::vector<Patch> patches_;
  uint64_t philox_start_;
  uint64_t draws_;
};

// Closes the capture on every path: the stream leaves capture mode (its partial graph is
// dropped on failure) and the allocator goes back to the stream-ordered pool.
struct Closer {
  CudaCapture& c;
  bool capturing = false;
  cudaGraph_t graph = nullptr;
  void end() {
    if (!capturing) return;
    capturing = false;
    const cudaError_t e = cudaStreamEndCapture(c.stream, &graph);
    if (e != cudaSuccess) {
      cudaGetLastError();
      graph = nullptr;
    }
  }
  ~Closer() {
    end();
    if (graph) cudaGraphDestroy(graph);
    t_capture = nullptr;
    detail::g_capture.store(nullptr);
    set_capture_pool(c.dev, nullptr);
    cudaGetLastError();
  }
};

}  // namespace

detail::Capture* capture_of(int dev) {
  CudaCapture* c = t_capture;
  return c && c->dev == dev ? c : nullptr;
}

const std::shared_ptr<GraphPool>& capture_pool_of(detail::Capture& c) {
  return static_cast<CudaCapture&>(c).pool;
}

const void* capture_constant(detail::Capture& c, const void* host, size_t bytes) {
  auto& cc = static_cast<CudaCapture&>(c);
  // A block no kernel of the graph has used: a reused one could be written by a replay.
  void* dst = cc.pool->take(bytes, /*fresh=*/true);
  // Not part of the graph: written once, now, on a stream of its own (relaxed capture mode
  // allows waiting for it), and read by every replay.
  auto side = cudaStream_t(stream_handle(cc.side.get(), cc.dev));
  check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, side), "capture",
        "constant to the device");
  check(cudaStreamSynchronize(side), "capture", "constant to the device");
  return dst;
}

void* capture_status_slot(detail::Capture& c, StatusCheck check) {
  auto& cc = static_cast<CudaCapture&>(c);
  GraphStatus& s = *cc.status;
  if (s.checks.size() == kMaxStatusWords)
    detail::throw_capture("capture", "expected at most " + std::to_string(kMaxStatusWords) +
                                         " checked kernels in one step, found more");
  void* slot = static_cast<char*>(s.block) + s.checks.size() * kWordBytes;
  s.checks.push_back(std::move(check));
  return slot;
}

void note_capture_launch(detail::Capture& c, const void* fn, unsigned blocks, unsigned threads,
                         const void* args, size_t arg_bytes, long long begin, long long end,
                         long long grain) {
  auto& cc = static_cast<CudaCapture&>(c);
  if (cc.next_philox_slots.empty()) return;
  Patch p;
  cudaStreamCaptureStatus st{};
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  check(cudaStreamGetCaptureInfo(cc.stream, &st, nullptr, nullptr, &deps, nullptr, &n), "capture",
        "cudaStreamGetCaptureInfo");
  if (st != cudaStreamCaptureStatusActive || n != 1)
    detail::throw_capture("capture", "expected the random kernel just launched as the capture's "
                                     "last node, found " + std::to_string(n) + " last nodes");
  p.node = deps[0];
  p.fn = fn;
  p.blocks = blocks, p.threads = threads;
  p.args.resize((arg_bytes + 7) / 8);
  std::memcpy(p.args.data(), args, arg_bytes);
  p.begin = begin, p.end = end, p.grain = grain;
  p.slots = std::move(cc.next_philox_slots);
  cc.next_philox_slots.clear();
  cc.patches.push_back(std::move(p));
}

std::unique_ptr<detail::GraphExec> capture_graph(const std::function<TensorList()>& fn, Device d,
                                                 TensorList& outputs) {
  const int dev = d.index();
  check_index(dev, "capture");
  // Work queued before the capture is not the step's: run it, and surface its errors now.
  ember::synchronize(d);
  set_device(dev);
  CudaCapture c;
  c.place = Device::cuda(dev);
  c.thread = std::this_thread::get_id();
  c.dev = dev;
  c.stream = cudaStream_t(stream_handle(nullptr, dev));
  c.side = new_stream(dev);
  c.pool = std::make_shared<GraphPool>(dev);
  c.status = std::make_shared<GraphStatus>();
  c.status->pool = c.pool;
  c.status->block = c.pool->take(kMaxStatusWords * kWordBytes);
  check(cudaMemset(c.status->block, 0, kMaxStatusWords * kWordBytes), "capture", "status words");
  c.philox_start = detail::philox_counter(c.place);
  // The capture draws nothing, whether it succeeds or fails: the first replay (or the eager
  // step run instead of a failed capture) draws what the next eager step would.
  struct PhiloxBack {
    const CudaCapture& c;
    ~PhiloxBack() { detail::set_philox_counter(c.place, c.philox_start); }
  } philox_back{c};
  Closer closer{c};
  t_capture = &c;
  detail::g_capture.store(&c);
  set_capture_pool(dev, c.pool);
  c.scalars = detail::empty_tensor({kMaxScalars}, DType::F32, c.place);
  check(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeRelaxed), "capture",
        "cudaStreamBeginCapture");
  closer.capturing = true;
  TensorList outs;
  try {
    outs = fn();
    fusion::queue_for(c.place).flush();
  } catch (...) {
    // What the step queued and did not run is dropped; the stream leaves capture mode clean.
    fusion::queue_for(c.place).abandon("the capture of this step failed", /*keep_targets=*/true);
    throw;
  }
  closer.end();
  if (!closer.graph)
    detail::throw_capture("capture", "the CUDA stream capture was invalidated (an operation "
                                     "outside ember's control synchronised the device?)");
  // Every draw must be in some kernel a replay rewrites (a draw recomputed by several kernels,
  // a dropout mask in the forward and the backward, is in each of them).
  std::unordered_set<uint64_t> patched;
  for (const Patch& p : c.patches)
    for (auto [slot, offset] : p.slots) patched.insert(offset);
  size_t unmatched = 0;
  for (uint64_t d : c.draws) unmatched += patched.count(d) ? 0 : 1;
  if (unmatched)
    detail::throw_capture(
        "capture", std::to_string(unmatched) + " of the step's " +
                       std::to_string(c.draws.size()) +
                       " random draws ran outside fused kernels (rand, randn, randint, bernoulli "
                       "with tensor probabilities), whose offsets a replay cannot advance: draw "
                       "them outside the step, or use dropout / bernoulli(p)");
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, closer.graph, 0), "capture", "cudaGraphInstantiate");
  for (Tensor& t : outs) c.note_inputs({&t, 1});  // outputs from before the capture are read too
  // What a replay checks: the tensors from before the capture that the step reads (the step's
  // own values now sit in the pool; those it dropped are gone).
  std::erase_if(c.reads, [](const std::weak_ptr<Storage>& w) {
    const std::shared_ptr<Storage> s = w.lock();
    return !s || in_graph_pool(*s);
  });
  outputs = std::move(outs);
  auto g = std::make_unique<CudaGraph>(c, closer.graph, exec);
  closer.graph = nullptr;  // the graph owns it now
  return g;
}

}  // namespace ember::cuda
