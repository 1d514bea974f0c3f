// The cpu backend: flex's kernel table (flex stays free of dependencies), then the oneDNN kernels
// on top where this build has oneDNN. Without oneDNN the fused entry points of dnnl_ops.h say
// "cannot" and the backend is flex's kernels under the cpu name. Where this build has LAPACK the
// linalg decompositions run through it (lapack_linalg.cpp).
#include <array>
#include <atomic>
#include <string>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/backends/flex/flex.h"
#include "ember/error.h"

namespace ember::cpu {

// The skinny-product rule (dnnl_ops.h) lives here, built with or without oneDNN: the fusion
// planner asks it too.
namespace {
std::atomic<int64_t> g_skinny_rows{32};
}
int64_t skinny_rows() { return g_skinny_rows.load(std::memory_order_relaxed); }
void set_skinny_rows(int64_t rows) { g_skinny_rows.store(rows); }

bool skinny_product(const Shape& out) {
  if (out.empty()) return skinny_rows() > 0;
  const int64_t n = out.back(), numel = numel_of(out);
  return n == 0 || numel / n <= skinny_rows();
}

namespace {
std::array<Kernel, kNumOps> g_flex{};
}  // namespace

Kernel flex_kernel(OpId op) { return g_flex[size_t(op)]; }

void override_kernel(BackendImpl& b, OpId op, Kernel fn) {
  const KernelEntry& flex = b.kernel(op);
  if (!flex.fn)
    throw Error(std::string("[cpu] no flex kernel for ") + op_name(op) + " to fall back to");
  b.set_kernel(op, fn, flex.dtypes);
}

std::unique_ptr<BackendImpl> make_cpu_backend() {
  std::unique_ptr<BackendImpl> b = flex::make_flex_backend(Backend::Cpu);
  for (int i = 0; i < kNumOps; ++i) g_flex[size_t(i)] = b->kernel(OpId(i)).fn;
#ifdef EMBER_DNNL
  register_dnnl_matmul(*b);
  register_dnnl_conv(*b);
  register_dnnl_conv_grad(*b);
  register_dnnl_pool(*b);
#endif
#ifdef EMBER_LAPACK
  register_lapack_linalg(*b);
#endif
  return b;
}

#ifndef EMBER_DNNL
namespace {
[[noreturn]] void no_dnnl(const char* op) {
  ember::detail::throw_not_implemented(op, "this build of ember has no oneDNN");
}
}  // namespace
bool dnnl_available() { return false; }
bool can_matmul(const Tensor&, const Tensor&, const Epilogue&) { return false; }
Tensor matmul(const Tensor&, const Tensor&, const Epilogue&, const Tensor&) { no_dnnl("matmul"); }
bool can_linear(const Tensor&, const Tensor&, const Tensor&, const Epilogue&) { return false; }
Tensor linear(const Tensor&, const Tensor&, const Tensor&, const Epilogue&, const Tensor&) {
  no_dnnl("linear");
}
bool can_conv(OpId, const Attrs&, const Tensor&, const Tensor&, const Tensor&, const Epilogue&,
              const Tensor&) {
  return false;
}
Tensor conv(OpId op, const Attrs&, const Tensor&, const Tensor&, const Tensor&, const Epilogue&,
            const Tensor&) {
  no_dnnl(op_name(op));
}
Tensor try_conv(OpId, const Attrs&, const Tensor&, const Tensor&, const Tensor&, const Epilogue&,
                const Tensor&) {
  return {};
}
DnnlStats dnnl_stats() { return {}; }
void set_dnnl_cache_capacity(int64_t) {}
WeightCacheStats dnnl_weight_cache_stats() { return {}; }
void set_dnnl_weight_cache_bytes(int64_t) {}
int dnnl_threads() { return 0; }
#endif

}  // namespace ember::cpu
