// Convolution modules over nn::functional's conv and conv_transpose.
#include "ember/nn/conv.h"

#include <cmath>

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/repr.h"
#include "ember/ops/creation.h"

namespace ember::nn {

namespace F = ember::nn::functional;
using fmt::all_equal;
using fmt::topts;
using fmt::tuple_str;

namespace {
// Checks groups and kernel sizes; returns the kernel expanded to `dims` values.
Shape checked_kernel(const std::string& name, int64_t in, int64_t out, int64_t groups,
                     const Shape& k, int dims) {
  if (groups < 1 || in % groups != 0 || out % groups != 0)
    ember::detail::throw_value(
        name.c_str(), "expected in and out divisible by groups, found in=" + std::to_string(in) +
                          ", out=" + std::to_string(out) + ", groups=" + std::to_string(groups));
  if (k.size() != 1 && k.size() != size_t(dims))
    ember::detail::throw_value(name.c_str(), "expected 1 or " + std::to_string(dims) +
                                                 " kernel sizes, found " +
                                                 std::to_string(k.size()));
  Shape out_k;
  for (int i = 0; i < dims; ++i) out_k.push_back(k.size() == 1 ? k[0] : k[i]);
  for (int64_t v : out_k)
    if (v <= 0)  // torch builds the module and fails at forward; ember refuses at once
      ember::detail::throw_value(name.c_str(), "expected kernel sizes > 0, found " +
                                                   shape_str(out_k));
  return out_k;
}
// PyTorch's reset_parameters for every conv: kaiming_uniform(a=sqrt(5)), bias from fan_in.
void reset_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) init::uniform_(bias, -init::fan_in_bound(weight), init::fan_in_bound(weight));
}
template <class O>
std::string conv_repr(const O& o, int dims, const Shape* output_padding) {
  std::string s = std::to_string(o.in) + ", " + std::to_string(o.out) +
                  ", kernel_size=" + tuple_str(o.kernel.v, dims) +
                  ", stride=" + tuple_str(o.stride.v, dims);
  if (!all_equal(o.padding.v, 0)) s += ", padding=" + tuple_str(o.padding.v, dims);
  if (!all_equal(o.dilation.v, 1)) s += ", dilation=" + tuple_str(o.dilation.v, dims);
  if (output_padding && !all_equal(*output_padding, 0))
    s += ", output_padding=" + tuple_str(*output_padding, dims);
  if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
  if (!o.bias) s += ", bias=False";
  return s;
}
}  // namespace

template <int Dims>
ConvNd<Dims>::ConvNd(const ConvOptions& o) : options(o) {
  Shape wshape{o.out, o.in / std::max<int64_t>(o.groups, 1)};
  for (int64_t k : checked_kernel(type_name(), o.in, o.out, o.groups, o.kernel.v, Dims))
    wshape.push_back(k);
  weight = empty(fmt::param_shape(type_name(), wshape), topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

template <int Dims>
void ConvNd<Dims>::reset_parameters() {
  reset_conv(weight, bias);
}

template <int Dims>
Tensor ConvNd<Dims>::forward(const Tensor& x) {
  F::ConvOptions c{.stride = options.stride.v,
                   .padding = options.padding.v,
                   .dilation = options.dilation.v,
                   .groups = options.groups};
  if constexpr (Dims == 1) return F::conv1d(x, weight, bias, c);
  if constexpr (Dims == 2) return F::conv2d(x, weight, bias, c);
  if constexpr (Dims == 3) return F::conv3d(x, weight, bias, c);
}

template <int Dims>
std::string ConvNd<Dims>::extra_repr() const {
  return conv_repr(options, Dims, nullptr);
}

template <int Dims>
std::shared_ptr<Module> ConvNd<Dims>::clone() const {
  auto c = std::make_shared<ConvNd<Dims>>(options);
  c->copy_state_from(*this);
  return c;
}

template class ConvNd<1>;
template class ConvNd<2>;
template class ConvNd<3>;

template <int Dims>
ConvTransposeNd<Dims>::ConvTransposeNd(const ConvTransposeOptions& o) : options(o) {
  Shape wshape{o.in, o.out / std::max<int64_t>(o.groups, 1)};
  for (int64_t k : checked_kernel(type_name(), o.in, o.out, o.groups, o.kernel.v, Dims))
    wshape.push_back(k);
  weight = empty(fmt::param_shape(type_name(), wshape), topts(o.param));
  if (o.bias) bias = empty({o.out}, topts(o.param));
  reset_parameters();
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

template <int Dims>
void ConvTransposeNd<Dims>::reset_parameters() {
  reset_conv(weight, bias);  // fan_in from weight dim 1, as PyTorch computes it
}

template <int Dims>
Tensor ConvTransposeNd<Dims>::forward(const Tensor& x) {
  F::ConvTransposeOptions c{.stride = options.stride.v,
                            .padding = options.padding.v,
                            .output_padding = options.output_padding.v,
                            .groups = options.groups,
                            .dilation = options.dilation.v};
  if constexpr (Dims == 1) return F::conv_transpose1d(x, weight, bias, c);
  if constexpr (Dims == 2) return F::conv_transpose2d(x, weight, bias, c);
}

template <int Dims>
std::string ConvTransposeNd<Dims>::extra_repr() const {
  return conv_repr(options, Dims, &options.output_padding.v);
}

template <int Dims>
std::shared_ptr<Module> ConvTransposeNd<Dims>::clone() const {
  auto c = std::make_shared<ConvTransposeNd<Dims>>(options);
  c->copy_state_from(*this);
  return c;
}

template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;

}  // namespace ember::nn
