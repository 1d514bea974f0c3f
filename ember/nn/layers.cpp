// Linear, convolution, pooling, Flatten, Dropout and Embedding modules.
#include "ember/nn/layers.h"

#include <cmath>
#include <sstream>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"

namespace ember::nn {

namespace F = ember::nn::functional;

namespace {
// The value of one spatial option as PyTorch prints it: expanded to `dims` as a tuple.
std::string tuple_str(const Shape& v, size_t dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims; ++i) {
    s += std::to_string(v.size() == 1 ? v[0] : v[i]);
    s += (i + 1 < dims) ? ", " : (dims == 1 ? ",)" : ")");
  }
  return s;
}
// As given: "2" for one value, "(2, 3)" for several.
std::string as_given(const Shape& v) {
  return v.size() == 1 ? std::to_string(v[0]) : tuple_str(v, v.size());
}
bool all_equal(const Shape& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}
const char* py_bool(bool b) { return b ? "True" : "False"; }
std::string py_double(double d) {
  std::ostringstream os;
  os << d;
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // Python prints floats as 1.0
  return s;
}
TensorOptions topts(const ParamOptions& p) { return {p.dtype, p.device}; }
}  // namespace

// --- Linear ---

Linear::Linear(const LinearOptions& o) : options(o) {
  if (o.in < 0 || o.out < 0)
    detail::throw_value("Linear", "expected non-negative in and out, found " +
                                      std::to_string(o.in) + " and " + std::to_string(o.out));
  weight = empty({o.out, o.in}, topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) init::uniform_(bias, -init::fan_in_bound(weight), init::fan_in_bound(weight));
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options.in) +
         ", out_features=" + std::to_string(options.out) + ", bias=" + py_bool(options.bias);
}

std::shared_ptr<Module> Linear::clone() const {
  auto c = std::make_shared<Linear>(options);
  c->copy_state_from(*this);
  return c;
}

// --- ConvNd ---

template <int Dims>
ConvNd<Dims>::ConvNd(const ConvOptions& o) : options(o) {
  std::string name = type_name();
  if (o.groups < 1 || o.in % o.groups != 0 || o.out % o.groups != 0)
    detail::throw_value(name.c_str(), "expected in and out divisible by groups, found in=" +
                                          std::to_string(o.in) + ", out=" + std::to_string(o.out) +
                                          ", groups=" + std::to_string(o.groups));
  const Shape& k = o.kernel.v;
  if (k.size() != 1 && k.size() != size_t(Dims))
    detail::throw_value(name.c_str(), "expected 1 or " + std::to_string(Dims) +
                                          " kernel sizes, found " + std::to_string(k.size()));
  Shape wshape{o.out, o.in / o.groups};
  for (int i = 0; i < Dims; ++i) wshape.push_back(k.size() == 1 ? k[0] : k[i]);
  weight = empty(wshape, topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

template <int Dims>
void ConvNd<Dims>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) init::uniform_(bias, -init::fan_in_bound(weight), init::fan_in_bound(weight));
}

template <int Dims>
Tensor ConvNd<Dims>::forward(const Tensor& x) {
  F::ConvOptions c{.stride = options.stride.v,
                   .padding = options.padding.v,
                   .dilation = options.dilation.v,
                   .groups = options.groups};
  if constexpr (Dims == 1)
    return F::conv1d(x, weight, bias, c);
  else
    return F::conv2d(x, weight, bias, c);
}

template <int Dims>
std::string ConvNd<Dims>::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in) + ", " + std::to_string(o.out) +
                  ", kernel_size=" + tuple_str(o.kernel.v, Dims) +
                  ", stride=" + tuple_str(o.stride.v, Dims);
  if (!all_equal(o.padding.v, 0)) s += ", padding=" + tuple_str(o.padding.v, Dims);
  if (!all_equal(o.dilation.v, 1)) s += ", dilation=" + tuple_str(o.dilation.v, Dims);
  if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
  if (!o.bias) s += ", bias=False";
  return s;
}

template <int Dims>
std::shared_ptr<Module> ConvNd<Dims>::clone() const {
  auto c = std::make_shared<ConvNd<Dims>>(options);
  c->copy_state_from(*this);
  return c;
}

template class ConvNd<1>;
template class ConvNd<2>;

// --- pooling ---

namespace {
F::PoolOptions pool_opts(const PoolOptions& o) {
  return {.kernel_size = o.kernel.v,
          .stride = o.stride ? o.stride->v : o.kernel.v,
          .padding = o.padding.v,
          .dilation = o.dilation.v,
          .ceil_mode = o.ceil_mode,
          .count_include_pad = o.count_include_pad};
}
}  // namespace

Tensor MaxPool2d::forward(const Tensor& x) { return F::max_pool2d(x, pool_opts(options)); }
std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + as_given(options.kernel.v) +
         ", stride=" + as_given(options.stride ? options.stride->v : options.kernel.v) +
         ", padding=" + as_given(options.padding.v) + ", dilation=" + as_given(options.dilation.v) +
         ", ceil_mode=" + py_bool(options.ceil_mode);
}
std::shared_ptr<Module> MaxPool2d::clone() const { return std::make_shared<MaxPool2d>(options); }

Tensor AvgPool2d::forward(const Tensor& x) { return F::avg_pool2d(x, pool_opts(options)); }
std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + as_given(options.kernel.v) +
         ", stride=" + as_given(options.stride ? options.stride->v : options.kernel.v) +
         ", padding=" + as_given(options.padding.v);
}
std::shared_ptr<Module> AvgPool2d::clone() const { return std::make_shared<AvgPool2d>(options); }

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return F::adaptive_avg_pool2d(
      x, output_size.size() == 1 ? Shape{output_size[0], output_size[0]} : output_size);
}
std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + as_given(output_size); }
std::shared_ptr<Module> AdaptiveAvgPool2d::clone() const {
  return std::make_shared<AdaptiveAvgPool2d>(output_size);
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
    detail::throw_value("Dropout", "expected p in [0, 1], found " + py_double(p));
}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training()); }
std::string Dropout::extra_repr() const { return "p=" + py_double(p) + ", inplace=False"; }
std::shared_ptr<Module> Dropout::clone() const {
  auto c = std::make_shared<Dropout>(p);
  c->train(is_training());
  return c;
}

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
  weight = empty({o.num, o.dim}, topts(o.param));
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
  return F::embedding(indices, weight, options.padding_idx);
}
std::string Embedding::extra_repr() const {
  std::string s = std::to_string(options.num) + ", " + std::to_string(options.dim);
  if (options.padding_idx) s += ", padding_idx=" + std::to_string(*options.padding_idx);
  return s;
}
std::shared_ptr<Module> Embedding::clone() const {
  auto c = std::make_shared<Embedding>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn
