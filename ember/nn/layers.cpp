// Linear, convolution, pooling, Flatten, Dropout and Embedding modules.
#include "ember/nn/layers.h"

#include <cmath>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/nn/init.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/ops/unary.h"

namespace ember::nn {

namespace F = ember::nn::functional;

using fmt::as_given;
using fmt::py_bool;
using fmt::py_float;
using fmt::topts;

namespace {

// Weight-only quantization of a layer's [rows, cols] weight into w8 (bits 8) or w4 (bits 4);
// nothing changes when it throws.
void quantize_weight(const char* layer, const Tensor& weight, int bits, int64_t group_size,
                     QuantizedInt8& w8, QuantizedInt4& w4) {
  if (w8.values.defined() || w4.values.defined())
    detail::throw_value(layer, "the weight is already quantized");
  if (bits == 8)
    w8 = quantize_int8(weight);
  else if (bits == 4)
    w4 = quantize_int4(weight, group_size);
  else
    detail::throw_value(layer, "expected bits 8 or 4, found " + std::to_string(bits));
}

// The state_dict keys of a quantized weight (Linear::quantize_ documents them).
template <class Register>
void register_quantized(QuantizedInt8& w8, QuantizedInt4& w4, const Register& reg) {
  if (w8.values.defined()) {
    reg("weight_int8", w8.values);
    reg("weight_scale", w8.scale);
  } else {
    reg("weight_int4", w4.values);
    reg("weight_scale", w4.scale);
    reg("weight_zero", w4.zero);
  }
}

int bits_of(const QuantizedInt8& w8, const QuantizedInt4& w4) {
  return w8.values.defined() ? 8 : w4.values.defined() ? 4 : 0;
}

std::string quantized_repr(const QuantizedInt8& w8, const QuantizedInt4& w4) {
  if (w8.values.defined()) return ", weight=int8";
  if (w4.values.defined()) return ", weight=int4(group_size=" + std::to_string(w4.group_size) + ")";
  return "";
}

}  // namespace

// --- Linear ---

Linear::Linear(const LinearOptions& o) : options(o) {
  if (o.in < 0 || o.out < 0)
    detail::throw_value("Linear", "expected non-negative in and out, found " +
                                      std::to_string(o.in) + " and " + std::to_string(o.out));
  weight = empty(fmt::param_shape("Linear", {o.out, o.in}), topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) init::uniform_(bias, -init::fan_in_bound(weight), init::fan_in_bound(weight));
}

Tensor Linear::forward(const Tensor& x) {
  if (weight_int8.values.defined()) return linear(x, weight_int8, bias);
  if (weight_int4.values.defined()) return linear(x, weight_int4, bias);
  return linear(x, weight, bias);
}

void Linear::quantize_(int bits, int64_t group_size) {
  quantize_weight("Linear", weight, bits, group_size, weight_int8, weight_int4);
  unregister("weight");
  weight = Tensor();
  register_quantized(weight_int8, weight_int4,
                     [this](const char* key, Tensor& t) { register_buffer(key, t); });
}

int Linear::quantized_bits() const { return bits_of(weight_int8, weight_int4); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options.in) +
         ", out_features=" + std::to_string(options.out) + ", bias=" + py_bool(options.bias) +
         quantized_repr(weight_int8, weight_int4);
}

std::shared_ptr<Module> Linear::clone() const {
  auto c = std::make_shared<Linear>(options);
  if (const int bits = quantized_bits()) c->quantize_(bits, weight_int4.group_size);
  c->copy_state_from(*this);
  return c;
}

// --- Bilinear ---

namespace {
Shape leading(const Tensor& x) {
  return Shape(std::span<const int64_t>(x.shape().data(), size_t(x.dim() - 1)));
}
}  // namespace

Bilinear::Bilinear(const BilinearOptions& o) : options(o) {
  if (o.in1 < 0 || o.in2 < 0 || o.out < 0)
    ember::detail::throw_value("Bilinear", "expected non-negative sizes");
  weight = empty(fmt::param_shape("Bilinear", {o.out, o.in1, o.in2}), topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

void Bilinear::reset_parameters() {
  // PyTorch's bound: 1/sqrt(in1) for weight and bias alike.
  double b = options.in1 > 0 ? 1.0 / std::sqrt(double(options.in1)) : 0.0;
  init::uniform_(weight, -b, b);
  if (bias.defined()) init::uniform_(bias, -b, b);
}

Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) {
  if (x1.dim() < 1 || x2.dim() < 1 || x1.shape()[x1.dim() - 1] != options.in1 ||
      x2.shape()[x2.dim() - 1] != options.in2 || leading(x1) != leading(x2))
    ember::detail::throw_shape(
        "Bilinear", "expected inputs [..., " + std::to_string(options.in1) + "] and [..., " +
                        std::to_string(options.in2) + "] with equal leading dims, found " +
                        shape_str(x1.shape()) + " and " + shape_str(x2.shape()));
  Shape lead = leading(x1);
  Tensor a = x1.reshape({-1, options.in1}), b = x2.reshape({-1, options.in2});
  Tensor y = einsum("bi,oij,bj->bo", {a, weight, b});
  if (bias.defined()) y = y + bias;
  lead.push_back(options.out);
  return y.reshape(lead);
}

std::string Bilinear::extra_repr() const {
  return "in1_features=" + std::to_string(options.in1) +
         ", in2_features=" + std::to_string(options.in2) +
         ", out_features=" + std::to_string(options.out) + ", bias=" + py_bool(options.bias);
}

std::shared_ptr<Module> Bilinear::clone() const {
  auto c = std::make_shared<Bilinear>(options);
  c->copy_state_from(*this);
  return c;
}

// --- Identity, Flatten, Dropout ---

std::shared_ptr<Module> Identity::clone() const { return std::make_shared<Identity>(); }

Tensor Flatten::forward(const Tensor& x) { return x.flatten(options.start_dim, options.end_dim); }
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(options.start_dim) +
         ", end_dim=" + std::to_string(options.end_dim);
}
std::shared_ptr<Module> Flatten::clone() const { return std::make_shared<Flatten>(options); }

