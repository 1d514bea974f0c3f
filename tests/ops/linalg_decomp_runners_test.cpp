// Golden runners for the matrix decompositions and functions (tests/data/linalg_decomp.json,
// tests/gen/gen_linalg_decomp.py). qr, svd and eigh fix their factors' signs as the generator
// does: Q's columns by the sign of R's diagonal, singular and eigen vectors by the sign of their
// largest entry; complete bases past min(m, n) are checked through Q^T Q = I. Complex factors
// (tests/gen/gen_linalg_complex.py) are fixed by phases instead of signs: conj(p) / |p|.
#include <cmath>

#include "golden.h"

namespace {

using namespace ember;
using ember::test::Case;
using ember::test::inputs_of;
using ember::test::ints;
using ember::test::opt_int;

Tensor mH(const Tensor& t) { return conj(t).transpose(-2, -1); }

// The sign of each column's largest-magnitude entry (1 for a zero column), [..., cols].
Tensor colsign(const Tensor& v) {
  if (v.size(-2) == 0 || v.size(-1) == 0) {
    Shape s(std::span<const int64_t>(v.shape().data(), v.shape().size() - 2));
    s.push_back(v.size(-1));
    return ones(s, v.options());
  }
  Tensor idx = argmax(abs(v), -2, true);
  Tensor s = sign(gather(v, -2, idx)).squeeze(-2);
  return where(s == 0.0, 1.0, s);
}

// d / |d| elementwise (the sign of a real d), 1 where d is 0.
Tensor unit(const Tensor& d) {
  if (!d.is_complex()) {
    Tensor s = sign(d);
    return where(s == 0.0, 1.0, s);
  }
  Tensor m = abs(d);
  return where(m == 0.0, 1.0, d / where(m == 0.0, 1.0, m));
}

// What makes each column's largest-magnitude entry p real and positive: sign(p), or conj(p)/|p|.
Tensor colphase(const Tensor& v) {
  if (!v.is_complex()) return colsign(v);
  if (v.size(-2) == 0 || v.size(-1) == 0) {
    Shape s(std::span<const int64_t>(v.shape().data(), v.shape().size() - 2));
    s.push_back(v.size(-1));
    return ones(s, v.options());
  }
  return conj(unit(gather(v, -2, argmax(abs(v), -2, true)).squeeze(-2)));
}

double num_attr(const test::json& a, const char* key, double fallback) {
  if (!a.contains(key)) return fallback;
  const auto& v = a[key];
  if (v.is_string()) return v.get<std::string>() == "inf" ? INFINITY : -INFINITY;
  return v.get<double>();
}

std::optional<double> opt_double(const test::json& a, const char* key) {
  if (!a.contains(key)) return std::nullopt;
  return a[key].get<double>();
}

}  // namespace

