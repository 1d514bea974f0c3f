// VJP rules: the matrix decompositions and functions of ember/linalg.h, written in ember ops (the
// formulas torch uses). Undefined cotangents count as zero. Rules that need factors an op did not
// return (svdvals, eigvalsh) recompute them. The composite linalg ops (lstsq, pinv, norms, ...)
// differentiate through their decompositions and need no rule here.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
namespace {

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }
// The conjugate transpose (the transpose of a real tensor): the rules below are torch's complex
// ones (PyTorch's conjugate Wirtinger convention), which for real tensors are the real ones.
Tensor mH(const Tensor& t) { return conj(t).transpose(-2, -1); }
Tensor or_zeros(const Tensor& g, const Tensor& like) { return g.defined() ? g : zeros_like(like); }
// [..., k, k] for singular values s [..., k].
Shape with_batch(const Tensor& s, int64_t k) {
  Shape sh(std::span<const int64_t>(s.shape().data(), s.shape().size() - 1));
  sh.push_back(k);
  sh.push_back(k);
  return sh;
}
// tril, triu and diag_embed of complex tensors, on their parts.
Tensor ctril(const Tensor& x, int64_t k = 0) {
  return is_complex(x.dtype()) ? complex(tril(real(x), k), tril(imag(x), k)) : tril(x, k);
}
Tensor ctriu(const Tensor& x, int64_t k = 0) {
  return is_complex(x.dtype()) ? complex(triu(real(x), k), triu(imag(x), k)) : triu(x, k);
}
Tensor cdiag_embed(const Tensor& d) {
  return is_complex(d.dtype()) ? complex(diag_embed(real(d)), diag_embed(imag(d))) : diag_embed(d);
}
Tensor diag_of(const Tensor& x) { return diagonal(x, 0, -2, -1); }

// inv: gA = -X^H g X^H.
TensorList vjp_inv(const VjpCtx& c) {
  const Tensor xh = mH(c.output(0));
  return {-matmul(xh, matmul(c.grad(0), xh))};
}

// solve (A X = B): gB = A^-H g, gA = -gB X^H.
TensorList vjp_solve(const VjpCtx& c) {
  Tensor gb = linalg::solve(mH(c.input(0)), c.grad(0));
  Tensor ga = c.needs_grad(0) ? -matmul(gb, mH(c.output(0))) : Tensor();
  return {ga, c.needs_grad(1) ? gb : Tensor()};
}

// det: gA = g conj(det) A^-H. slogdet: gA = G A^-H with G = g_logabsdet (real A: the sign has no
// gradient), plus i Im(g_sign conj(sign)) for complex A.
TensorList vjp_det(const VjpCtx& c) {
  const Tensor& a = c.input(0);
  Tensor scale;
  if (c.op == OpId::linalg_slogdet) {
    const Tensor &gl = c.grad(1), gs = is_complex(a.dtype()) ? c.grad(0) : Tensor();
    if (!gl.defined() && !gs.defined()) return {zeros_like(a)};
    if (!gs.defined()) {
      scale = gl;
    } else {
      Tensor im = imag(gs * conj(c.output(0)));
      scale = complex(gl.defined() ? gl : zeros_like(im), im);
    }
  } else {
    if (!c.grad(0).defined()) return {zeros_like(a)};
    scale = c.grad(0) * conj(c.output(0));
  }
  return {scale.unsqueeze(-1).unsqueeze(-1) * mH(linalg::inv(a))};
}

// cholesky (torch's cholesky_backward): with P = tril(L^H gL),
// gA = L^-H (P + tril(P, -1)^H) / 2 L^-1 (Hermitian for real P's diagonal).
TensorList vjp_cholesky(const VjpCtx& c) {
  const bool upper = c.attrs.b[0];
  Tensor l = upper ? mH(c.output(0)) : c.output(0);
  Tensor gl = upper ? mH(c.grad(0)) : c.grad(0);
  Tensor p = ctril(matmul(mH(l), gl));
  Tensor phi = (p + mH(ctril(p, -1))) * 0.5;
  Tensor s = linalg::solve_triangular(mH(l), phi, /*upper=*/true, /*left=*/true);
  return {linalg::solve_triangular(l, s, /*upper=*/false, /*left=*/false)};
}

// qr of a tall or square A (m >= n), torch's formula:
// gA = [gQ + Q syminvadj(triu(gR R^H - Q^H gQ))] R^-H, syminvadj(X) = X + X^H - Re diag(X).
Tensor qr_backward_tall(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r) {
  Tensor m;
  if (gq.defined() && gr.defined()) m = matmul(gr, mH(r)) - matmul(mH(q), gq);
  else if (gq.defined()) m = -matmul(mH(q), gq);
  else m = matmul(gr, mH(r));
  Tensor up = ctriu(m);
  Tensor sym = up + mH(up);
  sym = sym - cdiag_embed(diag_of(sym)) * 0.5;  // the diagonal: 2 Re(up_ii) halved
  Tensor ga = matmul(q, sym);
  if (gq.defined()) ga = ga + gq;
  return linalg::solve_triangular(mH(r), ga, /*upper=*/false, /*left=*/false);
}

