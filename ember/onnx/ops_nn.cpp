// Neural-network ONNX ops: MatMul, Gemm, Conv, ConvTranspose, pooling, normalisations,
// Softmax/LogSoftmax/Hardmax (opset < 13 coerces to 2-D), Dropout at inference, LRN.
// Padding ONNX allows but ember's ops do not (asymmetric begin/end, auto_pad) is applied with an
// explicit pad first.
#include <cmath>
#include <limits>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

TensorList matmul_op(const OpArgs& a) { return {matmul(a[0], a[1])}; }

TensorList gemm(const OpArgs& a) {
  Tensor A = a[0], B = a[1];
  if (a.node.i("transA", 0)) A = A.t();
  if (a.node.i("transB", 0)) B = B.t();
  double alpha = a.node.f("alpha", 1.0), beta = a.node.f("beta", 1.0);
  Tensor y = matmul(A, B);
  if (alpha != 1.0) y = mul(y, scalar_tensor(alpha, y.dtype(), y.device()));
  if (a.has(2)) {
    Tensor c = a[2];
    if (beta != 1.0) c = mul(c, scalar_tensor(beta, c.dtype(), c.device()));
    y = add(y, c);
  }
  return {y};
}

// Spatial geometry of a conv or pool: begin/end pads per spatial dim after auto_pad.
struct Geometry : PoolGeometry {
  bool symmetric() const { return begin == end; }
  // ember's pools take at most half the kernel as padding; more is padded explicitly.
  bool pool_pads_fit() const {
    if (!symmetric()) return false;
    for (size_t k = 0; k < begin.size(); ++k)
      if (2 * begin[k] > kernel[k]) return false;
    return true;
  }
};

Geometry geometry(const Node& n, const Tensor& x, std::vector<int64_t> kernel) {
  size_t s = size_t(x.dim() - 2);
  Geometry g;
  g.kernel = std::move(kernel);
  if (g.kernel.size() != s) invalid(n, "kernel_shape has the wrong length");
  g.strides = n.ints("strides", std::vector<int64_t>(s, 1));
  g.dilations = n.ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = n.ints("pads", std::vector<int64_t>(2 * s, 0));
  if (g.strides.size() != s || g.dilations.size() != s || pads.size() != 2 * s)
    invalid(n, "strides, dilations or pads have the wrong length");
  g.begin.assign(pads.begin(), pads.begin() + int64_t(s));
  g.end.assign(pads.begin() + int64_t(s), pads.end());
  std::string ap = n.s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t k = 0; k < s; ++k) {
      int64_t in = x.size(int64_t(k) + 2), out = (in + g.strides[k] - 1) / g.strides[k];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * g.strides[k] + (g.kernel[k] - 1) * g.dilations[k] + 1 - in);
      g.begin[k] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.end[k] = total - g.begin[k];
    }
  } else if (ap == "VALID") {
    std::fill(g.begin.begin(), g.begin.end(), 0);
    std::fill(g.end.begin(), g.end.end(), 0);
  }
  return g;
}

// x padded by (begin, end) on its spatial dims with `value`.
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, double value) {
  Shape p;
  for (size_t k = begin.size(); k-- > 0;) {
    p.push_back(begin[k]);
    p.push_back(end[k]);
  }
  return pad(x, p, "constant", value);
}

TensorList conv(const OpArgs& a) {
  Tensor x = a[0];
  const Tensor& w = a[1];
  std::vector<int64_t> ks(w.shape().begin() + 2, w.shape().end());
  Geometry g = geometry(a.node, x, a.node.ints("kernel_shape", ks));
  ConvOptions o{.stride = to_shape(g.strides), .padding = to_shape(g.begin),
                .dilation = to_shape(g.dilations), .groups = a.node.i("group", 1)};
  if (!g.symmetric()) {
    x = pad_spatial(x, g.begin, g.end, 0.0);
    o.padding = Shape(g.begin.size(), 0);
  }
  Tensor b = a.has(2) ? a[2] : Tensor();
  switch (x.dim()) {
    case 3: return {conv1d(x, w, b, o)};
    case 4: return {conv2d(x, w, b, o)};
    case 5: return {conv3d(x, w, b, o)};
  }
  unsupported(a.node, std::to_string(x.dim() - 2) + "-d convolution");
}

