// VJP rules: matrix products, embedding, dropout and nll_loss; registers the rest of the nn family
// (rules_nn_conv.cpp, rules_nn_pool.cpp, rules_nn_norm.cpp).
#include "ember/ops/modes.h"
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
void register_rules_nn_conv();
void register_rules_nn_pool();
void register_rules_nn_norm();
void register_rules_linalg();

namespace {

// --- matrix products ---

TensorList vjp_mm(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = mm(g, c.input(1).t());
  if (c.needs_grad(1)) gb = mm(c.input(0).t(), g);
  return {ga, gb};
}

TensorList vjp_bmm(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  Tensor ga, gb;
  if (c.needs_grad(0)) ga = bmm(g, c.input(1).transpose(1, 2));
  if (c.needs_grad(1)) gb = bmm(c.input(0).transpose(1, 2), g);
  return {ga, gb};
}

// The product of every dim but the last (the rows of t as a matrix; 1 for a vector): reshapes
// with it stay defined when a dim is 0, where a -1 would be ambiguous.
int64_t leading(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) n *= t.size(d);
  return n;
}

// torch.matmul: 1-D operands gain a unit dim (which the output lacks), batch dims broadcast.
TensorList vjp_matmul(const VjpCtx& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  const Tensor am = a_vec ? a.unsqueeze(0) : a;
  const Tensor bm = b_vec ? b.unsqueeze(1) : b;
  Tensor g = c.grad(0);
  if (a_vec) g = g.unsqueeze(b_vec ? g.dim() : g.dim() - 1);
  if (b_vec) g = g.unsqueeze(g.dim());
  Tensor ga, gb;
  if (c.needs_grad(0)) {
    ga = sum_to(matmul(g, bm.transpose(-1, -2)), am.shape());
    if (a_vec) ga = ga.reshape(a.shape());
  }
  if (c.needs_grad(1)) {
    if (bm.dim() == 2 && g.dim() > 2) {
      // A shared matrix: one GEMM over the flattened batch instead of a batch of them + sum.
      const int64_t k = am.size(-1), rows = leading(am);
      gb = mm(am.reshape({rows, k}).t(), g.reshape({rows, g.size(-1)}));
    } else {
      gb = sum_to(matmul(am.transpose(-1, -2), g), bm.shape());
    }
    if (b_vec) gb = gb.reshape(b.shape());
  }
  return {ga, gb};
}

// linear: y = x w^T + bias, x [..., in] (or [in]), w [out, in] (or [in]: y drops the out dim).
TensorList vjp_linear(const VjpCtx& c) {
  const Tensor &x = c.input(0), &w = c.input(1), &g = c.grad(0);
  const Tensor bias = c.inputs.size() > 2 ? c.input(2) : Tensor();
  Tensor gx, gw, gbias;
  if (w.dim() == 1) {
    const Tensor gu = g.unsqueeze(g.dim());
    if (c.needs_grad(0)) gx = gu * w;
    if (c.needs_grad(1)) gw = sum_to(gu * x, w.shape());
  } else {
    if (c.needs_grad(0)) gx = matmul(g, w);
    if (c.needs_grad(1))
      gw = mm(g.reshape({leading(x), w.size(0)}).t(), x.reshape({leading(x), w.size(1)}));
  }
  if (bias.defined() && c.needs_grad(2)) gbias = sum_to(g, bias.shape());
  return {gx, gw, gbias};
}

// --- embedding: the weight's gradient is a scatter-add of the output rows; padding_idx's row
// gets none (its rows are zeroed in the cotangent first) ---

TensorList vjp_embedding(const VjpCtx& c) {
  if (!c.needs_grad(1)) return {Tensor(), Tensor()};
  const Tensor &idx = c.input(0), &w = c.input(1);
  const int64_t dim = w.size(1);
  const Tensor flat_idx = idx.reshape({-1});
  Tensor rows = c.grad(0).reshape({-1, dim});
  if (c.attrs.b[0]) {
    const int64_t pad = c.attrs.i[0] < 0 ? c.attrs.i[0] + w.size(0) : c.attrs.i[0];
    rows = where(eq(flat_idx, pad).unsqueeze(1), 0.0, rows);
  }
  return {Tensor(), index_add(zeros_like(w), 0, flat_idx, rows)};
}

