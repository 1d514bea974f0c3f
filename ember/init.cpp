// Start-up: registers every op family and every built backend, once, explicitly.
#include <atomic>
#include <mutex>

#include "ember/autodiff/rules.h"
#ifndef EMBER_FLEX_ONLY  // the WebAssembly build has flex alone (cmake/wasm.cmake)
#include "ember/backends/cpu/cpu.h"
#endif
#include "ember/backends/flex/flex.h"
#ifdef EMBER_CUDA
#include "ember/backends/cuda/runtime.h"
#endif
#ifdef EMBER_REMOTE
#include "ember/backends/remote/remote_backend.h"
#endif

namespace ember::ops {
void register_creation_ops();
void register_view_ops();
void register_unary_ops();
void register_binary_ops();
void register_reduce_ops();
void register_linalg_ops();
void register_index_ops();
void register_layout_ops();
void register_nn_ops();
void register_vision_ops();
void register_complex_ops();
}  // namespace ember::ops
namespace ember::kl::detail {
void register_user_op_family();
}  // namespace ember::kl::detail

namespace ember::detail {

void init() {
  // Every op calls this: after the first time it is one load, not call_once's TLS and locking.
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) [[likely]]
    return;
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_creation_ops();
    ops::register_view_ops();
    ops::register_unary_ops();
    ops::register_binary_ops();
    ops::register_reduce_ops();
    ops::register_linalg_ops();
    ops::register_index_ops();
    ops::register_layout_ops();
    ops::register_nn_ops();
#ifndef EMBER_FLEX_ONLY
    ops::register_vision_ops();
#endif
    ops::register_complex_ops();
#ifndef EMBER_NO_TRAINING  // the WebAssembly inference module (cmake/wasm.cmake) has no VJPs
    autodiff::register_rules_elementwise();
    autodiff::register_rules_shape();
    autodiff::register_rules_reduce();
    autodiff::register_rules_nn();
#endif
    register_backend(Backend::Flex, flex::make_flex_backend(Backend::Flex));
#ifndef EMBER_FLEX_ONLY
    register_backend(Backend::Cpu, cpu::make_cpu_backend());
#endif
#ifdef EMBER_CUDA
    // Registered even without a GPU: Device::cuda(i) then explains what is missing.
    register_backend(Backend::Cuda, cuda::make_cuda_backend());
#endif
#ifdef EMBER_REMOTE
    register_backend(Backend::Remote, remote::make_remote_backend());
#endif
#ifndef EMBER_FLEX_ONLY
    kl::detail::register_user_op_family();  // after the backends: it sets their kernels
#endif
    done.store(true, std::memory_order_release);
  });
}

}  // namespace ember::detail