// A transposed convolution of any rank (ember's op covers 1-d and 2-d) as the convolution of the
// stride-dilated input with the flipped kernel, its in/out channels swapped within each group.
Tensor conv_transpose_by_conv(const Tensor& x, const Tensor& w, const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& dil, int64_t groups) {
  const int64_t s = x.dim() - 2;
  Tensor xu = x;
  for (int64_t k = 0; k < s; ++k) {
    int64_t st = strides[size_t(k)], n = xu.size(k + 2);
    if (st == 1) continue;
    // Interleave st - 1 zeros after each cell along dim k + 2.
    Tensor t = unsqueeze(transpose(xu, k + 2, -1), -1);
    t = pad(t, Shape{0, st - 1}, "constant", 0.0);
    std::vector<int64_t> flat = dims_of(t);
    flat.pop_back();
    flat.back() = n * st;
    t = reshape(t, to_shape(flat)).slice(-1, 0, (n - 1) * st + 1);
    xu = transpose(t, k + 2, -1);
  }
  Shape spatial, padding;
  for (int64_t k = 0; k < s; ++k) {
    spatial.push_back(k + 2);
    padding.push_back(dil[size_t(k)] * (w.size(k + 2) - 1));
  }
  // w [Cin, Cout/g, k...] -> [g * Cout/g, Cin/g, k...].
  const int64_t cin = w.size(0), cout_g = w.size(1);
  std::vector<int64_t> g_shape = {groups, cin / groups, cout_g};
  std::vector<int64_t> out_shape = {groups * cout_g, cin / groups};
  for (int64_t k = 0; k < s; ++k) {
    g_shape.push_back(w.size(k + 2));
    out_shape.push_back(w.size(k + 2));
  }
  Tensor wt =
      reshape(transpose(reshape(flip(w, spatial), to_shape(g_shape)), 1, 2), to_shape(out_shape));
  ConvOptions o{.stride = Shape(size_t(s), 1),
                .padding = padding,
                .dilation = to_shape(dil),
                .groups = groups};
  if (s == 3) return conv3d(xu, wt, {}, o);
  throw NotImplementedError("[onnx] ConvTranspose: " + std::to_string(s) +
                            "-d transposed convolution");
}

// ConvTranspose: the full transposed convolution, then cropped (pads) or extended
// (output_padding, output_shape); the bias is added last so extended cells hold it too.
TensorList conv_transpose(const OpArgs& a) {
  const Tensor& x = a[0];
  const Tensor& w = a[1];
  size_t s = size_t(x.dim() - 2);
  std::vector<int64_t> ks(w.shape().begin() + 2, w.shape().end());
  auto kernel = a.node.ints("kernel_shape", ks);
  auto strides = a.node.ints("strides", std::vector<int64_t>(s, 1));
  auto dil = a.node.ints("dilations", std::vector<int64_t>(s, 1));
  auto opad = a.node.ints("output_padding", std::vector<int64_t>(s, 0));
  auto pads = a.node.ints("pads", std::vector<int64_t>(2 * s, 0));
  int64_t groups = a.node.i("group", 1);
  if (kernel.size() != s || strides.size() != s || dil.size() != s || opad.size() != s ||
      pads.size() != 2 * s)
    invalid(a.node, "kernel_shape, strides, dilations, output_padding or pads length");
  std::vector<int64_t> full(s), begin(s), end(s);
  for (size_t k = 0; k < s; ++k)
    full[k] = (x.size(int64_t(k) + 2) - 1) * strides[k] + (kernel[k] - 1) * dil[k] + 1;
  std::string ap = a.node.s("auto_pad", "NOTSET");
  auto out_shape = a.node.ints("output_shape");
  for (size_t k = 0; k < s; ++k) {
    begin[k] = pads[k];
    end[k] = pads[s + k];
    if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - s + k]
                                        : x.size(int64_t(k) + 2) * strides[k];
      int64_t total = full[k] + opad[k] - want;
      // ONNX puts the larger half at the end for SAME_UPPER (and when output_shape is given).
      begin[k] = ap == "SAME_LOWER" ? total - total / 2 : total / 2;
      end[k] = total - begin[k];
    }
  }
  ConvTransposeOptions o{.stride = to_shape(strides), .padding = Shape(s, 0),
                         .output_padding = Shape(s, 0), .groups = groups,
                         .dilation = to_shape(dil)};
  Tensor y;
  if (s == 1) y = conv_transpose1d(x, w, {}, o);
  else if (s == 2) y = conv_transpose2d(x, w, {}, o);
  else
    y = conv_transpose_by_conv(x, w, strides, dil, groups);
  // Extend by output_padding, then crop the pads (a negative pad crops).
  std::vector<int64_t> nb(s), ne(s);
  for (size_t k = 0; k < s; ++k) {
    nb[k] = -begin[k];
    ne[k] = opad[k] - end[k];
  }
  y = pad_spatial(y, nb, ne, 0.0);
  if (a.has(2)) {
    std::vector<int64_t> bs(static_cast<size_t>(y.dim()), 1);
    bs[1] = a[2].numel();
    y = add(y, reshape(a[2], to_shape(bs)));
  }
  return {y};
}

