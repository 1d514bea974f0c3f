// The cuda executor of the fusion layer: kernels rendered as CUDA C for the
// device's architecture, compiled to cubins by NVRTC (cached on disk like the
// host JIT's objects) and launched on the device's default stream. A flush
// waits for its compiles (the eager path would be the host fallback), and a
// group of one op is a kernel too, so every fusable op runs as a generated
// kernel on the GPU.
#include "ember/fusion/executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/graph.h"
#include "ember/backends/cuda/nvrtc.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/cuda/status.h"
#include "ember/backends/fallback.h"
#include "ember/fusion/library.h"
#include "ember/fusion/queue.h"
#include "ember/shape.h"
#include "ember/tensor_impl.h"

namespace ember::cuda {
namespace {

struct PerArch {
  kl::Target target;
  std::unique_ptr<kl::Renderer> renderer;
};

class CudaExecutor final : public fusion::Executor {
 public:
  const kl::Target& target(Device d) override { return arch(d).target; }
  const kl::Renderer& renderer(Device d) override { return *arch(d).renderer; }
  kl::KernelCache& cache(Device d) override {
    const DeviceInfo& info = device_info(d.index());
    return nvrtc_kernel_cache(info.major, info.minor);
  }
  bool waits_for_kernels() const override { return true; }
  bool single_op_kernels() const override { return true; }
  // A norm's backward is one row kernel as on the cpu; EMBER_CUDA_NORM_BACKWARD=0 fuses its
  // pieces instead (to tell a fault in that kernel from one elsewhere).
  bool plans_norm_backward() const override {
    static const bool on = [] {
      const char* e = std::getenv("EMBER_CUDA_NORM_BACKWARD");
      return !(e && std::string(e) == "0");
    }();
    return on;
  }

  void launch(Device d, const kl::Kernel& k, kl::KernelFn fn, const kl::ArgPack& args,
              int64_t items, int64_t grain, const char* op) override {
    if (items <= 0) return;
    const int dev = d.index();
    set_device(dev);
    const int64_t blocks = kl::cuda_grid_blocks(k, items, grain);
    const int64_t threads = kl::cuda_block_threads(k);
    static const uint64_t no_args = 0;  // a kernel without parameters still takes one slot
    long long begin = 0, end = items, g = grain;
    void* params[] = {const_cast<void*>(args.slots() ? args.data() : &no_args), &begin, &end, &g};
    auto stream = static_cast<cudaStream_t>(stream_handle(nullptr, dev));
    check(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(unsigned(blocks)),
                           dim3(unsigned(threads)), params, 0, stream),
          op, "cudaLaunchKernel");
    after_launch(op, dev);
    if (detail::Capture* c = capture_of(dev)) [[unlikely]]
      note_capture_launch(*c, reinterpret_cast<const void*>(fn), unsigned(blocks),
                          unsigned(threads), params[0], args.slots() ? args.slots() * 8 : 8,
                          begin, end, g);
  }

  void copy(Device d, void* dst, const void* src, size_t bytes) override {
    set_device(d.index());
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                          static_cast<cudaStream_t>(stream_handle(nullptr, d.index()))),
          "fusion", "cudaMemcpyAsync");
  }

  const void* upload(Device d, const void* host, size_t bytes, Tensor& keep) override {
    // Inside a capture the table must outlive this flush: every replay reads it.
    if (detail::Capture* c = capture_of(d.index())) [[unlikely]]
      return capture_constant(*c, host, bytes);
    keep = detail::empty_tensor({int64_t(bytes)}, DType::U8, d.without_layers());
    void* dst = keep.impl()->data();
    set_device(d.index());
    // From pageable memory: staged before this returns, so `host` may go at once.
    check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice,
                          static_cast<cudaStream_t>(stream_handle(nullptr, d.index()))),
          "fusion", "cudaMemcpyAsync (kernel tables)");
    return dst;
  }

  void* status_word(Device d, fusion::KernelCheck check) override {
    return status_slot(d.index(), std::move(check));
  }

 private:
  PerArch& arch(Device d) {
    const DeviceInfo& info = device_info(d.index());
    std::lock_guard lock(mu_);
    auto& a = by_arch_[info.major * 10 + info.minor];
    if (!a) {
      a = std::make_unique<PerArch>();
      a->target = kl::cuda_target(info.major, info.minor, info.smem_per_block_optin);
      a->renderer = kl::cuda_renderer(a->target);
    }
    return *a;
  }
  std::mutex mu_;
  std::map<int, std::unique_ptr<PerArch>> by_arch_;
};

