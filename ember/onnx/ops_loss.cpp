// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over [N, C, d1..dk] with class
// weights, ignore_index and the three reductions, composed from gathers so every layout ONNX
// allows works (ember's nll_loss takes fewer).
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// -x[n, t[n, ...], ...] * w[t], with ignored targets weighing 0; reduced as ONNX says (mean
// divides by the total weight of the targets kept).
Tensor nll(const Node& node, const Tensor& logp, const Tensor& target, const Tensor& weight) {
  std::string reduction = node.s("reduction", "mean");
  Tensor t = target.to(kI64);
  Tensor keep = ones_like(t, {.dtype = kBool});
  if (node.has("ignore_index")) keep = ne(t, node.i("ignore_index", 0));
  Tensor safe = where(keep, t, int64_t(0));
  Tensor picked = gather(logp, 1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? index_select(weight, 0, safe.reshape({-1})).reshape(t.shape())
                              : ones_like(picked);
  w = where(keep, w, zeros_like(w));
  Tensor loss = neg(mul(picked, w));
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  if (reduction == "mean") return div(sum(loss), sum(w));
  invalid(node, "unknown reduction '" + reduction + "'");
}

TensorList nll_op(const OpArgs& a) { return {nll(a.node, a[0], a[1], a.has(2) ? a[2] : Tensor())}; }

TensorList softmax_cross_entropy(const OpArgs& a) {
  Tensor logp = log_softmax(a[0], 1);
  return {nll(a.node, logp, a[1], a.has(2) ? a[2] : Tensor()), logp};
}

}  // namespace

void add_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = nll_op;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace ember::onnx::detail
