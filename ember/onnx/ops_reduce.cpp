// Reductions: Reduce* (axes an attribute before opset 18, an input from 18 on; ReduceSum from
// 13), keepdims, noop_with_empty_axes, and ArgMax/ArgMin with select_last_index. Results keep
// the input's dtype, as ONNX wants (ember sums integers to int64).
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

struct Axes {
  Shape dims;  // empty = all
  bool keep = true;
  bool noop = false;  // no axes and noop_with_empty_axes: the input passes through
};

Axes reduce_axes(const OpArgs& a, int64_t input_since) {
  Axes r;
  r.keep = a.node.i("keepdims", 1) != 0;
  auto axes = ints_attr_or_input(a, "axes", 1, input_since);
  if (!axes || axes->empty()) {
    r.noop = a.node.i("noop_with_empty_axes", 0) != 0;
    for (int64_t d = 0; d < a[0].dim(); ++d) r.dims.push_back(d);
    return r;
  }
  for (int64_t ax : *axes) r.dims.push_back(norm_axis(a.node, ax, a[0].dim()));
  return r;
}

using ReduceFn = Tensor (*)(const Tensor& x, const Axes& ax);

Tensor r_sum(const Tensor& x, const Axes& ax) { return sum(x, ax.dims, ax.keep); }
Tensor r_mean(const Tensor& x, const Axes& ax) { return mean(x, ax.dims, ax.keep); }
Tensor r_max(const Tensor& x, const Axes& ax) {
  if (x.dtype() == kBool) return any(x, ax.dims, ax.keep);
  return amax(x, ax.dims, ax.keep);
}
Tensor r_min(const Tensor& x, const Axes& ax) {
  if (x.dtype() == kBool) return all(x, ax.dims, ax.keep);
  return amin(x, ax.dims, ax.keep);
}
Tensor r_prod(const Tensor& x, const Axes& ax) {
  // ember's prod takes one dim: reduce each in turn, from the last, keeping dims.
  Tensor y = x;
  Shape dims = ax.dims;
  std::sort(dims.begin(), dims.end());
  for (auto it = dims.end(); it != dims.begin();) {
    --it;
    y = prod(y, *it, true);
  }
  if (!ax.keep) y = squeeze(y, dims);
  return y;
}
Tensor r_l1(const Tensor& x, const Axes& ax) { return sum(abs(x), ax.dims, ax.keep); }
Tensor r_l2(const Tensor& x, const Axes& ax) {
  Tensor s = sum(mul(x, x), ax.dims, ax.keep);
  return is_floating(x.dtype()) ? sqrt(s) : sqrt(s.to(kF64)).to(x.dtype());
}
Tensor r_sum_square(const Tensor& x, const Axes& ax) { return sum(mul(x, x), ax.dims, ax.keep); }
Tensor r_log_sum(const Tensor& x, const Axes& ax) { return log(sum(x, ax.dims, ax.keep)); }
Tensor r_log_sum_exp(const Tensor& x, const Axes& ax) {
  if (x.numel() == 0) return log(sum(exp(x), ax.dims, ax.keep));
  return logsumexp(x, ax.dims, ax.keep);
}

template <ReduceFn F, int64_t kInputSince>
TensorList reduce(const OpArgs& a) {
  const Tensor& x = a[0];
  Axes ax = reduce_axes(a, kInputSince);
  if (ax.noop) return {x};
  Tensor y = F(x, ax);
  return {y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

template <bool kMax>
TensorList arg_reduce(const OpArgs& a) {
  Tensor x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  bool keep = a.node.i("keepdims", 1) != 0, last = a.node.i("select_last_index", 0) != 0;
  if (last) x = flip(x, {axis});
  Tensor i = kMax ? argmax(x, axis, keep) : argmin(x, axis, keep);
  if (last) i = sub(scalar_tensor(x.size(axis) - 1, kI64, i.device()), i);
  return {i};
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  t["ReduceSum"] = reduce<r_sum, 13>;
  t["ReduceMean"] = reduce<r_mean, 18>;
  t["ReduceMax"] = reduce<r_max, 18>;
  t["ReduceMin"] = reduce<r_min, 18>;
  t["ReduceProd"] = reduce<r_prod, 18>;
  t["ReduceL1"] = reduce<r_l1, 18>;
  t["ReduceL2"] = reduce<r_l2, 18>;
  t["ReduceSumSquare"] = reduce<r_sum_square, 18>;
  t["ReduceLogSum"] = reduce<r_log_sum, 18>;
  t["ReduceLogSumExp"] = reduce<r_log_sum_exp, 18>;
  t["ArgMax"] = arg_reduce<true>;
  t["ArgMin"] = arg_reduce<false>;
}

}  // namespace ember::onnx::detail
