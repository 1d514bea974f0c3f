// VJP rules: the matrix decompositions and functions of ember/linalg.h, written in ember ops (the
// formulas torch uses). Undefined cotangents count as zero. Rules that need factors an op did not
// return (svdvals, eigvalsh) recompute them. The composite linalg ops (lstsq, pinv, norms, ...)
// differentiate through their decompositions and need no rule here.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
namespace {

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }
Tensor or_zeros(const Tensor& g, const Tensor& like) { return g.defined() ? g : zeros_like(like); }
// [..., k, k] for singular values s [..., k].
Shape with_batch(const Tensor& s, int64_t k) {
  Shape sh(std::span<const int64_t>(s.shape().data(), s.shape().size() - 1));
  sh.push_back(k);
  sh.push_back(k);
  return sh;
}

// inv: gA = -X^T g X^T.
TensorList vjp_inv(const VjpCtx& c) {
  const Tensor xt = mT(c.output(0));
  return {-matmul(xt, matmul(c.grad(0), xt))};
}

// solve (A X = B): gB = A^-T g, gA = -gB X^T.
TensorList vjp_solve(const VjpCtx& c) {
  Tensor gb = linalg::solve(mT(c.input(0)), c.grad(0));
  Tensor ga = c.needs_grad(0) ? -matmul(gb, mT(c.output(0))) : Tensor();
  return {ga, c.needs_grad(1) ? gb : Tensor()};
}

// det: gA = g det A^-T;  slogdet: gA = g_logabsdet A^-T (the sign has no gradient).
TensorList vjp_det(const VjpCtx& c) {
  const bool slog = c.op == OpId::linalg_slogdet;
  const Tensor& g = c.grad(slog ? 1 : 0);
  if (!g.defined()) return {zeros_like(c.input(0))};
  Tensor scale = slog ? g : g * c.output(0);
  return {scale.unsqueeze(-1).unsqueeze(-1) * mT(linalg::inv(c.input(0)))};
}

// cholesky: gA = sym(L^-T Phi(L^T gL) L^-1), Phi = the lower triangle with the diagonal halved.
TensorList vjp_cholesky(const VjpCtx& c) {
  const bool upper = c.attrs.b[0];
  Tensor l = upper ? mT(c.output(0)) : c.output(0);
  Tensor gl = upper ? mT(c.grad(0)) : c.grad(0);
  Tensor phi = tril(matmul(mT(l), gl));
  phi = phi - diag_embed(diagonal(phi, 0, -2, -1)) * 0.5;
  Tensor s = linalg::solve_triangular(mT(l), phi, /*upper=*/true);
  Tensor ga = linalg::solve_triangular(l, s, /*upper=*/false, /*left=*/false);
  return {(ga + mT(ga)) * 0.5};
}

// qr of a tall or square A (m >= n), torch's formula:
// gA = [gQ + Q syminvadj(triu(gR R^T - Q^T gQ))] R^-T.
Tensor qr_backward_tall(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r) {
  Tensor m;
  if (gq.defined() && gr.defined()) m = matmul(gr, mT(r)) - matmul(mT(q), gq);
  else if (gq.defined()) m = -matmul(mT(q), gq);
  else m = matmul(gr, mT(r));
  Tensor up = triu(m);
  Tensor sym = up + mT(up) - diag_embed(diagonal(up, 0, -2, -1));
  Tensor ga = matmul(q, sym);
  if (gq.defined()) ga = ga + gq;
  return linalg::solve_triangular(mT(r), ga, /*upper=*/false, /*left=*/false);
}

// qr: tall and square A directly; a wide A = [X | Y] (X m x m) has X = Q U and Y = Q V with
// R = [U | V], so gY = Q gV and X's rule sees gQ + Y gV^T. Not for "complete" with m > n (the
// extra columns of Q are not determined by A) nor for mode "r" (no Q), as in torch.
TensorList vjp_qr(const VjpCtx& c) {
  const char* op = "linalg_qr";
  if (c.attrs.mode == 2)
    detail::throw_not_implemented(op, "the derivative depends on Q, which mode=\"r\" does not compute");
  const Tensor &q = c.output(0), &r = c.output(1), &a = c.input(0);
  const int64_t m = a.size(-2), n = a.size(-1);
  if (c.attrs.mode == 1 && m > n)
    detail::throw_not_implemented(op, "the derivative is not implemented for mode \"complete\" with more "
                                      "rows than columns, found a matrix of shape " + shape_str(a.shape()));
  const Tensor &gq = c.grad(0), &gr = c.grad(1);
  if (m >= n) return {qr_backward_tall(gq, gr, q, r)};
  const Tensor y = a.narrow(-1, m, n - m), u = r.narrow(-1, 0, m);
  Tensor gu, gv;
  if (gr.defined()) gu = gr.narrow(-1, 0, m), gv = gr.narrow(-1, m, n - m);
  Tensor gq2 = gq;
  if (gv.defined()) gq2 = gq2.defined() ? gq2 + matmul(y, mT(gv)) : matmul(y, mT(gv));
  Tensor gx = qr_backward_tall(gq2, gu, q, u);
  Tensor gy = gv.defined() ? matmul(q, gv) : zeros_like(y);
  return {cat({gx, gy}, -1)};
}