PoolOptions pool_options(const Geometry& g, bool ceil_mode) {
  PoolOptions o;
  o.kernel_size = to_shape(g.kernel);
  o.stride = to_shape(g.strides);
  o.padding = to_shape(g.begin);
  o.dilation = to_shape(g.dilations);
  o.ceil_mode = ceil_mode;
  return o;
}

TensorList max_pool(const OpArgs& a) {
  Tensor x = a[0];
  Geometry g = geometry(a.node, x, a.node.ints("kernel_shape"));
  bool ceil_mode = a.node.i("ceil_mode", 0);
  bool want_indices = a.node.out.size() > 1 && a.node.out[1] >= 0;
  bool column_major = a.node.i("storage_order", 0) != 0;
  PoolOptions o = pool_options(g, ceil_mode);
  DType dtype = x.dtype();
  if (!is_floating(dtype)) x = x.to(kF64);
  if (x.dim() > 4) {
    if (want_indices)
      unsupported(a.node, "indices of " + std::to_string(x.dim() - 2) + "-d max pooling");
    g.ceil_mode = ceil_mode;
    return {pool_by_taps(x, g, true, false).to(dtype)};
  }
  if (column_major && want_indices && x.dim() != 4)
    unsupported(a.node, "storage_order 1 before 2-d");
  if (!g.pool_pads_fit()) {
    if (want_indices) unsupported(a.node, "indices with asymmetric pads or pads over half the kernel");
    x = pad_spatial(x, g.begin, g.end, -std::numeric_limits<double>::infinity());
    o.padding = Shape(g.begin.size(), 0);
  }
  if (x.dim() == 3) {
    if (!want_indices) return {max_pool1d(x, o).to(dtype)};
    auto [v, i] = max_pool1d_with_indices(x, o);
    return {v.to(dtype), add(i, mul(arange(x.size(0) * x.size(1), {.dtype = kI64, .device = x.device()})
                              .reshape({x.size(0), x.size(1), 1}), x.size(2)))};
  }
  if (x.dim() == 4) {
    if (!want_indices) return {max_pool2d(x, o).to(dtype)};
    // ember's indices count within each [H, W] plane; ONNX's within the whole tensor.
    auto [v, i] = max_pool2d_with_indices(x, o);
    // storage_order 1 numbers a plane's cells column by column.
    if (column_major)
      i = add(mul(remainder(i, x.size(3)), x.size(2)),
              floor_divide(i, scalar_tensor(x.size(3), kI64, i.device())));
    Tensor plane = arange(x.size(0) * x.size(1), {.dtype = kI64, .device = x.device()})
                       .reshape({x.size(0), x.size(1), 1, 1});
    return {v.to(dtype), add(i, mul(plane, x.size(2) * x.size(3)))};
  }
  unsupported(a.node, std::to_string(x.dim() - 2) + "-d max pooling");
}

TensorList avg_pool(const OpArgs& a) {
  Tensor x = a[0];
  Geometry g = geometry(a.node, x, a.node.ints("kernel_shape"));
  bool include_pad = a.node.i("count_include_pad", 0) != 0;
  if (x.dim() > 4) {
    g.ceil_mode = a.node.i("ceil_mode", 0) != 0;
    return {pool_by_taps(x, g, false, include_pad)};
  }
  PoolOptions o = pool_options(g, a.node.i("ceil_mode", 0) != 0);
  o.count_include_pad = include_pad;
  auto pool = [&](const Tensor& t) { return t.dim() == 3 ? avg_pool1d(t, o) : avg_pool2d(t, o); };
  if (g.pool_pads_fit()) return {pool(x)};
  // Asymmetric pads: pool the zero-padded input, and divide by the pooled mask of real cells
  // unless padding counts.
  Tensor xp = pad_spatial(x, g.begin, g.end, 0.0);
  o.padding = Shape(g.begin.size(), 0);
  if (include_pad) return {pool(xp)};
  Tensor mask = pad_spatial(ones_like(x.slice(1, 0, 1)), g.begin, g.end, 0.0);
  return {div(pool(xp), pool(mask))};
}

TensorList global_pool_avg(const OpArgs& a) {
  Shape dims;
  for (int64_t d = 2; d < a[0].dim(); ++d) dims.push_back(d);
  return {mean(a[0], dims, true)};
}
TensorList global_pool_max(const OpArgs& a) {
  Shape dims;
  for (int64_t d = 2; d < a[0].dim(); ++d) dims.push_back(d);
  return {amax(a[0], dims, true)};
}

// [C] -> [1, C, 1, ...] against x.
Tensor per_channel(const Tensor& v, const Tensor& x) {
  std::vector<int64_t> s(static_cast<size_t>(x.dim()), 1);
  if (x.dim() > 1) s[1] = v.numel();
  return reshape(v, to_shape(s));
}

TensorList batch_norm_op(const OpArgs& a) {
  const Tensor& x = a[0];
  double eps = a.node.f("epsilon", 1e-5);
  if (a.node.i("training_mode", 0)) {
    // Normalise with the batch's statistics; the running ones move by `momentum`.
    double momentum = a.node.f("momentum", 0.9);
    Shape dims;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != 1) dims.push_back(d);
    Tensor m = mean(x, dims), v = var(x, dims, 0.0);
    Tensor y = add(mul(mul(sub(x, per_channel(m, x)), rsqrt(add(per_channel(v, x), eps))),
                       per_channel(a[1], x)),
                   per_channel(a[2], x));
    Tensor rm = add(mul(a[3], momentum), mul(m, 1 - momentum));
    Tensor rv = add(mul(a[4], momentum), mul(v, 1 - momentum));
    return {y, rm, rv};
  }
  Tensor inv = rsqrt(add(per_channel(a[4], x), eps));
  Tensor y = add(mul(mul(sub(x, per_channel(a[3], x)), inv), per_channel(a[1], x)),
                 per_channel(a[2], x));
  return {y};
}

TensorList instance_norm(const OpArgs& a) {
  const Tensor& x = a[0];
  Shape dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  double eps = a.node.f("epsilon", 1e-5);
  Tensor m = mean(x, dims, true);
  Tensor d = sub(x, m);
  Tensor v = mean(mul(d, d), dims, true);
  return {add(mul(mul(d, rsqrt(add(v, eps))), per_channel(a[1], x)), per_channel(a[2], x))};
}

