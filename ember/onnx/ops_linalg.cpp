// Det: Gaussian elimination with partial pivoting, batched over the leading dims, written as
// ember ops (a row swap is a gather; the product of the pivots, signed by the swaps, is the
// determinant), so it runs on the graph's device.
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

TensorList det(const OpArgs& a) {
  const Tensor& x = a[0];
  if (x.dim() < 2 || x.size(-1) != x.size(-2))
    invalid(a.node, "expects [..., n, n], got " + shape_str(dims_of(x)));
  const int64_t n = x.size(-1);
  std::vector<int64_t> batch(x.shape().begin(), x.shape().end() - 2);
  Tensor m = x.reshape({-1, n, n});
  if (!is_floating(m.dtype())) m = m.to(kF32);
  const int64_t B = m.size(0);
  Tensor rows = arange(n, {.dtype = kI64, .device = m.device()}).reshape({1, n});
  Tensor result = ones({B}, {.dtype = m.dtype(), .device = m.device()});
  for (int64_t k = 0; k < n; ++k) {
    // The row (at or below k) with the largest |value| in column k becomes row k.
    Tensor p = add(argmax(abs(m.slice(1, k, n).select(2, k)), 1, true), k);  // [B, 1]
    Tensor perm = where(eq(rows, k), p, where(eq(rows, p), Scalar(k), rows));
    m = gather(m, 1, expand(unsqueeze(perm, 2), {B, n, n}));
    result = where(ne(p.reshape({B}), k), neg(result), result);
    Tensor pivot = m.select(1, k).select(1, k);  // [B]
    result = mul(result, pivot);
    if (k + 1 == n) break;
    // Eliminate below the pivot; a zero pivot leaves a zero determinant (no division by it).
    Tensor safe = where(eq(pivot, 0.0), Scalar(1.0), pivot).reshape({B, 1, 1});
    Tensor below = m.slice(1, k + 1, n);
    Tensor factor = div(below.slice(2, k, k + 1), safe);  // [B, n-k-1, 1]
    m = cat({m.slice(1, 0, k + 1), sub(below, mul(factor, m.slice(1, k, k + 1)))}, 1);
  }
  return {result.reshape(to_shape(batch)).to(x.dtype())};
}

}  // namespace

void add_linalg_ops(OpTable& t) { t["Det"] = det; }

}  // namespace ember::onnx::detail
