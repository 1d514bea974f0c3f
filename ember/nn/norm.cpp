// Normalisation modules over nn::functional's batch_norm, layer_norm, group_norm and rms_norm.
#include "ember/nn/norm.h"

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/nn/repr.h"
#include "ember/ops/creation.h"

namespace ember::nn {

namespace F = ember::nn::functional;

using fmt::py_bool;
using fmt::topts;

namespace {
std::string num(double d) { return fmt::py_float(d); }
std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i)
    out += std::to_string(s[i]) + (i + 1 < s.size() ? ", " : "");
  return out + (s.size() == 1 ? ",)" : ")");
}
template <class M>
std::shared_ptr<Module> clone_of(const M& m) {
  auto c = std::make_shared<M>(m.options);
  c->copy_state_from(m);
  return c;
}
}  // namespace

// --- BatchNorm ---

template <int Dims>
BatchNormNd<Dims>::BatchNormNd(const BatchNormOptions& o) : options(o) {
  if (o.features <= 0)
    detail::throw_value(type_name().c_str(),
                        "expected features > 0, found " + std::to_string(o.features));
  if (o.affine) {
    weight = ones({o.features}, topts(o.param));
    bias = zeros({o.features}, topts(o.param));
  }
  if (o.track_running_stats) {
    running_mean = zeros({o.features}, topts(o.param));
    running_var = ones({o.features}, topts(o.param));
    num_batches_tracked = zeros({}, {kI64, o.param.device});
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

template <int Dims>
Tensor BatchNormNd<Dims>::forward(const Tensor& x) {
  bool ok = Dims == 1 ? (x.dim() == 2 || x.dim() == 3) : x.dim() == 4;
  if (!ok)
    detail::throw_shape(type_name().c_str(), std::string("expected ") +
                                                 (Dims == 1 ? "2D or 3D" : "4D") +
                                                 " input, found " + std::to_string(x.dim()) + "D");
  double factor = options.momentum.value_or(0.0);
  if (is_training() && options.track_running_stats) {
    {
      NoGradGuard ng;
      num_batches_tracked.add_(1);
    }
    if (!options.momentum) factor = 1.0 / double(num_batches_tracked.item<int64_t>());
  }
  // Batch statistics when training, or when there are no running statistics to use.
  bool use_batch = is_training() || !running_mean.defined();
  bool update = !is_training() || options.track_running_stats;
  return F::batch_norm(x, update ? running_mean : Tensor(), update ? running_var : Tensor(), weight,
                       bias, use_batch, factor, options.eps);
}

template <int Dims>
std::string BatchNormNd<Dims>::extra_repr() const {
  return std::to_string(options.features) + ", eps=" + num(options.eps) +
         ", momentum=" + (options.momentum ? num(*options.momentum) : "None") +
         ", affine=" + py_bool(options.affine) +
         ", track_running_stats=" + py_bool(options.track_running_stats);
}

template <int Dims>
std::shared_ptr<Module> BatchNormNd<Dims>::clone() const {
  return clone_of(*this);
}

template class BatchNormNd<1>;
template class BatchNormNd<2>;

// --- LayerNorm ---

LayerNorm::LayerNorm(const LayerNormOptions& o) : options(o) {
  if (o.elementwise_affine) {
    weight = ones(o.shape, topts(o.param));
    if (o.bias) bias = zeros(o.shape, topts(o.param));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}
Tensor LayerNorm::forward(const Tensor& x) {
  return F::layer_norm(x, options.shape, weight, bias, options.eps);
}
std::string LayerNorm::extra_repr() const {
  return shape_tuple(options.shape) + ", eps=" + num(options.eps) +
         ", elementwise_affine=" + py_bool(options.elementwise_affine);
}
std::shared_ptr<Module> LayerNorm::clone() const { return clone_of(*this); }

// --- GroupNorm ---

GroupNorm::GroupNorm(const GroupNormOptions& o) : options(o) {
  if (o.groups <= 0 || o.channels % o.groups != 0)
    detail::throw_value("GroupNorm", "expected channels divisible by groups, found channels=" +
                                         std::to_string(o.channels) +
                                         ", groups=" + std::to_string(o.groups));
  if (o.affine) {
    weight = ones({o.channels}, topts(o.param));
    bias = zeros({o.channels}, topts(o.param));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}
Tensor GroupNorm::forward(const Tensor& x) {
  return F::group_norm(x, options.groups, weight, bias, options.eps);
}
std::string GroupNorm::extra_repr() const {
  return std::to_string(options.groups) + ", " + std::to_string(options.channels) +
         ", eps=" + num(options.eps) + ", affine=" + py_bool(options.affine);
}
std::shared_ptr<Module> GroupNorm::clone() const { return clone_of(*this); }

// --- RMSNorm ---

RMSNorm::RMSNorm(const RMSNormOptions& o) : options(o) {
  if (o.elementwise_affine) weight = ones(o.shape, topts(o.param));
  register_parameter("weight", weight);
}
Tensor RMSNorm::forward(const Tensor& x) {
  return F::rms_norm(x, options.shape, weight, options.eps);
}
std::string RMSNorm::extra_repr() const {
  return shape_tuple(options.shape) + ", eps=" + (options.eps ? num(*options.eps) : "None") +
         ", elementwise_affine=" + py_bool(options.elementwise_affine);
}
std::shared_ptr<Module> RMSNorm::clone() const { return clone_of(*this); }

}  // namespace ember::nn

namespace ember::nn {

// --- InstanceNorm: group_norm with one group per channel is the same statistics ---

template <int Dims>
InstanceNormNd<Dims>::InstanceNormNd(const InstanceNormOptions& o) : options(o) {
  if (o.features <= 0)
    ember::detail::throw_value(type_name().c_str(),
                               "expected features > 0, found " + std::to_string(o.features));
  if (o.affine) {
    weight = ones({o.features}, fmt::topts(o.param));
    bias = zeros({o.features}, fmt::topts(o.param));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

template <int Dims>
Tensor InstanceNormNd<Dims>::forward(const Tensor& x) {
  if (x.dim() != Dims + 1 && x.dim() != Dims + 2)
    ember::detail::throw_shape(type_name().c_str(), "expected " + std::to_string(Dims + 1) +
                                                        "D or " + std::to_string(Dims + 2) +
                                                        "D input, found " +
                                                        std::to_string(x.dim()) + "D");
  bool unbatched = x.dim() == Dims + 1;
  Tensor xb = unbatched ? x.unsqueeze(0) : x;
  if (xb.shape()[1] != options.features)
    ember::detail::throw_shape(type_name().c_str(), "expected " + std::to_string(options.features) +
                                                        " channels, found " +
                                                        std::to_string(xb.shape()[1]));
  Tensor y = F::group_norm(xb, options.features, weight, bias, options.eps);
  return unbatched ? y.squeeze(0) : y;
}

template <int Dims>
std::string InstanceNormNd<Dims>::extra_repr() const {
  return std::to_string(options.features) + ", eps=" + fmt::py_float(options.eps) +
         ", momentum=0.1, affine=" + fmt::py_bool(options.affine) + ", track_running_stats=False";
}

template <int Dims>
std::shared_ptr<Module> InstanceNormNd<Dims>::clone() const {
  return clone_of(*this);
}

template class InstanceNormNd<1>;
template class InstanceNormNd<2>;

}  // namespace ember::nn
