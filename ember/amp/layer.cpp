// The mixed-precision layer: the outermost layer of a device made by Device::mixed_precision.
// Before inference, the dispatcher lets it cast the floating inputs of listed ops and dispatch
// the op again (the casts and the op then pass through autodiff and fusion below it); an op whose
// inputs are already in the wanted dtypes goes straight on, so the second dispatch passes.
#include <array>
#include <string>

#include "ember/amp.h"
#include "ember/amp/autocast.h"
#include "ember/error.h"
#include "ember/ops/registry.h"
#include "ember/tensor_impl.h"

namespace ember::amp {

namespace {

thread_local bool t_enabled = true;

// The op lists follow PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp), by op
// name; ember's op set is smaller, and the ops ember adds are marked.
std::array<OpPolicy, kNumOps> make_table() {
  std::array<OpPolicy, kNumOps> t;
  t.fill(OpPolicy::keep);
  // torch's lower_precision_fp list: conv1d/2d/3d, conv_transpose1d/2d, matmul, mm, bmm,
  // linear, einsum, scaled_dot_product_attention (torch's addmm/baddbmm/mv/chain_matmul are
  // matmul or linear here). outer is ember's (torch's ger/outer decompose into a product).
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose1d,
                  OpId::conv_transpose2d, OpId::matmul, OpId::mm, OpId::bmm, OpId::linear,
                  OpId::einsum, OpId::outer, OpId::scaled_dot_product_attention})
    t[size_t(op)] = OpPolicy::lower;
  // torch's fp32 list: acos, asin, cosh, erfinv, exp, expm1, log, log10, log2, log1p,
  // reciprocal, rsqrt, sinh, tan, pow, softplus, layer_norm, group_norm, norm, cosine_similarity,
  // nll_loss, kl_div, l1_loss, smooth_l1_loss, huber_loss, mse_loss,
  // binary_cross_entropy_with_logits, cdist, logsumexp, upsample (interpolate here); and its
  // fp32_set_opt_dtype list: prod, softmax, log_softmax, cumprod, cumsum, sum (those keep an
  // explicit dtype argument).
  for (OpId op :
       {OpId::acos, OpId::asin, OpId::cosh, OpId::erfinv, OpId::exp, OpId::expm1, OpId::log,
        OpId::log10, OpId::log2, OpId::log1p, OpId::reciprocal, OpId::rsqrt, OpId::sinh,
        OpId::tan, OpId::pow, OpId::softplus, OpId::layer_norm, OpId::group_norm, OpId::norm,
        OpId::cosine_similarity, OpId::nll_loss, OpId::kl_div, OpId::l1_loss,
        OpId::smooth_l1_loss, OpId::huber_loss, OpId::mse_loss,
        OpId::binary_cross_entropy_with_logits, OpId::cdist, OpId::logsumexp, OpId::interpolate,
        OpId::prod, OpId::softmax, OpId::log_softmax, OpId::cumprod, OpId::cumsum, OpId::sum,
        // ember's additions: the other reductions and norms, which torch runs in the input's
        // dtype trusting each kernel to accumulate in f32; here they run in f32, so the policy
        // does not depend on every backend's half kernels. cross_entropy is log_softmax +
        // nll_loss (both f32 in torch); binary_cross_entropy, which torch's CUDA autocast
        // refuses, runs in f32.
        OpId::mean, OpId::var, OpId::std, OpId::rms_norm, OpId::batch_norm,
        OpId::cross_entropy, OpId::binary_cross_entropy, OpId::pairwise_distance})
    t[size_t(op)] = OpPolicy::f32;
  return t;
}
const std::array<OpPolicy, kNumOps>& table() {
  static const auto t = make_table();
  return t;
}

// Inputs autocast changes: floating, not float64 (torch leaves f64 alone), not the dtype
// wanted, and not a wrapped Python-style number (which keeps its weak type).
bool eligible(const Tensor& t, DType want) {
  if (!t.defined() || t.dtype() == want || t.impl()->wrapped_number) return false;
  const DType d = t.dtype();
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

// The layer itself passes every call on: the dispatcher asks it (autocast below) before
// inference. It marks the device, leads its stack and names the policy.
class MixedPrecisionLayer final : public Layer {
 public:
  explicit MixedPrecisionLayer(DType compute)
      : compute_(compute),
        name_(std::string("mixed_precision(") + std::string(dtype_name(compute)) + ")") {}
  const char* name() const override { return name_.c_str(); }
  bool leads() const override { return true; }
  DType compute() const { return compute_; }
  TensorList call(const OpCall& c, const Next& next) override { return next(c); }

  bool autocast(OpId op, const Attrs& attrs, std::span<const Tensor> inputs,
                TensorList& out) const {
    const OpPolicy p = table()[size_t(op)];
    if (p == OpPolicy::keep || !t_enabled) return false;
    if (p == OpPolicy::f32 && attrs.has_dtype) return false;  // sum(x, dtype=...)
    const DType want = p == OpPolicy::lower ? compute_ : DType::F32;
    bool any = false;
    for (const Tensor& t : inputs) any = any || eligible(t, want);
    if (!any) return false;
    TensorList in(inputs.begin(), inputs.end());
    for (Tensor& t : in)
      if (eligible(t, want)) t = t.to(want);  // a cast op: autodiff below records it
    out = dispatch(op, attrs, in);  // nothing is left to cast: this time it goes on
    return true;
  }

 private:
  DType compute_;
  std::string name_;
};

const std::shared_ptr<MixedPrecisionLayer>& layer_for(DType d) {
  static const auto bf16 = std::make_shared<MixedPrecisionLayer>(DType::BF16);
  static const auto f16 = std::make_shared<MixedPrecisionLayer>(DType::F16);
  return d == DType::BF16 ? bf16 : f16;
}

const MixedPrecisionLayer* layer_of(Device d) {
  for (Layer* l : d.layers())
    if (l == layer_for(DType::BF16).get() || l == layer_for(DType::F16).get())
      return static_cast<const MixedPrecisionLayer*>(l);
  return nullptr;
}

}  // namespace

OpPolicy op_policy(std::string_view op) { return table()[size_t(op_from_name(op))]; }

bool detail::autocast(const Layer& leading, OpId op, const Attrs& attrs,
                      std::span<const Tensor> inputs, TensorList& out) {
  for (DType d : {DType::BF16, DType::F16})
    if (&leading == layer_for(d).get()) return layer_for(d)->autocast(op, attrs, inputs, out);
  return false;
}

std::optional<DType> compute_dtype(Device d) {
  const MixedPrecisionLayer* l = layer_of(d);
  if (!l) return std::nullopt;
  return l->compute();
}

AutocastOff::AutocastOff() : prev_(t_enabled) { t_enabled = false; }
AutocastOff::~AutocastOff() { t_enabled = prev_; }
bool autocast_enabled() { return t_enabled; }

}  // namespace ember::amp

namespace ember {

Device Device::mixed_precision(DType compute) const {
  if (compute != DType::BF16 && compute != DType::F16)
    detail::throw_value("mixed_precision", "expected a compute dtype bfloat16 or float16, found " +
                                               std::string(dtype_name(compute)));
  const auto& l = amp::layer_for(compute);
  for (Layer* old : layers())
    if (old == amp::layer_for(DType::BF16).get() || old == amp::layer_for(DType::F16).get())
      return replace_layer(old, l);
  return with_layer(l, /*outermost=*/true);
}

}  // namespace ember