// svd (torch's svd_backward, real case): with E_ij = s_j^2 - s_i^2,
// gA = U [(skew(U^T gU) s_j + s_i skew(V^T gV)) / E + diag(gS)] V^T, plus the parts of gU and gV
// outside the spans of U and V when A is not square. Full matrices are narrowed to k columns.
TensorList vjp_svd(const VjpCtx& c) {
  const Tensor& a = c.input(0);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const bool uv = c.attrs.b[1];
  Tensor u, s, vh, gu, gs, gvh;
  if (uv) {
    u = c.output(0).narrow(-1, 0, k);
    s = c.output(1);
    vh = c.output(2).narrow(-2, 0, k);
    gu = c.grad(0).defined() ? c.grad(0).narrow(-1, 0, k) : Tensor();
    gs = c.grad(1);
    gvh = c.grad(2).defined() ? c.grad(2).narrow(-2, 0, k) : Tensor();
  } else {
    auto [u2, s2, vh2] = linalg::svd(a.detach(), false);
    u = u2, s = s2, vh = vh2;
    gs = c.grad(0);
  }
  if (!gu.defined() && !gvh.defined())
    return {matmul(u * or_zeros(gs, s).unsqueeze(-2), vh)};
  auto skew = [](const Tensor& x) { return x - mT(x); };
  const Tensor s2 = s * s;
  Tensor e = s2.unsqueeze(-2) - s2.unsqueeze(-1);
  e = e + diag_embed(ones_like(s));  // 1 on the diagonal (its entries are replaced below)
  Tensor inner = zeros(with_batch(s, k), s.options());
  if (gu.defined()) inner = inner + skew(matmul(mT(u), gu)) * s.unsqueeze(-2);
  if (gvh.defined()) inner = inner + s.unsqueeze(-1) * skew(matmul(vh, mT(gvh)));
  inner = inner / e;
  inner = inner - diag_embed(diagonal(inner, 0, -2, -1));
  if (gs.defined()) inner = inner + diag_embed(gs);
  Tensor ga;
  if (m > n && gu.defined()) {
    Tensor gus = gu / s.unsqueeze(-2);
    ga = matmul(matmul(u, inner) + gus - matmul(u, matmul(mT(u), gus)), vh);
  } else if (m < n && gvh.defined()) {
    Tensor sgv = gvh / s.unsqueeze(-1);
    ga = matmul(u, matmul(inner, vh) + sgv - matmul(matmul(sgv, mT(vh)), vh));
  } else {
    ga = matmul(u, matmul(inner, vh));
  }
  return {ga};
}

// eigh: gA = V [diag(gL) + (V^T gV - (V^T gV)^T) / 2 / E] V^T with E_ij = L_j - L_i.
TensorList vjp_eigh(const VjpCtx& c) {
  const bool vecs = c.attrs.b[1];
  Tensor w, v, gw, gv;
  if (vecs) {
    w = c.output(0), v = c.output(1), gw = c.grad(0), gv = c.grad(1);
  } else {
    auto [w2, v2] = linalg::eigh(c.input(0).detach(), c.attrs.b[0] ? "U" : "L");
    w = w2, v = v2, gw = c.grad(0);
  }
  Tensor inner;
  if (gv.defined()) {
    Tensor vg = matmul(mT(v), gv);
    Tensor e = w.unsqueeze(-2) - w.unsqueeze(-1);
    e = e + diag_embed(ones_like(w));
    inner = (vg - mT(vg)) * 0.5 / e;
    inner = inner - diag_embed(diagonal(inner, 0, -2, -1));
    if (gw.defined()) inner = inner + diag_embed(gw);
  } else {
    inner = diag_embed(gw);
  }
  return {matmul(v, matmul(inner, mT(v)))};
}

// The conjugate transpose, and diag_embed of a complex vector (on its parts).
Tensor mH(const Tensor& t) { return conj(t).transpose(-2, -1); }
Tensor cdiag_embed(const Tensor& d) { return complex(diag_embed(real(d)), diag_embed(imag(d))); }

