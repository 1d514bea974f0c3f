// flex kernels: mm, bmm, matmul, linear and dot, all through one batched driver over gemm().
// Operands keep their strides (transposes and broadcast batch dims cost no copy); f16/bf16 run
// through f32.
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/gemm.h"
#include "ember/backends/flex/gemm_dispatch.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/unary.h"
#include "ember/ops/views.h"

namespace ember::flex {
void register_flex_conv(BackendImpl& b);
void register_flex_quant(BackendImpl& b);
void register_flex_linalg_decomp(BackendImpl& b);

TensorList via_f32(const OpCall& c) {
  std::vector<Tensor> in;
  for (const Tensor& t : c.inputs) in.push_back(t.defined() ? cast(t, DType::F32) : t);
  Tensor r = dispatch1(c.op, c.attrs, std::span<const Tensor>(in));
  return {cast(r, c.inputs[0].dtype())};
}

namespace {

template <class T> T* ptr(const Tensor& t) {
  return static_cast<T*>(static_cast<void*>(t.impl()->data()));
}

// out[batch..., n, m] (+)= a[..., n, k] @ b[..., k, m] (+ bias[m] when given); a and b have
// rank >= 2 and batch dims that broadcast to out's. out is contiguous.
template <class T>
void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate,
                  const T* bias = nullptr) {
  if (out.numel() == 0) return;
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  T* c = ptr<T>(out);
  if (k == 0) return gemm<T>(out.numel() / m, m, 0, {}, {}, c, m, accumulate, bias);
  const MatRef<T> am{ptr<T>(a), a.stride(-2), a.stride(-1)};
  const MatRef<T> bm{ptr<T>(b), b.stride(-2), b.stride(-1)};
  // Batch dims on a only (x @ W): fold them into the rows when the strides allow, one big GEMM.
  if (b.dim() == 2 && a.dim() > 2) {
    if (auto st = ops::view_strides(a.shape(), a.strides(), {a.numel() / k, k})) {
      gemm<T>(a.numel() / k, m, k, {am.p, (*st)[0], (*st)[1]}, bm, c, m, accumulate, bias);
      return;
    }
  }
  const int64_t nbd = out.dim() - 2;
  const int64_t nb = out.numel() / (n * m);
  // Batch strides right-aligned to out's batch dims; 0 where an operand broadcasts.
  Shape sa(size_t(nbd), 0), sb(size_t(nbd), 0);
  for (int64_t d = 0; d < a.dim() - 2; ++d)
    if (a.size(d) != 1) sa[size_t(nbd - (a.dim() - 2) + d)] = a.stride(d);
  for (int64_t d = 0; d < b.dim() - 2; ++d)
    if (b.size(d) != 1) sb[size_t(nbd - (b.dim() - 2) + d)] = b.stride(d);
  auto one = [&](int64_t i) {
    int64_t oa = 0, ob = 0;
    for (int64_t d = nbd - 1, r = i; d >= 0; --d) {
      const int64_t idx = r % out.size(d);
      r /= out.size(d);
      oa += idx * sa[size_t(d)];
      ob += idx * sb[size_t(d)];
    }
    gemm<T>(n, m, k, {am.p + oa, am.rs, am.cs}, {bm.p + ob, bm.rs, bm.cs}, c + i * n * m, m,
            accumulate, bias);
  };
  // Many small products: one per thread at a time (gemm runs inline inside the region).
  // Few large ones: one after another, each split over the threads.
  const double flops = 2.0 * double(n) * double(m) * double(k);
  const int64_t threads = num_threads();
  if (nb >= 2 * threads && (flops < double(1 << 22) || nb >= 8 * threads)) {
    const int64_t grain = std::max<int64_t>(1, int64_t(double(1 << 16) / flops));
    parallel_for(nb, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < nb; ++i) one(i);
  }
}

// The output viewed with the unit dims a 1-D operand of matmul/linear dropped put back.
Tensor unsqueezed_output(const Tensor& out, bool a_vector, bool b_vector) {
  Shape full = out.shape();
  if (b_vector) full.push_back(1);
  if (a_vector) full.insert(full.size() - 1, 1);
  return ember::detail::make_view(out, full, contiguous_strides(full), out.offset());
}

// mm, bmm and matmul (the inference already checked ranks and shapes).
TensorList k_matmul(const OpCall& c) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  if (is_half(a.dtype())) return via_f32(c);
  Tensor out = new_output(c);
  const bool av = a.dim() == 1, bv = b.dim() == 1;
  Tensor a2 = av ? a.unsqueeze(0) : a, b2 = bv ? b.unsqueeze(1) : b;
  Tensor o = unsqueezed_output(out, av, bv);
  dispatch_gemm(a.dtype(), op_name(c.op), [&](auto tag) {
    batched_gemm<decltype(tag)>(a2, b2, o, false);
  });
  return {out};
}

// x @ w^T + bias. A bias of one value per output feature is added by the GEMM as it writes the
// output; any other bias (a 1-D w's scalar one, a strided one) is written first and the product
// accumulated onto it.
TensorList k_linear(const OpCall& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &bias = c.inputs[2];
  if (is_half(x.dtype())) return via_f32(c);
  Tensor out = new_output(c);
  const bool xv = x.dim() == 1, wv = w.dim() == 1;
  const bool fused = bias.defined() && !wv && bias.dim() == 1 && bias.size(0) == w.size(0) &&
                     bias.stride(0) == 1 && bias.dtype() == x.dtype();
  if (bias.defined() && !fused && out.numel()) out.copy_(bias);
  Tensor a = xv ? x.unsqueeze(0) : x, b = wv ? w.unsqueeze(1) : w.t();
  Tensor o = unsqueezed_output(out, xv, wv);
  dispatch_gemm(x.dtype(), "linear", [&](auto tag) {
    using T = decltype(tag);
    batched_gemm<T>(a, b, o, bias.defined() && !fused, fused ? ptr<T>(bias) : nullptr);
  });
  return {out};
}

TensorList k_dot(const OpCall& c) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  if (is_half(a.dtype())) return via_f32(c);
  Tensor out = new_output(c);
  dispatch_gemm(a.dtype(), "dot", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = a.numel();
    *ptr<T>(out) = n ? dot<T>(n, ptr<T>(a), a.stride(0), ptr<T>(b), b.stride(0)) : T(0);
  });
  return {out};
}

}  // namespace

void register_flex_linalg(BackendImpl& b) {
  for (OpId op : {OpId::mm, OpId::bmm, OpId::matmul}) b.set_kernel(op, k_matmul, kNumericDTypes);
  b.set_kernel(OpId::linear, k_linear, kNumericDTypes);
  b.set_kernel(OpId::dot, k_dot, kNumericDTypes);
  register_flex_conv(b);
#ifndef EMBER_FLEX_ONLY  // the WebAssembly build leaves these out (cmake/wasm.cmake)
  register_flex_quant(b);
  register_flex_linalg_decomp(b);
#endif
}

}  // namespace ember::flex
