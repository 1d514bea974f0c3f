#pragma once
// Where a device's generated kernels come from and how they run (private to ember/fusion): the
// target its templates specialise for, the renderer and kernel cache that make the code, and
// the launch over work items. The cpu executor is the host JIT on ember's thread pool; the
// cuda executor (ember/backends/cuda/executor.cpp, registered when CUDA is built) renders CUDA C,
// compiles cubins with NVRTC and launches on the device's stream.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "ember/device.h"
#include "ember/kl/abi.h"
#include "ember/kl/cache/kernel_cache.h"
#include "ember/kl/render.h"
#include "ember/tensor.h"

namespace ember::fusion {

/// What a kernel's failure means: throws the ember error (naming the op, as the op's own kernel
/// does) for the status word's code and detail (cpu::jit::KernelStatus's layout).
using KernelCheck = std::function<void(int32_t code, int64_t detail)>;

class Executor {
 public:
  virtual ~Executor() = default;
  /// The target for device d's kernels (its templates' forms, vector width, planes).
  virtual const kl::Target& target(Device d) = 0;
  virtual const kl::Renderer& renderer(Device d) = 0;
  virtual kl::KernelCache& cache(Device d) = 0;
  /// Whether a flush waits for its kernels to compile rather than running the ops one by one
  /// meanwhile (a device whose eager kernels are slower than the wait).
  virtual bool waits_for_kernels() const { return false; }
  /// Whether a group of one op still runs as a generated kernel (else the backend's own kernel
  /// runs it: it is as good).
  virtual bool single_op_kernels() const { return false; }
  /// Whether the planner may run a norm's backward (layer_norm_backward, rms_norm_backward) as
  /// one row kernel of its own on this device; else the fusion layer lowers it to its pieces.
  virtual bool plans_norm_backward() const { return true; }
  /// Runs entry point `fn` of kernel `k` over work items [0, items), `grain` items per
  /// workgroup, in device d's stream order. `op` names the work in errors.
  virtual void launch(Device d, const kl::Kernel& k, kl::KernelFn fn, const kl::ArgPack& args,
                      int64_t items, int64_t grain, const char* op) = 0;
  /// Copies `bytes` between two buffers of device d (stream ordered).
  virtual void copy(Device d, void* dst, const void* src, size_t bytes) = 0;
  /// Host bytes (a pointer table, a work table) as memory device d's kernels can read: `host`
  /// itself on host devices, else a stream-ordered copy in device memory that `keep` holds (the
  /// host bytes may go as soon as this returns).
  virtual const void* upload(Device d, const void* host, size_t bytes, Tensor& keep) = 0;
  /// A cleared status word (16 bytes) for the next launch on d: a kernel that fails stores its
  /// first error there, and `check` raises it — on host devices when that launch returns, on
  /// others at the next sync of d (with EMBER_CUDA_SYNC=1 after the launch), in launch order.
  virtual void* status_word(Device d, KernelCheck check) = 0;
};

/// The executor of d's backend (the cpu's for every backend that registered none).
Executor& executor_for(Device d);
/// Makes `e` (never destroyed) the executor of backend b.
void register_executor(Backend b, Executor* e);
/// Tests: `fn` sees every kernel a plan compiles for the first time in this process (before it
/// is rendered); an empty function stops it.
void observe_kernels(std::function<void(const kl::Kernel&)> fn);
void notify_kernel(const kl::Kernel& k);

}  // namespace ember::fusion
