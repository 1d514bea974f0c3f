// Shape ONNX ops: Reshape, Shape, Size, Flatten, Transpose, Squeeze/Unsqueeze, Concat, Split,
// Slice, Expand, Tile, Pad, DepthToSpace/SpaceToDepth and the creation ops (Constant,
// ConstantOfShape, Range, EyeLike). Shapes and axes that ONNX passes as tensors are read on the
// host.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

TensorList reshape_op(const OpArgs& a) {
  const Tensor& x = a[0];
  std::vector<int64_t> shape = a.node.opset < 5 ? a.node.ints("shape") : host_ints(a[1]);
  bool allowzero = a.node.i("allowzero", 0);
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] == 0 && !allowzero) {
      if (int64_t(k) >= x.dim()) invalid(a.node, "shape entry 0 at a dim the input lacks");
      shape[k] = x.size(int64_t(k));
    }
  return {reshape(x, to_shape(shape))};
}

TensorList shape_op(const OpArgs& a) {
  std::vector<int64_t> d = dims_of(a[0]);
  int64_t r = int64_t(d.size());
  int64_t start = a.node.i("start", 0), end = a.node.i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(d.begin() + start, d.begin() + end);
  return {tensor(v, Shape{int64_t(v.size())}, kI64, a.device)};
}

TensorList size_op(const OpArgs& a) { return {scalar_tensor(a[0].numel(), kI64, a.device)}; }