// Registered at load: Device::cuda(i)'s flushes run here.
const bool registered = [] {
  fusion::register_executor(Backend::Cuda, new CudaExecutor());
  return true;
}();

// An op on the eager device: a queue of that one op, run at once, so it is a generated kernel
// like the same op in a fused program. Calls the queue itself runs one by one (no kernel fits
// them: integer division, a reduction without a recipe) and calls with placed outputs or a
// stream take the host fallback.
thread_local bool t_inside = false;

// The sorted dims a sum, mean, amax, amin, var or std reduces when they are not adjacent
// ([N, C, H, W] over N, H and W: batch and group norm statistics and gradients), else none.
Shape split_dims(const OpCall& c) {
  switch (c.op) {
    case OpId::sum:
    case OpId::mean:
    case OpId::amax:
    case OpId::amin:
    case OpId::var:
    case OpId::std:
      break;
    default:
      return {};
  }
  const Tensor& x = c.inputs[0];
  if (c.inputs.size() != 1 || c.attrs.ints.size() < 2) return {};
  Shape dims;
  for (int64_t d : c.attrs.ints) dims.push_back(wrap_dim(d, x.dim(), op_name(c.op)));
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) return {};
  return dims.back() - dims.front() + 1 == int64_t(dims.size()) ? Shape{} : dims;
}

// Such a reduction is beyond the row template: one strided copy moves the reduced dims last,
// and the reduction runs over that trailing block (a queue of its own, nested in this one).
TensorList moved_reduction(const OpCall& c, const Shape& dims) {
  const Tensor& x = c.inputs[0];
  Shape perm, tail;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) perm.push_back(d);
  for (int64_t d : dims) {
    tail.push_back(int64_t(perm.size()));
    perm.push_back(d);
  }
  Attrs a = c.attrs;
  a.ints = tail;
  a.b[0] = false;
  const bool inside = t_inside;
  t_inside = false;
  struct Restore {
    bool v;
    ~Restore() { t_inside = v; }
  } restore{inside};
  Tensor y = dispatch1(c.op, a, {x.permute(perm).contiguous()});
  return {y.reshape(c.meta.m[0].shape)};
}

// The calling thread's queue for eager ops on `d`, reused call after call: its buffers keep
// their capacity, so a tiny op allocates no queue, nodes or index on the host.
fusion::Queue& eager_queue(Device d) {
  thread_local std::vector<std::unique_ptr<fusion::Queue>> queues;
  for (const auto& q : queues)
    if (q->place() == d) return *q;
  queues.push_back(std::make_unique<fusion::Queue>(d));
  return *queues.back();
}

TensorList kl_op(const OpCall& c) {
  if (const Shape dims = split_dims(c); !dims.empty()) return moved_reduction(c, dims);
  bool dynamic = false;
  for (int k = 0; k < c.meta.n; ++k)
    for (int64_t d : c.meta.m[k].shape) dynamic = dynamic || d < 0;
  if (t_inside || !c.out.empty() || c.stream || c.meta.variadic || dynamic)
    return detail::run_host_fallback(c);
  t_inside = true;
  struct Reset {
    ~Reset() { t_inside = false; }
  } reset;
  fusion::Queue& q = eager_queue(c.device);
  TensorList outs;
  try {
    outs = q.record(c);
  } catch (...) {
    q.abandon("the eager op failed while it was recorded");
    throw;
  }
  q.flush();
  return outs;
}

}  // namespace

void register_kl_kernels(BackendImpl& b) {
  const BackendImpl* flex = backend_for(Backend::Flex);
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = OpId(i);
    if (!flex || !fusion::queued_op(op) || fusion::library_op(op) || b.kernel(op).fn) continue;
    if (flex->kernel(op).fn) b.set_kernel(op, kl_op, flex->kernel(op).dtypes);
  }
}

}  // namespace ember::cuda