EMBER_RUNNER(linalg_inv) { return {linalg::inv(inputs_of(c, dev)[0])}; }
EMBER_RUNNER(linalg_det) { return {linalg::det(inputs_of(c, dev)[0])}; }
EMBER_RUNNER(linalg_slogdet) {
  auto [s, l] = linalg::slogdet(inputs_of(c, dev)[0]);
  return {s, l};
}
EMBER_RUNNER(linalg_solve) {
  auto in = inputs_of(c, dev);
  return {linalg::solve(in[0], in[1], c.attrs.value("left", true))};
}
EMBER_RUNNER(linalg_cholesky) {
  return {linalg::cholesky(inputs_of(c, dev)[0], c.attrs.value("upper", false))};
}
EMBER_RUNNER(linalg_qr) {
  const Tensor a = inputs_of(c, dev)[0];
  const std::string mode = c.attrs.value("mode", std::string("reduced"));
  auto [q, r] = linalg::qr(a, mode);
  const int64_t k = std::min(a.size(-2), a.size(-1));
  Tensor d = unit(diagonal(r, 0, -2, -1).narrow(-1, 0, k));
  Tensor rk = r.narrow(-2, 0, k) * conj(d).unsqueeze(-1);
  Tensor rf = r.size(-2) > k ? cat({rk, r.narrow(-2, k, r.size(-2) - k)}, -2) : rk;
  if (mode == "r") return {rf};
  return {q.narrow(-1, 0, k) * d.unsqueeze(-2), rf, matmul(mH(q), q)};
}
EMBER_RUNNER(linalg_svd) {
  const Tensor a = inputs_of(c, dev)[0];
  const bool full = c.attrs.value("full_matrices", true);
  auto [u, s, vh] = linalg::svd(a, full);
  const int64_t k = std::min(a.size(-2), a.size(-1));
  Tensor uk = u.narrow(-1, 0, k), vk = vh.narrow(-2, 0, k);
  Tensor sg = colphase(uk);
  TensorList out = {uk * sg.unsqueeze(-2), s, vk * conj(sg).unsqueeze(-1)};
  if (full) {
    out.push_back(matmul(mH(u), u));
    out.push_back(matmul(vh, mH(vh)));
  }
  return out;
}
EMBER_RUNNER(linalg_svdvals) { return {linalg::svdvals(inputs_of(c, dev)[0])}; }
EMBER_RUNNER(linalg_eigh) {
  auto [w, v] = linalg::eigh(inputs_of(c, dev)[0], c.attrs.value("UPLO", std::string("L")));
  return {w, v * colphase(v).unsqueeze(-2)};
}
EMBER_RUNNER(linalg_eigvalsh) {
  return {linalg::eigvalsh(inputs_of(c, dev)[0], c.attrs.value("UPLO", std::string("L")))};
}
EMBER_RUNNER(linalg_lu_factor) {
  auto [lu, piv] = linalg::lu_factor(inputs_of(c, dev)[0]);
  return {lu, piv};
}
EMBER_RUNNER(linalg_lu_solve) {
  auto in = inputs_of(c, dev);
  return {linalg::lu_solve(in[0], in[1], in[2], c.attrs.value("left", true),
                           c.attrs.value("adjoint", false))};
}
EMBER_RUNNER(linalg_solve_triangular) {
  auto in = inputs_of(c, dev);
  return {linalg::solve_triangular(in[0], in[1], c.attrs.at("upper").get<bool>(),
                                   c.attrs.value("left", true), c.attrs.value("unitriangular", false))};
}
EMBER_RUNNER(linalg_lstsq) {
  auto in = inputs_of(c, dev);
  std::optional<std::string> driver;
  if (c.attrs.contains("driver")) driver = c.attrs["driver"].get<std::string>();
  auto [x, res, rank, sv] = linalg::lstsq(in[0], in[1], std::nullopt, driver);
  return {x, res, rank, sv};
}
EMBER_RUNNER(linalg_pinv) {
  return {linalg::pinv(inputs_of(c, dev)[0], opt_double(c.attrs, "atol"), opt_double(c.attrs, "rtol"),
                       c.attrs.value("hermitian", false))};
}
EMBER_RUNNER(linalg_matrix_rank) {
  return {linalg::matrix_rank(inputs_of(c, dev)[0], opt_double(c.attrs, "atol"),
                              opt_double(c.attrs, "rtol"), c.attrs.value("hermitian", false))};
}
EMBER_RUNNER(linalg_matrix_norm) {
  const Tensor a = inputs_of(c, dev)[0];
  const Shape dim = ints(c.attrs, "dim", {-2, -1});
  const bool keep = c.attrs.value("keepdim", false);
  const auto& ord = c.attrs.at("ord");
  if (ord.is_string() && (ord == "fro" || ord == "nuc"))
    return {linalg::matrix_norm(a, ord.get<std::string>(), dim, keep)};
  return {linalg::matrix_norm(a, num_attr(c.attrs, "ord", 2), dim, keep)};
}
EMBER_RUNNER(linalg_vector_norm) {
  const Tensor x = inputs_of(c, dev)[0];
  std::optional<DType> dt;
  if (c.attrs.contains("dtype")) dt = dtype_from_name(c.attrs["dtype"].get<std::string>());
  return {linalg::vector_norm(x, num_attr(c.attrs, "ord", 2), ints(c.attrs, "dim", {}),
                              c.attrs.value("keepdim", false), dt)};
}
EMBER_RUNNER(linalg_cross) {
  auto in = inputs_of(c, dev);
  return {linalg::cross(in[0], in[1], opt_int(c.attrs, "dim").value_or(-1))};
}
EMBER_RUNNER(trace) { return {trace(inputs_of(c, dev)[0])}; }
EMBER_RUNNER(diag) { return {diag(inputs_of(c, dev)[0], opt_int(c.attrs, "diagonal").value_or(0))}; }
EMBER_RUNNER(diag_embed) {
  return {diag_embed(inputs_of(c, dev)[0], opt_int(c.attrs, "offset").value_or(0),
                     opt_int(c.attrs, "dim1").value_or(-2), opt_int(c.attrs, "dim2").value_or(-1))};
}
EMBER_RUNNER(matrix_power) {
  return {linalg::matrix_power(inputs_of(c, dev)[0], c.attrs.at("n").get<int64_t>())};
}
EMBER_RUNNER(matrix_exp) { return {linalg::matrix_exp(inputs_of(c, dev)[0])}; }

// eig: the canonical form tests/gen/gen_linalg_eig.py records (sorted by re + 0.1 im, each
// eigenvector's largest entry real and positive, and the residual A V - V diag(w)).
EMBER_RUNNER(linalg_eig) {
  const Tensor a = inputs_of(c, dev)[0];
  if (c.attrs.value("eigenvalues_only", false)) {
    Tensor w = linalg::eigvals(a);
    return {gather(w, -1, argsort(real(w) + imag(w) * 0.1, -1))};
  }
  auto [w, v] = linalg::eig(a);
  Tensor idx = argsort(real(w) + imag(w) * 0.1, -1);
  w = gather(w, -1, idx);
  v = gather(v, -1, idx.unsqueeze(-2).expand(v.shape()));
  Tensor p = gather(v, -2, argmax(abs(v), -2, true));
  v = v * (conj(p) / abs(p));
  return {w, v, matmul(a.to(v.dtype()), v) - v * w.unsqueeze(-2)};
}
