// Losses: API, inference, decompositions, registration. nll_loss has a flex kernel (it picks
// the target column); every other loss decomposes into ember ops.
// Attrs: every loss: mode = ops::Reduction (kl_div also BatchMean).
// cross_entropy/nll_loss: inputs (input, target, weight), i[0] ignore_index, f[0]
// label_smoothing (cross_entropy); nll_loss outputs (loss, total_weight), total_weight being the
// summed weight of the non-ignored targets. smooth_l1_loss: f[0] beta. huber_loss: f[0] delta.
// binary_cross_entropy: inputs (input, target, weight). binary_cross_entropy_with_logits: inputs
// (input, target, weight, pos_weight). kl_div: b[0] log_target.
#include "ember/backends/backend.h"
#include "ember/ops/nn.h"
#include "ember/ops/binary.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/ops/layout.h"

namespace ember {
namespace {

// Class-index targets: input [C] with a 0-d target, [N, C] with [N], or [N, C, d1, ...] with
// [N, d1, ...].
Shape class_target_shape(const Tensor& x) {
  Shape s = x.shape();
  s.erase(x.dim() == 1 ? 0 : 1);
  return s;
}

void check_class_input(const char* name, const Tensor& x, const Tensor& weight) {
  if (x.dim() == 0)
    detail::throw_shape(name, "expected an input of shape [C], [N, C] or [N, C, d1, ...], found a "
                              "0-d tensor");
  ops::require_float(name, x.dtype());
  if (weight.defined()) ops::require_float(name, weight.dtype(), "weight");
  ops::require_vector(name, weight, x.size(x.dim() == 1 ? 0 : 1), "weight");
}

void check_class_target(const char* name, const Tensor& x, const Tensor& t) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    detail::throw_dtype(name, "expected int64 class indices as target, found " +
                                  std::string(dtype_name(t.dtype())));
  if (t.shape() != class_target_shape(x))
    detail::throw_shape(name, "expected a target of shape " + shape_str(class_target_shape(x)) +
                                  " for an input of shape " + shape_str(x.shape()) + ", found " +
                                  shape_str(t.shape()));
}

void check_same_shape(const char* name, const Tensor& x, const Tensor& t) {
  if (x.shape() != t.shape())
    detail::throw_shape(name, "expected a target of the input's shape " + shape_str(x.shape()) +
                                  ", found " + shape_str(t.shape()));
}

void check_broadcasts_to(const char* name, const Tensor& w, const Shape& s, const char* what) {
  if (!w.defined()) return;
  ops::require_float(name, w.dtype(), what);
  if (broadcast_shapes(w.shape(), s, name) != s)
    detail::throw_shape(name, std::string(what) + " of shape " + shape_str(w.shape()) +
                                  " does not broadcast to the input's shape " + shape_str(s));
}

void infer_loss(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() < 2) detail::throw_value(name, "expected an input and a target");
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  ops::require_defined(x, name, "input");
  ops::require_defined(t, name, "target");
  const ops::Reduction red = ops::reduction_of(name, a, op == OpId::kl_div);
  const bool reduce = red != ops::Reduction::None;
  switch (op) {
    case OpId::nll_loss: case OpId::cross_entropy: {
      check_class_input(name, x, in.size() > 2 ? in[2] : Tensor());
      if (op == OpId::cross_entropy && is_floating(t.dtype())) {
        check_same_shape(name, x, t);
      } else {
        check_class_target(name, x, t);
      }
      if (op == OpId::cross_entropy && !(a.f[0] >= 0 && a.f[0] <= 1))
        detail::throw_value(name, "label_smoothing must be in [0, 1], found " +
                                      std::to_string(a.f[0]));
      out.add(reduce ? Shape{} : class_target_shape(x), x.dtype());
      if (op == OpId::nll_loss) out.add({}, x.dtype());
      return;
    }
    case OpId::binary_cross_entropy: case OpId::binary_cross_entropy_with_logits: {
      ops::require_float(name, x.dtype());
      ops::require_float(name, t.dtype(), "target");
      check_same_shape(name, x, t);
      check_broadcasts_to(name, in.size() > 2 ? in[2] : Tensor(), x.shape(), "weight");
      check_broadcasts_to(name, in.size() > 3 ? in[3] : Tensor(), x.shape(), "pos_weight");
      out.add(reduce ? Shape{} : x.shape(), promote_types(x.dtype(), t.dtype()));
      return;
    }
    default: {  // elementwise losses on broadcast input and target
      DType r = promote_types(x.dtype(), t.dtype());
      ops::require_float(name, r, "input and target");
      Shape s = broadcast_shapes(x.shape(), t.shape(), name);
      if (op == OpId::smooth_l1_loss && a.f[0] < 0)
        detail::throw_value(name, "beta must be non-negative, found " + std::to_string(a.f[0]));
      if (op == OpId::huber_loss && !(a.f[0] > 0))
        detail::throw_value(name, "delta must be positive, found " + std::to_string(a.f[0]));
      out.add(reduce ? Shape{} : s, r);
      return;
    }
  }
}