Dropout::Dropout(double p) : p(p) {
  if (!(p >= 0 && p <= 1))
    detail::throw_value("Dropout", "expected p in [0, 1], found " + py_float(p));
}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training()); }
std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }
std::shared_ptr<Module> Dropout::clone() const {
  auto c = std::make_shared<Dropout>(p);
  c->train(is_training());
  return c;
}

template <int Dims> FeatureDropout<Dims>::FeatureDropout(double p) : p(p) {
  if (!(p >= 0 && p <= 1))
    detail::throw_value(type_name().c_str(), "expected p in [0, 1], found " + py_float(p));
}
template <int Dims> Tensor FeatureDropout<Dims>::forward(const Tensor& x) {
  return Dims == 2 ? F::dropout2d(x, p, is_training()) : F::dropout3d(x, p, is_training());
}
template <int Dims> std::string FeatureDropout<Dims>::extra_repr() const {
  return "p=" + py_float(p) + ", inplace=False";
}
template <int Dims> std::shared_ptr<Module> FeatureDropout<Dims>::clone() const {
  auto c = std::make_shared<FeatureDropout>(p);
  c->train(is_training());
  return c;
}
template class FeatureDropout<2>;
template class FeatureDropout<3>;

// --- Embedding ---

namespace {
EmbeddingOptions normalized(EmbeddingOptions o) {
  if (o.padding_idx && *o.padding_idx < 0) *o.padding_idx += o.num;  // as PyTorch stores it
  return o;
}
}  // namespace

Embedding::Embedding(const EmbeddingOptions& o) : options(normalized(o)) {
  if (o.num < 0 || o.dim < 0)
    detail::throw_value("Embedding", "expected non-negative num and dim, found " +
                                         std::to_string(o.num) + " and " + std::to_string(o.dim));
  if (o.padding_idx && (*o.padding_idx >= o.num || *o.padding_idx < -o.num))
    detail::throw_value("Embedding", "expected padding_idx in [" + std::to_string(-o.num) + ", " +
                                         std::to_string(o.num) + "), found " +
                                         std::to_string(*o.padding_idx));
  weight = empty(fmt::param_shape("Embedding", {o.num, o.dim}), topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
}

void Embedding::reset_parameters() {
  init::normal_(weight, 0.0, 1.0);
  if (options.padding_idx) {
    NoGradGuard ng;
    weight.select(0, *options.padding_idx).zero_();
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  if (!quantized_bits()) return F::embedding(indices, weight, options.padding_idx);
  // Only the rows looked up are dequantized.
  Shape shape = indices.shape();
  shape.push_back(options.dim);
  const Tensor idx = indices.reshape({indices.numel()});
  Tensor rows;
  if (weight_int8.values.defined()) {
    rows = dequantize(QuantizedInt8{index_select(weight_int8.values, 0, idx),
                                    index_select(weight_int8.scale, 0, idx)});
  } else {
    const QuantizedInt4& w = weight_int4;
    rows = dequantize(QuantizedInt4{index_select(w.values, 0, idx), index_select(w.scale, 0, idx),
                                    index_select(w.zero, 0, idx), w.group_size});
  }
  return rows.reshape(shape);
}

Tensor Embedding::attend(const Tensor& h) {
  if (weight_int8.values.defined()) return linear(h, weight_int8);
  if (weight_int4.values.defined()) return linear(h, weight_int4);
  return matmul(h, weight.t());
}

void Embedding::quantize_(int bits, int64_t group_size) {
  quantize_weight("Embedding", weight, bits, group_size, weight_int8, weight_int4);
  unregister("weight");
  weight = Tensor();
  register_quantized(weight_int8, weight_int4,
                     [this](const char* key, Tensor& t) { register_buffer(key, t); });
}

int Embedding::quantized_bits() const { return bits_of(weight_int8, weight_int4); }

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(options.num) + ", " + std::to_string(options.dim);
  if (options.padding_idx) s += ", padding_idx=" + std::to_string(*options.padding_idx);
  return s + quantized_repr(weight_int8, weight_int4);
}
std::shared_ptr<Module> Embedding::clone() const {
  auto c = std::make_shared<Embedding>(options);
  if (const int bits = quantized_bits()) c->quantize_(bits, weight_int4.group_size);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn
