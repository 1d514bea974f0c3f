// ember ops as ONNX nodes: convolution, pooling and normalisation.
#include "ember/ember.h"
#include "ember/onnx/export_ops.h"
#include "ember/ops/modes.h"

namespace ember::onnx::detail {

namespace {

// --- convolution and pooling ---

std::vector<int64_t> spread(const IntVec& v, size_t n, int64_t fill) {
  std::vector<int64_t> out(n, fill);
  for (size_t k = 0; k < n && !v.empty(); ++k) out[k] = v.size() == 1 ? v[0] : v[v.size() - n + k];
  return out;
}

bool batched(Emitter& e, size_t nsp) {
  if (e.input(0).dim() == int64_t(nsp) + 2) return true;
  e.unsupported("an unbatched input");
  return false;
}

bool conv(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const Tensor &x = e.input(0), &w = e.input(1), &y = e.output();
  const size_t nsp = size_t(w.dim() - 2);
  if (!batched(e, nsp)) return false;
  const auto stride = spread(a.ints2, nsp, 1), dil = spread(a.ints4, nsp, 1);
  const auto pad = spread(a.ints3, nsp, 0);
  std::vector<int64_t> pads(2 * nsp, 0), kernel;
  for (size_t k = 0; k < nsp; ++k) {
    kernel.push_back(w.size(int64_t(k) + 2));
    switch (ops::ConvPadding(a.mode)) {
      case ops::ConvPadding::Explicit:
        pads[k] = pads[k + nsp] = pad[k];
        break;
      case ops::ConvPadding::Valid:
        break;
      case ops::ConvPadding::Same: {  // torch puts the odd cell at the end
        int64_t in = x.size(int64_t(k) + 2), out = y.size(int64_t(k) + 2);
        int64_t total =
            std::max<int64_t>(0, (out - 1) * stride[k] + (kernel[k] - 1) * dil[k] + 1 - in);
        pads[k] = total / 2;
        pads[k + nsp] = total - total / 2;
        break;
      }
    }
  }
  const DType d = y.dtype();
  std::vector<std::string> ins{e.in_as(0, d), e.in_as(1, d)};
  if (e.has(2)) ins.push_back(e.in_as(2, d));
  e.out(0, e.node1("Conv", ins));
  e.attr("kernel_shape", kernel);
  e.attr("strides", stride);
  e.attr("pads", pads);
  e.attr("dilations", dil);
  e.attr("group", std::max<int64_t>(1, a.i[0]));
  return true;
}

bool conv_transpose(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const Tensor& w = e.input(1);
  const size_t nsp = size_t(w.dim() - 2);
  if (!batched(e, nsp)) return false;
  const auto pad = spread(a.ints3, nsp, 0);
  std::vector<int64_t> pads(2 * nsp), kernel;
  for (size_t k = 0; k < nsp; ++k) {
    kernel.push_back(w.size(int64_t(k) + 2));
    pads[k] = pads[k + nsp] = pad[k];
  }
  const DType d = e.output().dtype();
  std::vector<std::string> ins{e.in_as(0, d), e.in_as(1, d)};
  if (e.has(2)) ins.push_back(e.in_as(2, d));
  e.out(0, e.node1("ConvTranspose", ins));
  e.attr("kernel_shape", kernel);
  e.attr("strides", spread(a.ints2, nsp, 1));
  e.attr("pads", pads);
  e.attr("dilations", spread(a.ints4, nsp, 1));
  e.attr("output_padding", spread(a.ints, nsp, 0));
  e.attr("group", std::max<int64_t>(1, a.i[0]));
  return true;
}

bool pool(Emitter& e, bool is_max, size_t nsp) {
  if (!batched(e, nsp)) return false;
  const Attrs& a = e.op().attrs;
  const auto kernel = spread(a.ints, nsp, 1);
  const auto stride = a.ints2.empty() ? kernel : spread(a.ints2, nsp, 1);
  const auto pad = spread(a.ints3, nsp, 0);
  std::vector<int64_t> pads(2 * nsp);
  for (size_t k = 0; k < nsp; ++k) pads[k] = pads[k + nsp] = pad[k];
  e.out(0, e.node1(is_max ? "MaxPool" : "AveragePool", {e.in(0)}));
  e.attr("kernel_shape", kernel);
  e.attr("strides", stride);
  e.attr("pads", pads);
  e.attr("ceil_mode", int64_t(a.b[0]));
  if (is_max)
    e.attr("dilations", spread(a.ints4, nsp, 1));
  else
    e.attr("count_include_pad", int64_t(a.b[1]));
  return true;  // max_pool's indices (b[1]) stay unbound: ONNX's are numbered differently
}

bool adaptive_pool(Emitter& e, bool is_max, size_t nsp) {
  if (!batched(e, nsp)) return false;
  const Tensor &x = e.input(0), &y = e.output();
  bool global = true, even = true;
  std::vector<int64_t> kernel;
  for (size_t k = 0; k < nsp; ++k) {
    int64_t in = x.size(int64_t(k) + 2), out = y.size(int64_t(k) + 2);
    global = global && out == 1;
    even = even && in % out == 0;
    kernel.push_back(out ? in / out : 1);
  }
  if (global) {
    e.out(0, e.node1(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {e.in(0)}));
    return true;
  }
  if (!even) {
    e.unsupported("an input size that is not a multiple of the output size");
    return false;
  }
  e.out(0, e.node1(is_max ? "MaxPool" : "AveragePool", {e.in(0)}));
  e.attr("kernel_shape", kernel);
  e.attr("strides", kernel);
  return true;
}

// torch's interpolate as Resize: nearest is "asymmetric" + floor, linear and cubic sample at
// pixel centres as torch does ("pytorch_half_pixel") or at the corners; cubic uses torch's
// A = -0.75. With scale factors the output size and the coordinates follow them, as in torch.
bool interpolate(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const Tensor &x = e.input(0), &y = e.output();
  const auto mode = ops::InterpMode(a.mode);
  const bool nearest = mode == ops::InterpMode::Nearest;
  std::string scales = "", sizes = "";
  if (a.b[0]) {
    const int64_t nsp = x.dim() - 2;
    std::vector<float> f{1.f, 1.f};
    for (int64_t k = 0; k < nsp; ++k) f.push_back(float(a.f[size_t(a.i[0] == 1 ? 0 : k)]));
    scales = e.constant(tensor(f, {int64_t(f.size())}, kF32, Device::flex()));
  } else {
    sizes = e.sizes(vec(y.shape()), vec(e.twin().outputs[0].shape()), false, "output size");
  }
  e.out(0, e.node1("Resize", {e.in(0), "", scales, sizes}));
  e.attr("mode", std::string(nearest                            ? "nearest"
                             : mode == ops::InterpMode::Bicubic ? "cubic"
                                                                : "linear"));
  e.attr("coordinate_transformation_mode", std::string(nearest  ? "asymmetric"
                                                       : a.b[1] ? "align_corners"
                                                                : "pytorch_half_pixel"));
  if (nearest) e.attr("nearest_mode", std::string("floor"));
  if (mode == ops::InterpMode::Bicubic) e.attr_f("cubic_coeff_a", -0.75);
  return true;
}

// --- normalisation ---

bool softmax(Emitter& e, const char* type) {
  const DType d = e.output().dtype();
  e.out(0, e.node1(type, {e.in_as(0, d)}));
  e.attr("axis", norm_dim(e.op().attrs.i[0], e.input(0).dim()));
  return true;
}

bool layer_norm(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const DType d = e.output().dtype();
  std::string scale = e.has(1)
                          ? e.in_as(1, d)
                          : e.constant(ones(Shape(a.ints), {.dtype = d, .device = Device::flex()}));
  std::vector<std::string> ins{e.in_as(0, d), scale};
  if (e.has(2)) ins.push_back(e.in_as(2, d));
  e.out(0, e.node1("LayerNormalization", ins));
  e.attr("axis", -int64_t(a.ints.size()));
  e.attr_f("epsilon", a.f[0]);
  return true;
}

bool batch_norm(Emitter& e) {
  const DType d = e.output().dtype();
  const int64_t c = e.input(0).size(1);
  auto param = [&](size_t i, double v) {
    return e.has(i) ? e.in_as(i, d)
                    : e.constant(full({c}, v, {.dtype = d, .device = Device::flex()}));
  };
  e.out(0, e.node1("BatchNormalization",
                   {e.in_as(0, d), param(3, 1), param(4, 0), e.in_as(1, d), e.in_as(2, d)}));
  e.attr_f("epsilon", e.op().attrs.f[0]);
  return true;
}

}  // namespace

void add_emit_nn(EmitTable& t) {
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d}) t[size_t(op)] = conv;
  t[size_t(OpId::conv_transpose1d)] = conv_transpose;
  t[size_t(OpId::conv_transpose2d)] = conv_transpose;
  t[size_t(OpId::max_pool1d)] = [](Emitter& e) { return pool(e, true, 1); };
  t[size_t(OpId::max_pool2d)] = [](Emitter& e) { return pool(e, true, 2); };
  t[size_t(OpId::avg_pool1d)] = [](Emitter& e) { return pool(e, false, 1); };
  t[size_t(OpId::avg_pool2d)] = [](Emitter& e) { return pool(e, false, 2); };
  t[size_t(OpId::adaptive_avg_pool1d)] = [](Emitter& e) { return adaptive_pool(e, false, 1); };
  t[size_t(OpId::adaptive_avg_pool2d)] = [](Emitter& e) { return adaptive_pool(e, false, 2); };
  t[size_t(OpId::adaptive_max_pool2d)] = [](Emitter& e) { return adaptive_pool(e, true, 2); };

  t[size_t(OpId::interpolate)] = interpolate;
  t[size_t(OpId::softmax)] = [](Emitter& e) { return softmax(e, "Softmax"); };
  t[size_t(OpId::log_softmax)] = [](Emitter& e) { return softmax(e, "LogSoftmax"); };
  t[size_t(OpId::layer_norm)] = layer_norm;
  t[size_t(OpId::batch_norm)] = batch_norm;
}

}  // namespace ember::onnx::detail
