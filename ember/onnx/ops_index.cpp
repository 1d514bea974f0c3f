// Indexing ONNX ops: Gather*, Scatter*, OneHot, Compress, NonZero, TopK, CumSum, Trilu,
// Einsum. ONNX indices may be negative (counting from the end), which ember's gathers reject,
// so they are wrapped first.
#include <numeric>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// Indices as int64 with negative ones counted from the end of a dim of size `dim`.
Tensor wrap_indices(const Tensor& idx, int64_t dim) {
  Tensor i = idx.to(kI64);
  return where(lt(i, int64_t(0)), add(i, dim), i);
}

TensorList gather_op(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  Tensor idx = wrap_indices(a[1], x.size(axis));
  Tensor flat = index_select(x, axis, idx.reshape({idx.numel()}));
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + axis);
  for (int64_t d : idx.shape()) shape.push_back(d);
  for (int64_t k = axis + 1; k < x.dim(); ++k) shape.push_back(x.size(k));
  return {reshape(flat, to_shape(shape))};
}

TensorList gather_elements(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  return {gather(x, axis, wrap_indices(a[1], x.size(axis)))};
}

// GatherND: the last index dim addresses the first k data dims (after batch_dims), turned into
// one linear index into the data reshaped to [batch * prod(dims[b:b+k]), rest...].
TensorList gather_nd(const OpArgs& a) {
  const Tensor& x = a[0];
  Tensor idx = a[1].to(kI64);
  int64_t b = a.node.i("batch_dims", 0), k = idx.size(-1);
  if (b + k > x.dim()) invalid(a.node, "index depth exceeds the data's rank");
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d) batch *= x.size(d);
  int64_t inner = 1;
  std::vector<int64_t> strides(static_cast<size_t>(k));
  for (int64_t d = k - 1; d >= 0; --d) {
    strides[size_t(d)] = inner;
    inner *= x.size(b + d);
  }
  Tensor lin = zeros(to_shape(std::vector<int64_t>(idx.shape().begin(), idx.shape().end() - 1)),
                     {.dtype = kI64, .device = x.device()});
  for (int64_t d = 0; d < k; ++d)
    lin = add(lin, mul(wrap_indices(idx.select(-1, d), x.size(b + d)), strides[size_t(d)]));
  // Offset of each batch entry in the flattened leading dims.
  Tensor bidx = arange(batch, {.dtype = kI64, .device = x.device()});
  std::vector<int64_t> bshape(static_cast<size_t>(lin.dim()), 1);
  for (int64_t d = 0; d < b; ++d) bshape[size_t(d)] = x.size(d);
  lin = add(lin, mul(bidx.reshape(to_shape(bshape)), inner));
  std::vector<int64_t> flat_shape = {batch * inner};
  for (int64_t d = b + k; d < x.dim(); ++d) flat_shape.push_back(x.size(d));
  Tensor got = index_select(reshape(x, to_shape(flat_shape)), 0, lin.reshape({lin.numel()}));
  std::vector<int64_t> out(lin.shape().begin(), lin.shape().end());
  for (int64_t d = b + k; d < x.dim(); ++d) out.push_back(x.size(d));
  return {reshape(got, to_shape(out))};
}

TensorList scatter_elements(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  Tensor idx = wrap_indices(a[1], x.size(axis));
  std::string r = a.node.s("reduction", "none");
  if (r == "none") return {scatter(x, axis, idx, a[2])};
  if (r == "add") return {scatter_add(x, axis, idx, a[2])};
  if (r == "mul") return {scatter_reduce(x, axis, idx, a[2], "prod")};
  if (r == "max") return {scatter_reduce(x, axis, idx, a[2], "amax")};
  if (r == "min") return {scatter_reduce(x, axis, idx, a[2], "amin")};
  invalid(a.node, "unknown reduction '" + r + "'");
}