// --- decompositions ---

// [C] -> [1, C, 1, ...] against an input with the class dim at 1 (as is for a 1-D input).
Tensor class_view(const Tensor& w, const Tensor& x) {
  if (!w.defined() || x.dim() == 1) return w;
  Shape s(size_t(x.dim()), 1);
  s[1] = w.size(0);
  return w.reshape(s);
}

TensorList dec_cross_entropy(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  const Tensor weight = in.size() > 2 ? in[2] : Tensor();
  const Tensor w = class_view(weight, x);
  const int64_t cd = x.dim() == 1 ? 0 : 1, classes = x.size(cd);
  const double ls = a.f[0];
  const ops::Reduction red = ops::Reduction(a.mode);
  Tensor logp = log_softmax(x, cd);
  if (is_floating(t.dtype())) {  // class probabilities
    Tensor p = ls > 0 ? t * (1 - ls) + ls / double(classes) : t;
    Tensor prod = logp * p;
    if (w.defined()) prod = prod * w;
    if (red == ops::Reduction::None) return {neg(sum(prod, {cd}))};
    Tensor total = neg(sum(prod));
    if (red == ops::Reduction::Sum) return {total};
    return {total / double(x.numel() / std::max<int64_t>(classes, 1))};
  }
  TensorList nll;
  try {
    nll = dispatch(OpId::nll_loss, a, {logp, t, weight});
  } catch (const IndexError& e) {
    // A bad target: report it under the op the caller used.
    const std::string what = e.what(), tag = "[nll_loss] ";
    detail::throw_index("cross_entropy", what.rfind(tag, 0) == 0 ? what.substr(tag.size()) : what);
  }
  if (ls == 0) return {nll[0]};
  // Label smoothing: mix in the (weighted) mean negative log-probability over classes, skipping
  // ignored targets and normalised like nll_loss.
  Tensor smooth = neg(sum(w.defined() ? logp * w : logp, {cd}));
  smooth = where(eq(t, a.i[0]), 0.0, smooth);
  Tensor s = red == ops::Reduction::None  ? smooth
             : red == ops::Reduction::Sum ? sum(smooth)
                                          : sum(smooth) / nll[1];
  return {nll[0] * (1 - ls) + s * (ls / double(classes))};
}

Tensor pointwise_loss(OpId op, const Attrs& a, const Tensor& x, const Tensor& t) {
  Tensor d = x - t;
  switch (op) {
    case OpId::mse_loss: return d * d;
    case OpId::l1_loss: return abs(d);
    case OpId::smooth_l1_loss: {
      const double beta = a.f[0];
      Tensor z = abs(d);
      if (beta == 0) return z;
      return where(lt(z, beta), z * z * (0.5 / beta), z - 0.5 * beta);
    }
    default: {  // huber_loss
      const double delta = a.f[0];
      Tensor z = abs(d);
      return where(lt(z, delta), z * z * 0.5, (z - 0.5 * delta) * delta);
    }
  }
}

#define EMBER_POINTWISE_DEC(name)                                        \
  TensorList dec_##name(const Attrs& a, std::span<const Tensor> in) {    \
    return {ops::apply_reduction(pointwise_loss(OpId::name, a, in[0], in[1]), a)}; \
  }
EMBER_POINTWISE_DEC(mse_loss)
EMBER_POINTWISE_DEC(l1_loss)
EMBER_POINTWISE_DEC(smooth_l1_loss)
EMBER_POINTWISE_DEC(huber_loss)
#undef EMBER_POINTWISE_DEC

TensorList dec_binary_cross_entropy(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  // Checked without a host sync on lazy devices (reported at the next sync there).
  if (x.numel() > 0)
    detail::deferred_check(ge(x, 0) & le(x, 1), "binary_cross_entropy",
                           "all elements of input should be between 0 and 1");
  // torch clamps each log at -100 so that x = 0 or 1 gives a finite loss.
  Tensor loss = (t - 1) * clamp(log1p(neg(x)), Scalar(-100), std::nullopt) -
                t * clamp(log(x), Scalar(-100), std::nullopt);
  if (in.size() > 2 && in[2].defined()) loss = loss * in[2];
  return {ops::apply_reduction(loss, a)};
}