TensorList flatten_op(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = a.node.i("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) invalid(a.node, "axis out of range");
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.size(k);
  int64_t inner = 1;
  for (int64_t k = axis; k < x.dim(); ++k) inner *= x.size(k);
  return {reshape(x, {outer, inner})};
}

TensorList transpose_op(const OpArgs& a) {
  const Tensor& x = a[0];
  std::vector<int64_t> perm = a.node.ints("perm");
  if (perm.empty()) {
    perm.resize(size_t(x.dim()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return {permute(x, to_shape(perm))};
}

TensorList squeeze_op(const OpArgs& a) {
  const Tensor& x = a[0];
  auto axes = ints_attr_or_input(a, "axes", 1, 13);
  if (!axes || axes->empty()) return {squeeze(x)};
  for (auto& ax : *axes) {
    ax = norm_axis(a.node, ax, x.dim());
    if (x.size(ax) != 1) invalid(a.node, "axis " + std::to_string(ax) + " has size " +
                                             std::to_string(x.size(ax)) + ", not 1");
  }
  return {squeeze(x, to_shape(*axes))};
}

TensorList unsqueeze_op(const OpArgs& a) {
  Tensor x = a[0];
  auto axes = ints_attr_or_input(a, "axes", 1, 13);
  if (!axes) invalid(a.node, "axes are required");
  int64_t out_rank = x.dim() + int64_t(axes->size());
  for (auto& ax : *axes) ax = norm_axis(a.node, ax, out_rank);
  std::sort(axes->begin(), axes->end());
  for (int64_t ax : *axes) x = unsqueeze(x, ax);
  return {x};
}

TensorList concat_op(const OpArgs& a) {
  TensorList xs;
  for (size_t k = 0; k < a.size(); ++k)
    if (a.has(k)) xs.push_back(a.in[k]);
  if (xs.empty()) invalid(a.node, "no inputs");
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), xs[0].dim());
  // ONNX keeps every input, empty ones included, where torch's cat skips 1-d empties.
  TensorList kept;
  for (auto& x : xs)
    if (x.numel() > 0 || x.dim() != 1) kept.push_back(x);
  if (kept.empty()) kept.push_back(xs[0]);
  return {cat(kept, axis)};
}

TensorList split_op(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  auto sizes = ints_attr_or_input(a, "split", 1, 13);
  int64_t n = int64_t(a.node.out.size());
  if (!sizes || sizes->empty()) {
    int64_t parts = a.node.has("num_outputs") ? a.node.i("num_outputs", n) : n;
    int64_t len = x.size(axis), each = (len + parts - 1) / parts;
    if (!a.node.has("num_outputs") && len % parts != 0)
      invalid(a.node, "size " + std::to_string(len) + " does not split into " +
                          std::to_string(parts) + " equal parts");
    return split(x, std::max<int64_t>(each, 1), axis);
  }
  return split(x, to_shape(*sizes), axis);
}

// Slice bounds as ONNX clamps them; a negative step runs on the flipped dim.
TensorList slice_op(const OpArgs& a) {
  Tensor x = a[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (a.node.opset < 10) {
    starts = a.node.ints("starts");
    ends = a.node.ints("ends");
    axes = a.node.ints("axes");
  } else {
    starts = host_ints(a[1]);
    ends = host_ints(a[2]);
    if (a.has(3)) axes = host_ints(a[3]);
    if (a.has(4)) steps = host_ints(a[4]);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    invalid(a.node, "starts, ends, axes and steps differ in length");
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = norm_axis(a.node, axes[k], x.dim()), dim = x.size(ax);
    int64_t st = starts[k], en = ends[k], step = steps[k];
    if (step == 0) invalid(a.node, "step 0");
    if (st < 0) st = st < -dim ? 0 : st + dim;
    if (en < 0) en = en < -dim ? -1 : en + dim;
    if (step > 0) {
      st = std::clamp<int64_t>(st, 0, dim);
      en = std::clamp<int64_t>(en, 0, dim);
      x = slice(x, ax, st, std::max(st, en), step);
    } else {
      st = std::clamp<int64_t>(st, 0, dim - 1);
      en = std::clamp<int64_t>(en, -1, dim - 1);
      Tensor f = flip(x, {ax});
      int64_t fs = dim - 1 - st, fe = dim - 1 - en;
      x = dim == 0 ? x : slice(f, ax, fs, std::max(fs, fe), -step);
    }
  }
  return {x};
}

std::vector<int64_t> broadcast_dims(const Node& n, std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  size_t off = a.size() - b.size();
  for (size_t k = 0; k < b.size(); ++k) {
    int64_t& d = a[off + k];
    if (d == b[k] || b[k] == 1) continue;
    if (d == 1) d = b[k];
    else invalid(n, "shapes do not broadcast");
  }
  return a;
}

TensorList expand_op(const OpArgs& a) {
  const Tensor& x = a[0];
  auto shape = broadcast_dims(a.node, dims_of(x), host_ints(a[1]));
  return {expand(x, to_shape(shape))};
}

TensorList tile_op(const OpArgs& a) { return {tile(a[0], to_shape(host_ints(a[1])))}; }

TensorList pad_op(const OpArgs& a) {
  const Tensor& x = a[0];
  std::string mode = a.node.s("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (a.node.opset < 11) {
    pads = a.node.ints("pads", a.node.ints("paddings"));
    value = a.node.f("value", 0.0);
  } else {
    pads = host_ints(a[1]);
    if (a.has(2) && a[2].numel() > 0) value = host_doubles(a[2])[0];
  }
  int64_t r = x.dim();
  std::vector<int64_t> axes(static_cast<size_t>(r));
  std::iota(axes.begin(), axes.end(), 0);
  if (a.has(3)) {
    axes = host_ints(a[3]);
    for (auto& ax : axes) ax = norm_axis(a.node, ax, r);
  }
  size_t n = axes.size();
  if (pads.size() != 2 * n)
    invalid(a.node, "pads has " + std::to_string(pads.size()) + " entries, expected " +
                        std::to_string(2 * n));
  std::vector<int64_t> begin(size_t(r), 0), end(size_t(r), 0);
  for (size_t k = 0; k < n; ++k) {
    begin[size_t(axes[k])] = pads[k];
    end[size_t(axes[k])] = pads[n + k];
  }
  // ember's pad: (left, right) pairs from the last dim backwards.
  Shape p;
  for (int64_t d = r - 1; d >= 0; --d) {
    p.push_back(begin[size_t(d)]);
    p.push_back(end[size_t(d)]);
  }
  if (mode == "edge") mode = "replicate";
  else if (mode == "wrap") mode = "circular";
  else if (mode != "constant" && mode != "reflect") invalid(a.node, "unknown mode '" + mode + "'");
  return {pad(x, p, mode, value)};
}

TensorList depth_to_space(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t b = a.node.i("blocksize", 0);
  if (x.dim() != 4 || b <= 0) invalid(a.node, "needs a 4-d input and a positive blocksize");
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  if (C % (b * b)) invalid(a.node, "channels not divisible by blocksize^2");
  int64_t c = C / (b * b);
  Tensor y;
  if (a.node.s("mode", "DCR") == "CRD")
    y = permute(reshape(x, {N, c, b, b, H, W}), {0, 1, 4, 2, 5, 3});
  else
    y = permute(reshape(x, {N, b, b, c, H, W}), {0, 3, 4, 1, 5, 2});
  return {reshape(y, {N, c, H * b, W * b})};
}

TensorList space_to_depth(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t b = a.node.i("blocksize", 0);
  if (x.dim() != 4 || b <= 0) invalid(a.node, "needs a 4-d input and a positive blocksize");
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  if (H % b || W % b) invalid(a.node, "spatial dims not divisible by blocksize");
  Tensor y = permute(reshape(x, {N, C, H / b, b, W / b, b}), {0, 3, 5, 1, 2, 4});
  return {reshape(y, {N, C * b * b, H / b, W / b})};
}

// --- creation ---
TensorList constant_op(const OpArgs& a) {
  const Node& n = a.node;
  if (n.has("value")) return {n.tensor("value").to(a.device)};
  if (n.has("value_float")) return {scalar_tensor(n.f("value_float", 0), kF32, a.device)};
  if (n.has("value_int")) return {scalar_tensor(n.i("value_int", 0), kI64, a.device)};
  if (n.has("value_floats")) {
    auto v = n.floats("value_floats");
    std::vector<float> f(v.begin(), v.end());
    return {tensor(f, Shape{int64_t(f.size())}, kF32, a.device)};
  }
  if (n.has("value_ints")) {
    auto v = n.ints("value_ints");
    return {tensor(v, Shape{int64_t(v.size())}, kI64, a.device)};
  }
  unsupported(n, "only tensor, float(s) and int(s) values (no strings or sparse tensors)");
}

TensorList constant_of_shape(const OpArgs& a) {
  auto shape = host_ints(a[0]);
  Tensor v = a.node.tensor("value");
  if (!v.defined()) return {zeros(to_shape(shape), {.dtype = kF32, .device = a.device})};
  return {full(to_shape(shape), v.reshape({}).item(), {.dtype = v.dtype(), .device = a.device})};
}

TensorList range_op(const OpArgs& a) {
  DType d = a[0].dtype();
  if (is_floating(d)) {
    double st = host_doubles(a[0])[0], lim = host_doubles(a[1])[0], de = host_doubles(a[2])[0];
    if (de == 0) invalid(a.node, "delta 0");
    int64_t n = std::max<int64_t>(int64_t(std::ceil((lim - st) / de)), 0);
    Tensor i = arange(n, {.dtype = d, .device = a.device});
    return {add(mul(i, scalar_tensor(de, d, a.device)), scalar_tensor(st, d, a.device))};
  }
  int64_t st = host_ints(a[0])[0], lim = host_ints(a[1])[0], de = host_ints(a[2])[0];
  if (de == 0) invalid(a.node, "delta 0");
  int64_t n = std::max<int64_t>((lim - st + de + (de > 0 ? -1 : 1)) / de, 0);
  Tensor i = arange(n, {.dtype = kI64, .device = a.device});
  return {add(mul(i, de), st).to(d)};
}

TensorList eye_like(const OpArgs& a) {
  const Tensor& x = a[0];
  if (x.dim() != 2) invalid(a.node, "needs a 2-d input");
  DType d = x.dtype();
  if (a.node.has("dtype")) {
    auto dd = dtype_of(int32_t(a.node.i("dtype", 1)));
    if (!dd) unsupported(a.node, "dtype");
    d = *dd;
  }
  int64_t k = a.node.i("k", 0);
  Tensor r = arange(x.size(0), {.dtype = kI64, .device = a.device}).unsqueeze(1);
  Tensor c = arange(x.size(1), {.dtype = kI64, .device = a.device}).unsqueeze(0);
  return {eq(add(r, k), c).to(d)};
}

// Hann, Hamming and Blackman windows: sums of cosines of 2*pi*n/N (N = size when periodic, else
// size - 1), computed in float64.
template <int kKind>
TensorList window(const OpArgs& a) {
  int64_t n = host_ints(a[0])[0];
  auto d = dtype_of(int32_t(a.node.i("output_datatype", 1)));
  if (!d) unsupported(a.node, "output_datatype");
  double den = a.node.i("periodic", 1) ? double(n) : double(n - 1);
  Tensor i = arange(n, {.dtype = kF64, .device = a.device});
  Tensor c1 = cos(mul(i, 2 * M_PI / den)), c2 = cos(mul(i, 4 * M_PI / den));
  Tensor w;
  if (kKind == 0) w = sub(0.5, mul(c1, 0.5));
  else if (kKind == 1) w = sub(25.0 / 46.0, mul(c1, 21.0 / 46.0));
  else w = add(sub(0.42, mul(c1, 0.5)), mul(c2, 0.08));
  return {w.to(*d)};
}

// ReverseSequence: along time_axis, the first len[b] steps of each batch entry reversed, as a
// gather with per-entry indices.
TensorList reverse_sequence(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t bax = a.node.i("batch_axis", 1), tax = a.node.i("time_axis", 0);
  int64_t T = x.size(tax), B = x.size(bax);
  Tensor t = arange(T, {.dtype = kI64, .device = x.device()});
  Tensor len = a[1].to(kI64);
  // idx[t, b] (time first), then laid out as x's (time, batch) axes.
  Tensor tt = t.unsqueeze(1), ll = len.reshape({1, B});
  Tensor idx = where(lt(tt, ll), sub(sub(ll, int64_t(1)), tt), tt);
  if (tax > bax) idx = idx.t();
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[size_t(tax)] = T;
  shape[size_t(bax)] = B;
  idx = idx.contiguous().reshape(to_shape(shape)).expand(x.shape()).contiguous();
  return {gather(x, tax, idx)};
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["HannWindow"] = window<0>;
  t["HammingWindow"] = window<1>;
  t["BlackmanWindow"] = window<2>;
  t["ReverseSequence"] = reverse_sequence;
  t["Reshape"] = reshape_op;
  t["Shape"] = shape_op;
  t["Size"] = size_op;
  t["Flatten"] = flatten_op;
  t["Transpose"] = transpose_op;
  t["Squeeze"] = squeeze_op;
  t["Unsqueeze"] = unsqueeze_op;
  t["Concat"] = concat_op;
  t["Split"] = split_op;
  t["Slice"] = slice_op;
  t["Expand"] = expand_op;
  t["Tile"] = tile_op;
  t["Pad"] = pad_op;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["Constant"] = constant_op;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range_op;
  t["EyeLike"] = eye_like;
}

}  // namespace ember::onnx::detail