TensorList layer_norm_op(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = norm_axis(a.node, a.node.i("axis", -1), x.dim());
  double eps = a.node.f("epsilon", 1e-5);
  Shape dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  Tensor xf = x.dtype() == kF64 ? x : x.to(kF32);
  Tensor m = mean(xf, dims, true);
  Tensor d = sub(xf, m);
  Tensor inv = rsqrt(add(mean(mul(d, d), dims, true), eps));
  Tensor y = mul(mul(d, inv).to(x.dtype()), a[1]);
  if (a.has(2)) y = add(y, a[2]);
  return {y, m, inv};
}

// Before opset 13, Softmax-like ops see the input as 2-D [prod(:axis), prod(axis:)].
template <Tensor (*F)(const Tensor&, int64_t)>
TensorList softmax_like(const OpArgs& a) {
  const Tensor& x = a[0];
  if (a.node.opset >= 13) return {F(x, norm_axis(a.node, a.node.i("axis", -1), x.dim()))};
  int64_t axis = norm_axis(a.node, a.node.i("axis", 1), x.dim());
  Tensor y = F(flatten_op_2d(x, axis), 1);
  return {reshape(y, x.shape())};
}

Tensor hardmax_2d(const Tensor& x, int64_t axis) {
  Tensor i = argmax(x, axis, true);
  return scatter(zeros_like(x), axis, i, ones_like(i, {.dtype = x.dtype()}));
}

TensorList dropout(const OpArgs& a) {
  bool training = a.has(2) && host_ints(a[2].to(kI64))[0] != 0;
  if (training) {
    double ratio = a.has(1) ? host_doubles(a[1])[0] : a.node.f("ratio", 0.5);
    if (ratio != 0) unsupported(a.node, "training mode with a non-zero ratio");
  }
  return {a[0], ones_like(a[0], {.dtype = kBool})};
}

TensorList lrn(const OpArgs& a) {
  const Tensor& x = a[0];
  double alpha = a.node.f("alpha", 1e-4), beta = a.node.f("beta", 0.75), bias = a.node.f("bias", 1.0);
  int64_t size = a.node.i("size", 1), C = x.size(1);
  Tensor sq = mul(x, x);
  // Pad the channel dim: (size-1)/2 before, the rest after.
  Shape p;
  for (int64_t d = x.dim() - 1; d >= 1; --d) {
    p.push_back(d == 1 ? (size - 1) / 2 : 0);
    p.push_back(d == 1 ? size - 1 - (size - 1) / 2 : 0);
  }
  Tensor sp = pad(sq, p, "constant", 0.0);
  Tensor acc = zeros_like(x);
  for (int64_t k = 0; k < size; ++k) acc = add(acc, sp.slice(1, k, k + C));
  Tensor den = pow(add(mul(acc, alpha / double(size)), bias), Scalar(beta));
  return {div(x, den)};
}

TensorList mvn(const OpArgs& a) {
  const Tensor& x = a[0];
  auto axes = a.node.ints("axes", {0, 2, 3});
  Shape dims;
  for (int64_t ax : axes) dims.push_back(norm_axis(a.node, ax, x.dim()));
  Tensor m = mean(x, dims, true);
  Tensor d = sub(x, m);
  Tensor v = mean(mul(d, d), dims, true);
  return {div(d, add(sqrt(v), 1e-9))};
}

}  // namespace

Tensor flatten_op_2d(const Tensor& x, int64_t axis) {
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.size(k);
  return reshape(x, {outer, -1});
}

void add_nn_ops(OpTable& t) {
  t["MatMul"] = matmul_op;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = max_pool;
  t["AveragePool"] = avg_pool;
  t["GlobalAveragePool"] = global_pool_avg;
  t["GlobalMaxPool"] = global_pool_max;
  t["BatchNormalization"] = batch_norm_op;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm_op;
  t["Softmax"] = softmax_like<&softmax>;
  t["LogSoftmax"] = softmax_like<&log_softmax>;
  t["Hardmax"] = softmax_like<&hardmax_2d>;
  t["Dropout"] = dropout;
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = mvn;
}

}  // namespace ember::onnx::detail