TensorList dec_binary_cross_entropy_with_logits(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  // -log(sigmoid(x)) = log1p(exp(-|x|)) + max(-x, 0): never exponentiates a large positive.
  Tensor nls = log1p(exp(neg(abs(x)))) + relu(neg(x));
  if (in.size() > 3 && in[3].defined()) nls = nls * ((in[3] - 1) * t + 1);
  Tensor loss = (1 - t) * x + nls;
  if (in.size() > 2 && in[2].defined()) loss = loss * in[2];
  return {ops::apply_reduction(loss, a)};
}

TensorList dec_kl_div(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  Tensor loss = a.b[0] ? exp(t) * (t - x) : where(eq(t, 0), 0.0, t * log(t)) - t * x;
  if (ops::Reduction(a.mode) == ops::Reduction::BatchMean) return {x.dim() > 0 ? sum(loss) / double(x.size(0)) : sum(loss)};
  return {ops::apply_reduction(loss, a)};
}

Attrs loss_attrs(const char* op, const std::string& reduction, double f0 = 0) {
  Attrs a;
  a.mode = uint8_t(ops::parse_reduction(op, reduction, std::string_view(op) == "kl_div"));
  a.f[0] = f0;
  return a;
}
Attrs class_attrs(const char* op, const CrossEntropyOptions& o) {
  Attrs a = loss_attrs(op, o.reduction, o.label_smoothing);
  a.i[0] = o.ignore_index;
  return a;
}

}  // namespace


Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o) {
  return dispatch1(OpId::cross_entropy, class_attrs("cross_entropy", o), {input, target, o.weight});
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o) {
  return dispatch1(OpId::nll_loss, class_attrs("nll_loss", o), {input, target, o.weight});
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                Reduction reduction, int64_t ignore_index) {
  return nll_loss(input, target, {.weight = weight, .ignore_index = ignore_index,
                                  .reduction = ops::mode_name(reduction)});
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  return cross_entropy(input, target, {.weight = weight, .ignore_index = ignore_index,
                                       .reduction = ops::mode_name(reduction),
                                       .label_smoothing = label_smoothing});
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return dispatch1(OpId::mse_loss, loss_attrs("mse_loss", reduction), {input, target});
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return dispatch1(OpId::l1_loss, loss_attrs("l1_loss", reduction), {input, target});
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
  return dispatch1(OpId::smooth_l1_loss, loss_attrs("smooth_l1_loss", reduction, beta), {input, target});
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
  return dispatch1(OpId::huber_loss, loss_attrs("huber_loss", reduction, delta), {input, target});
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  return dispatch1(OpId::binary_cross_entropy, loss_attrs("binary_cross_entropy", reduction), {input, target, weight});
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        const Tensor& pos_weight) {
  return dispatch1(OpId::binary_cross_entropy_with_logits, loss_attrs("binary_cross_entropy_with_logits", reduction),
                   {input, target, weight, pos_weight});
}
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  Attrs a = loss_attrs("kl_div", reduction);
  a.b[0] = log_target;
  return dispatch1(OpId::kl_div, a, {input, target});
}


namespace ops {
void register_loss_ops() {
  for (OpId op : {OpId::cross_entropy, OpId::nll_loss, OpId::mse_loss, OpId::l1_loss,
                  OpId::smooth_l1_loss, OpId::huber_loss, OpId::binary_cross_entropy,
                  OpId::binary_cross_entropy_with_logits, OpId::kl_div})
    op_def_mut(op).infer = infer_loss;
  op_def_mut(OpId::cross_entropy).decompose = dec_cross_entropy;
  op_def_mut(OpId::mse_loss).decompose = dec_mse_loss;
  op_def_mut(OpId::l1_loss).decompose = dec_l1_loss;
  op_def_mut(OpId::smooth_l1_loss).decompose = dec_smooth_l1_loss;
  op_def_mut(OpId::huber_loss).decompose = dec_huber_loss;
  op_def_mut(OpId::binary_cross_entropy).decompose = dec_binary_cross_entropy;
  op_def_mut(OpId::binary_cross_entropy_with_logits).decompose =
      dec_binary_cross_entropy_with_logits;
  op_def_mut(OpId::kl_div).decompose = dec_kl_div;
}
}  // namespace ops

}  // namespace ember