TensorList scatter_nd(const OpArgs& a) {
  const Tensor& x = a[0];
  Tensor idx = a[1].to(kI64);
  int64_t k = idx.size(-1);
  TensorList parts;
  for (int64_t d = 0; d < k; ++d) parts.push_back(wrap_indices(idx.select(-1, d), x.size(d)));
  std::string r = a.node.s("reduction", "none");
  if (r == "none") return {index_put(x, parts, a[2], false)};
  if (r == "add") return {index_put(x, parts, a[2], true)};
  if (r != "mul" && r != "max" && r != "min") invalid(a.node, "unknown reduction '" + r + "'");
  // The other reductions scatter along x's first k dims flattened into one, at the indices'
  // linear positions.
  Tensor lin = zeros_like(parts[0]);
  for (int64_t d = 0; d < k; ++d) lin = add(mul(lin, x.size(d)), parts[size_t(d)]);
  std::vector<int64_t> flat = {-1}, rows = {lin.numel()};
  for (int64_t d = k; d < x.dim(); ++d) {
    flat.push_back(x.size(d));
    rows.push_back(x.size(d));
  }
  Tensor src = a[2].reshape(to_shape(rows));
  std::vector<int64_t> ishape(rows.size(), 1);
  ishape[0] = lin.numel();
  Tensor index = expand(lin.reshape(to_shape(ishape)), src.shape());
  const char* how = r == "mul" ? "prod" : r == "max" ? "amax" : "amin";
  return {scatter_reduce(x.reshape(to_shape(flat)), 0, index, src, how).reshape(x.shape())};
}

TensorList one_hot_op(const OpArgs& a) {
  Tensor depth_t = a[1];
  int64_t depth = is_floating(depth_t.dtype()) ? int64_t(host_doubles(depth_t)[0])
                                                : host_ints(depth_t)[0];
  Tensor idx = a[0];
  if (is_floating(idx.dtype())) idx = trunc(idx);
  idx = wrap_indices(idx, depth);
  const Tensor& values = a[2];
  int64_t out_rank = idx.dim() + 1;
  int64_t axis = norm_axis(a.node, a.node.i("axis", -1), out_rank);
  std::vector<int64_t> shape(size_t(out_rank), 1);
  shape[size_t(axis)] = depth;
  Tensor classes = arange(depth, {.dtype = kI64, .device = idx.device()}).reshape(to_shape(shape));
  Tensor hot = eq(unsqueeze(idx, axis), classes);
  Tensor off = values.reshape({2}).select(0, 0), on = values.reshape({2}).select(0, 1);
  return {where(hot, on, off)};
}

TensorList compress_op(const OpArgs& a) {
  Tensor x = a[0];
  Tensor cond = a[1].to(kBool).reshape({a[1].numel()});
  int64_t axis = 0;
  if (a.node.has("axis")) axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  else x = reshape(x, {x.numel()});
  int64_t n = std::min(cond.numel(), x.size(axis));
  Tensor idx = nonzero(cond.slice(0, 0, n)).reshape({-1});
  return {index_select(x, axis, idx)};
}

TensorList nonzero_op(const OpArgs& a) {
  const Tensor& x = a[0];
  if (x.dim() == 0) return {nonzero(x.reshape({1})).t().slice(0, 0, 0)};
  return {nonzero(x).t().contiguous()};
}

TensorList topk_op(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t k = a.node.opset < 10 ? a.node.i("k", 0) : host_ints(a[1])[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", -1), x.dim());
  auto [v, i] = topk(x, k, axis, a.node.i("largest", 1) != 0, true);
  return {v, i};
}

TensorList cumsum_op(const OpArgs& a) {
  Tensor x = a[0];
  int64_t axis = norm_axis(a.node, host_ints(a[1])[0], x.dim());
  bool reverse = a.node.i("reverse", 0), exclusive = a.node.i("exclusive", 0);
  if (reverse) x = flip(x, {axis});
  Tensor y = cumsum(x, axis, x.dtype());
  if (exclusive) {
    // Shift by one: a zero slice, then all but the last running sum.
    Tensor z = zeros_like(x.slice(axis, 0, 1));
    y = cat({z, y.slice(axis, 0, x.size(axis) - 1)}, axis);
  }
  if (reverse) y = flip(y, {axis});
  return {y};
}

TensorList trilu(const OpArgs& a) {
  int64_t k = a.has(1) ? host_ints(a[1])[0] : 0;
  if (a.node.i("upper", 1)) return {triu(a[0], k)};
  return {tril(a[0], k)};
}

TensorList einsum_op(const OpArgs& a) {
  std::string eq = a.node.s("equation", "");
  std::string clean;
  for (char c : eq)
    if (c != ' ') clean += c;
  TensorList xs(a.in.begin(), a.in.end());
  return {einsum(clean, xs)};
}

}  // namespace

void add_index_ops(OpTable& t) {
  t["Gather"] = gather_op;
  t["GatherElements"] = gather_elements;
  t["GatherND"] = gather_nd;
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;
  t["ScatterND"] = scatter_nd;
  t["OneHot"] = one_hot_op;
  t["Compress"] = compress_op;
  t["NonZero"] = nonzero_op;
  t["TopK"] = topk_op;
  t["CumSum"] = cumsum_op;
  t["Trilu"] = trilu;
  t["Einsum"] = einsum_op;
}

}  // namespace ember::onnx::detail