// eig, torch's linalg_eig_backward: gA = V^-H (diag(gL) + P / conj(E)) V^H with
// P = V^H gV - V^H V Re(diag(V^H gV)) (gV projected onto the losses that do not depend on each
// eigenvector's phase) and E[i][j] = L_j - L_i off the diagonal, 1 on it. A real A gets the real
// part. eigvals recomputes the eigenvectors.
TensorList vjp_eig(const VjpCtx& c) {
  const bool vecs = c.attrs.b[0];
  Tensor l, v;
  if (vecs) {
    l = c.output(0), v = c.output(1);
  } else {
    auto [l2, v2] = linalg::eig(c.input(0).detach());
    l = l2, v = v2;
  }
  const Tensor& gl = c.grad(0);
  const Tensor gv = vecs ? c.grad(1) : Tensor();
  const Tensor vh = mH(v);
  Tensor inner = gl.defined() ? cdiag_embed(gl) : zeros_like(v);
  if (gv.defined()) {
    Tensor vhgv = matmul(vh, gv);
    Tensor d = real(diagonal(vhgv, 0, -2, -1));
    vhgv = vhgv - matmul(vh, v * d.unsqueeze(-2));
    Tensor lc = conj(l);
    Tensor e = lc.unsqueeze(-2) - lc.unsqueeze(-1) + diag_embed(ones_like(real(l)));
    inner = inner + vhgv / e;
  }
  Tensor ga = linalg::solve(vh, matmul(inner, vh));
  if (!is_complex(c.input(0).dtype())) ga = real(ga).contiguous();
  return {ga};
}

// lu_solve: gB = A^-T g (A^-1 g when adjoint); gA = -gB X^T (-X gB^T), and gLU from gA through
// A = P L U: gL = tril(P^T gA U^T, -1), gU = triu(L^T P^T gA), with P^T gA = L U A^-1 gA.
TensorList vjp_lu_solve(const VjpCtx& c) {
  const Tensor &lu = c.input(0), &piv = c.input(1), &x = c.output(0), &g = c.grad(0);
  const bool adjoint = c.attrs.b[0];
  Tensor gb = linalg::lu_solve(lu, piv, g, true, !adjoint);
  Tensor glu;
  if (c.needs_grad(0)) {
    Tensor ga = adjoint ? -matmul(x, mT(gb)) : -matmul(gb, mT(x));
    const int64_t n = lu.size(-1);
    Tensor l = tril(lu, -1) + eye(n, {}, lu.options());
    Tensor u = triu(lu);
    Tensor pga = matmul(l, matmul(u, linalg::lu_solve(lu, piv, ga)));
    glu = tril(matmul(pga, mT(u)), -1) + triu(matmul(mT(l), pga));
  }
  return {glu, Tensor(), c.needs_grad(2) ? gb : Tensor()};
}

// solve_triangular (left): gB = A^-T g, gA = -gB X^T restricted to A's triangle (without the
// diagonal when unitriangular).
TensorList vjp_solve_triangular(const VjpCtx& c) {
  const bool upper = c.attrs.b[0], unit = c.attrs.b[2];
  Tensor gb = linalg::solve_triangular(mT(c.input(0)), c.grad(0), !upper, true, unit);
  Tensor ga;
  if (c.needs_grad(0)) {
    Tensor full = -matmul(gb, mT(c.output(0)));
    ga = upper ? triu(full, unit ? 1 : 0) : tril(full, unit ? -1 : 0);
  }
  return {ga, c.needs_grad(1) ? gb : Tensor()};
}

// matrix_exp: the upper-right block of exp([[A^T, g], [0, A^T]]).
TensorList vjp_matrix_exp(const VjpCtx& c) {
  const Tensor at = mT(c.input(0));
  const int64_t n = at.size(-1);
  Tensor top = cat({at, c.grad(0)}, -1);
  Tensor bottom = cat({zeros_like(at), at}, -1);
  Tensor e = linalg::matrix_exp(cat({top, bottom}, -2));
  return {e.narrow(-2, 0, n).narrow(-1, n, n)};
}

}  // namespace

void register_rules_linalg() {
  set_vjp(OpId::linalg_inv, vjp_inv);
  set_vjp(OpId::linalg_solve, vjp_solve);
  set_vjp(OpId::linalg_det, vjp_det);
  set_vjp(OpId::linalg_slogdet, vjp_det);
  set_vjp(OpId::linalg_cholesky, vjp_cholesky);
  set_vjp(OpId::linalg_qr, vjp_qr);
  set_vjp(OpId::linalg_svd, vjp_svd);
  set_vjp(OpId::linalg_eigh, vjp_eigh);
  set_vjp(OpId::linalg_eig, vjp_eig);
  set_vjp(OpId::linalg_lu_solve, vjp_lu_solve);
  set_vjp(OpId::linalg_solve_triangular, vjp_solve_triangular);
  set_vjp(OpId::matrix_exp, vjp_matrix_exp);
}

}  // namespace ember::autodiff