// qr: tall and square A directly; a wide A = [X | Y] (X m x m) has X = Q U and Y = Q V with
// R = [U | V], so gY = Q gV and X's rule sees gQ + Y gV^H. Not for "complete" with m > n (the
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
  if (gv.defined()) gq2 = gq2.defined() ? gq2 + matmul(y, mH(gv)) : matmul(y, mH(gv));
  Tensor gx = qr_backward_tall(gq2, gu, q, u);
  Tensor gy = gv.defined() ? matmul(q, gv) : zeros_like(y);
  return {cat({gx, gy}, -1)};
}

// svd (torch's svd_backward): with E_ij = s_j^2 - s_i^2 and skew(X) = X - X^H,
// gA = U [(skew(U^H gU) s_j + s_i skew(V^H gV)) / E + diag(gS)] V^H, plus the parts of gU and gV
// outside the spans of U and V when A is not square; complex A adds i Im(diag(U^H gU)) / s on
// the diagonal (only gauge-invariant losses are well defined, as in torch). Full matrices are
// narrowed to k columns.
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
  auto skew = [](const Tensor& x) { return x - mH(x); };
  const Tensor s2 = s * s;
  Tensor e = s2.unsqueeze(-2) - s2.unsqueeze(-1);
  e = e + diag_embed(ones_like(s));  // 1 on the diagonal (its entries are replaced below)
  Tensor inner = zeros(with_batch(s, k), u.options());
  Tensor uhgu = gu.defined() ? skew(matmul(mH(u), gu)) : Tensor();
  if (gu.defined()) inner = inner + uhgu * s.unsqueeze(-2);
  if (gvh.defined()) inner = inner + s.unsqueeze(-1) * skew(matmul(vh, mH(gvh)));
  inner = inner / e;
  inner = inner - cdiag_embed(diag_of(inner));
  if (gs.defined()) inner = inner + diag_embed(gs);
  if (is_complex(a.dtype()) && gu.defined()) {
    Tensor d = imag(diag_of(uhgu)) * 0.5 / s;  // Im of skew's diagonal is 2 Im(diag(U^H gU))
    inner = inner + complex(zeros_like(diag_embed(d)), diag_embed(d));
  }
  Tensor ga;
  if (m > n && gu.defined()) {
    Tensor gus = gu / s.unsqueeze(-2);
    ga = matmul(matmul(u, inner) + gus - matmul(u, matmul(mH(u), gus)), vh);
  } else if (m < n && gvh.defined()) {
    Tensor sgv = gvh / s.unsqueeze(-1);
    ga = matmul(u, matmul(inner, vh) + sgv - matmul(matmul(sgv, mH(vh)), vh));
  } else {
    ga = matmul(u, matmul(inner, vh));
  }
  return {ga};
}

// eigh: gA = V [diag(gL) + (V^H gV - (V^H gV)^H) / 2 / E] V^H with E_ij = L_j - L_i (the
// diagonal of the skew part dropped: gauge-invariant losses have none).
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
    Tensor vg = matmul(mH(v), gv);
    Tensor e = w.unsqueeze(-2) - w.unsqueeze(-1);
    e = e + diag_embed(ones_like(w));
    inner = (vg - mH(vg)) * 0.5 / e;
    inner = inner - cdiag_embed(diag_of(inner));
    if (gw.defined()) inner = inner + diag_embed(gw);
  } else {
    inner = diag_embed(gw);
    if (is_complex(v.dtype())) inner = inner.to(v.dtype());
  }
  return {matmul(v, matmul(inner, mH(v)))};
}

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

// lu_solve: gB = A^-H g (A^-1 g when adjoint); gA = -gB X^H (-X gB^H), and gLU from gA through
// A = P L U: gL = tril(P^T gA U^H, -1), gU = triu(L^H P^T gA), with P^T gA = L U A^-1 gA.
TensorList vjp_lu_solve(const VjpCtx& c) {
  const Tensor &lu = c.input(0), &piv = c.input(1), &x = c.output(0), &g = c.grad(0);
  const bool adjoint = c.attrs.b[0];
  Tensor gb = linalg::lu_solve(lu, piv, g, true, !adjoint);
  Tensor glu;
  if (c.needs_grad(0)) {
    Tensor ga = adjoint ? -matmul(x, mH(gb)) : -matmul(gb, mH(x));
    const int64_t n = lu.size(-1);
    Tensor l = ctril(lu, -1) + eye(n, {}, real(lu).options());
    Tensor u = ctriu(lu);
    Tensor pga = matmul(l, matmul(u, linalg::lu_solve(lu, piv, ga)));
    glu = ctril(matmul(pga, mH(u)), -1) + ctriu(matmul(mH(l), pga));
  }
  return {glu, Tensor(), c.needs_grad(2) ? gb : Tensor()};
}

// solve_triangular (left): gB = A^-H g, gA = -gB X^H restricted to A's triangle (without the
// diagonal when unitriangular).
TensorList vjp_solve_triangular(const VjpCtx& c) {
  const bool upper = c.attrs.b[0], unit = c.attrs.b[2];
  Tensor gb = linalg::solve_triangular(mH(c.input(0)), c.grad(0), !upper, true, unit);
  Tensor ga;
  if (c.needs_grad(0)) {
    Tensor full = -matmul(gb, mH(c.output(0)));
    ga = upper ? ctriu(full, unit ? 1 : 0) : ctril(full, unit ? -1 : 0);
  }
  return {ga, c.needs_grad(1) ? gb : Tensor()};
}

// matrix_exp: the upper-right block of exp([[A^H, g], [0, A^H]]).
TensorList vjp_matrix_exp(const VjpCtx& c) {
  const Tensor at = mH(c.input(0));
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