// --- nll_loss: outputs (loss, total_weight); loss = -sum w[t] x[t] (/ total_weight for "mean").
// The weight gets a gradient too (torch leaves it out): it is what finite differences see. ---

TensorList vjp_nll_loss(const VjpCtx& c) {
  const Tensor &x = c.input(0), &target = c.input(1);
  const Tensor weight = c.inputs.size() > 2 ? c.input(2) : Tensor();
  const auto red = ops::Reduction(c.attrs.mode);
  const int64_t cd = x.dim() == 1 ? 0 : 1;
  const Tensor valid = ne(target, c.attrs.i[0]);
  const Tensor t = where(valid, target, Scalar(int64_t(0))).to(DType::I64);  // safe gather index
  const Tensor tu = t.unsqueeze(cd);
  Tensor wt = weight.defined() ? index_select(weight, 0, t.reshape({-1})).reshape(t.shape())
                               : ones(t.shape(), {x.dtype(), x.device()});
  wt = where(valid, wt, 0.0);
  const Tensor& g = c.grad(0);
  const bool mean_red = red == ops::Reduction::Mean;
  Tensor gx, gw;
  if (g.defined() && c.needs_grad(0)) {
    Tensor coef = neg(g * wt);
    // torch writes nothing for ignored targets, also when "mean" divides by a zero weight.
    if (mean_red) coef = where(valid, coef / c.output(1), 0.0);
    // A one-hot select rather than a scatter into zeros: elementwise, so a fused device makes it
    // the prologue of the log_softmax backward that usually follows (cross-entropy).
    Shape along(size_t(x.dim() - cd), 1);
    along[0] = x.size(cd);
    const Tensor classes = arange(x.size(cd), {DType::I64, x.device()}).reshape(along);
    gx = where(eq(classes, tu), coef.unsqueeze(cd), 0.0);
  }
  if (weight.defined() && c.needs_grad(2)) {
    // Per target position: d loss / d w[t] and d total_weight / d w[t], added into w[t].
    Tensor per = zeros(t.shape(), {x.dtype(), x.device()});
    if (g.defined()) {
      Tensor xt = gather(x, cd, tu).squeeze(cd);
      per = mean_red ? neg(g * (xt + c.output(0))) / c.output(1) : neg(g * xt);
    }
    if (c.grads.size() > 1 && c.grad(1).defined()) per = per + c.grad(1);
    per = where(valid, per, 0.0);
    gw = index_add(zeros_like(weight), 0, t.reshape({-1}), per.reshape({-1}));
  }
  return {gx, Tensor(), gw};
}

// --- dropout: the mask drawn again from the Philox state the forward drew (its attributes), as
// the forward's decomposition draws it: bitwise the same mask, recomputed instead of saved. On
// a fused device it is generated inside the kernel that applies it (no mask in memory either
// way). ---

TensorList vjp_dropout(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  const double p = c.attrs.f[0];
  if (!c.attrs.b[0] || p == 0 || g.numel() == 0) return {g};
  if (p == 1) return {g * 0.0};
  Attrs keep = c.attrs;
  keep.f[0] = 1 - p;
  keep.b[0] = true;
  return {g * (dispatch1(OpId::bernoulli, keep, {g}) * (1.0 / (1 - p)))};
}

}  // namespace

void register_rules_nn() {
  set_vjp(OpId::mm, vjp_mm);
  set_vjp(OpId::bmm, vjp_bmm);
  set_vjp(OpId::matmul, vjp_matmul);
  set_vjp(OpId::linear, vjp_linear);
  set_vjp(OpId::embedding, vjp_embedding);
  set_vjp(OpId::nll_loss, vjp_nll_loss);
  set_vjp(OpId::dropout, vjp_dropout);
  register_rules_nn_conv();
  register_rules_nn_pool();
  register_rules_nn_norm();
  register_rules_linalg();
}

}  // namespace ember::autodiff
