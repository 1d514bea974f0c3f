// flex's linalg_eig: the eigen-decomposition of a general square matrix without LAPACK. Each
// matrix, real or complex, is computed in complex double: Householder reduction to Hessenberg
// form, then single-shift QR (Wilkinson shifts, Givens rotations, exceptional shifts when it
// stalls) down to the Schur form T = Q^H A Q, the eigenvectors of T by back substitution, and
// V = Q X normalised as LAPACK's geev does (norm 1, the largest component real and positive).
// For real input, eigenvalues whose imaginary part is rounding noise are made real, with real
// eigenvectors, as LAPACK returns them.
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/linalg_kernel.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/linalg_detail.h"

namespace ember::flex {
namespace {

using Cx = std::complex<double>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

double abs1(Cx z) { return std::abs(z.real()) + std::abs(z.imag()); }

// h (n x n, row-major) to upper Hessenberg form in place; q accumulates the reflections.
void hessenberg(std::vector<Cx>& h, std::vector<Cx>& q, int64_t n) {
  std::vector<Cx> v(static_cast<size_t>(n));
  for (int64_t k = 0; k + 2 < n; ++k) {
    double norm = 0;
    for (int64_t i = k + 1; i < n; ++i) norm += std::norm(h[size_t(i * n + k)]);
    norm = std::sqrt(norm);
    if (norm == 0) continue;
    const Cx x0 = h[size_t((k + 1) * n + k)];
    const Cx alpha = -(std::abs(x0) > 0 ? x0 / std::abs(x0) : Cx(1)) * norm;
    double vn = 0;
    for (int64_t i = k + 1; i < n; ++i) {
      v[size_t(i)] = h[size_t(i * n + k)] - (i == k + 1 ? alpha : Cx(0));
      vn += std::norm(v[size_t(i)]);
    }
    if (vn == 0) continue;
    const double s = 2 / vn;  // H = I - s v v^H
    for (int64_t j = k; j < n; ++j) {  // H h
      Cx d = 0;
      for (int64_t i = k + 1; i < n; ++i) d += std::conj(v[size_t(i)]) * h[size_t(i * n + j)];
      d *= s;
      for (int64_t i = k + 1; i < n; ++i) h[size_t(i * n + j)] -= v[size_t(i)] * d;
    }
    for (auto* m : {&h, &q})  // (H h) H and q H
      for (int64_t i = 0; i < n; ++i) {
        Cx d = 0;
        for (int64_t j = k + 1; j < n; ++j) d += (*m)[size_t(i * n + j)] * v[size_t(j)];
        d *= s;
        for (int64_t j = k + 1; j < n; ++j) (*m)[size_t(i * n + j)] -= d * std::conj(v[size_t(j)]);
      }
    for (int64_t i = k + 2; i < n; ++i) h[size_t(i * n + k)] = 0;
  }
}

// The Wilkinson shift: the eigenvalue of the trailing 2 x 2 block [a b; c d] nearer d.
Cx wilkinson(Cx a, Cx b, Cx c, Cx d) {
  const Cx m = (a + d) * 0.5, disc = std::sqrt((a - d) * (a - d) * 0.25 + b * c);
  const Cx r1 = m + disc, r2 = m - disc;
  return std::abs(r1 - d) < std::abs(r2 - d) ? r1 : r2;
}

// Hessenberg h to upper triangular (the Schur form) in place, z accumulating the rotations.
// False when an eigenvalue took too many iterations.
bool schur(std::vector<Cx>& h, std::vector<Cx>& z, int64_t n) {
  double hnorm = 0;
  for (const Cx& x : h) hnorm = std::max(hnorm, abs1(x));
  std::vector<double> cs(static_cast<size_t>(n));
  std::vector<Cx> sn(static_cast<size_t>(n));
  auto H = [&](int64_t i, int64_t j) -> Cx& { return h[size_t(i * n + j)]; };
  int64_t hi = n - 1;
  int iter = 0;
  while (hi > 0) {
    int64_t l = hi;
    for (; l > 0; --l) {
      double s = abs1(H(l - 1, l - 1)) + abs1(H(l, l));
      if (s == 0) s = hnorm;
      if (abs1(H(l, l - 1)) <= kEps * s) {
        H(l, l - 1) = 0;
        break;
      }
    }
    if (l == hi) {  // H(hi, hi) has converged
      --hi;
      iter = 0;
      continue;
    }
    if (++iter > 100) return false;
    Cx mu = wilkinson(H(hi - 1, hi - 1), H(hi - 1, hi), H(hi, hi - 1), H(hi, hi));
    if (iter % 10 == 0)  // stalled: an exceptional shift breaks the cycle
      mu = H(hi, hi) + 0.75 * abs1(H(hi, hi - 1)) +
           (hi >= 2 ? 0.4375 * abs1(H(hi - 1, hi - 2)) : 0.0);
    for (int64_t k = l; k <= hi; ++k) H(k, k) -= mu;
    for (int64_t k = l; k < hi; ++k) {  // R = G (H - mu I), row rotations
      const Cx a = H(k, k), b = H(k + 1, k);
      const double na = std::abs(a), nrm = std::hypot(na, std::abs(b));
      double c = 1;
      Cx s = 0;
      if (nrm != 0) {
        if (na == 0) c = 0, s = 1;
        else c = na / nrm, s = (a / na) * std::conj(b) / nrm;
      }
      cs[size_t(k)] = c, sn[size_t(k)] = s;
      for (int64_t j = k; j < n; ++j) {
        const Cx x = H(k, j), y = H(k + 1, j);
        H(k, j) = c * x + s * y;
        H(k + 1, j) = -std::conj(s) * x + c * y;
      }
    }
    for (int64_t k = l; k < hi; ++k) {  // R G^H (and z G^H)
      const double c = cs[size_t(k)];
      const Cx s = sn[size_t(k)];
      for (int64_t i = 0; i <= k + 1; ++i) {
        const Cx x = H(i, k), y = H(i, k + 1);
        H(i, k) = x * c + y * std::conj(s);
        H(i, k + 1) = -x * s + y * c;
      }
      for (int64_t i = 0; i < n; ++i) {
        Cx& x = z[size_t(i * n + k)];
        Cx& y = z[size_t(i * n + k + 1)];
        const Cx x0 = x;
        x = x0 * c + y * std::conj(s);
        y = -x0 * s + y * c;
      }
    }
    for (int64_t k = l; k <= hi; ++k) H(k, k) += mu;
  }
  return true;
}

// Eigenvalues w and (when v is given) eigenvectors of the n x n matrix a (row-major, consumed).
bool eig_dense(std::vector<Cx>& a, int64_t n, bool real_input, Cx* w, Cx* v) {
  std::vector<Cx> q(static_cast<size_t>(n * n), Cx(0));
  for (int64_t i = 0; i < n; ++i) q[size_t(i * n + i)] = 1;
  hessenberg(a, q, n);
  if (!schur(a, q, n)) return false;
  double tnorm = 0;
  for (const Cx& x : a) tnorm = std::max(tnorm, std::abs(x));
  const double small = std::max(tnorm, 1.0) * kEps;
  for (int64_t k = 0; k < n; ++k) {
    w[k] = a[size_t(k * n + k)];
    if (real_input && std::abs(w[k].imag()) <= double(n) * small) w[k].imag(0);
  }
  if (!v) return true;
  std::vector<Cx> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {  // T x = w_k x, x[k] = 1, x[j > k] = 0
    const Cx lk = a[size_t(k * n + k)];
    x[size_t(k)] = 1;
    for (int64_t i = k - 1; i >= 0; --i) {
      Cx s = 0;
      for (int64_t j = i + 1; j <= k; ++j) s += a[size_t(i * n + j)] * x[size_t(j)];
      Cx d = a[size_t(i * n + i)] - lk;
      if (std::abs(d) < small) d = small;
      x[size_t(i)] = -s / d;
    }
    // v_k = Q x, norm 1, the largest component real and positive (LAPACK's geev)
    double norm = 0, big = -1;
    int64_t at = 0;
    std::vector<Cx> col(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      Cx s = 0;
      for (int64_t j = 0; j <= k; ++j) s += q[size_t(i * n + j)] * x[size_t(j)];
      col[size_t(i)] = s;
      norm += std::norm(s);
      if (std::norm(s) > big) big = std::norm(s), at = i;
    }
    const Cx rot = std::conj(col[size_t(at)]) / (std::sqrt(big) * std::sqrt(norm));
    double rn = 0;
    for (int64_t i = 0; i < n; ++i) {
      col[size_t(i)] *= rot;
      if (real_input && w[k].imag() == 0) col[size_t(i)].imag(0);
      rn += std::norm(col[size_t(i)]);
    }
    rn = 1 / std::sqrt(rn);
    for (int64_t i = 0; i < n; ++i) v[i * n + k] = col[size_t(i)] * rn;
  }
  return true;
}

template <class T, class In>
void eig_batch(const OpCall& c, const Tensor& a, Tensor& w, Tensor& v) {
  using linalg_kernel::data;
  const int64_t n = a.size(-1), nb = linalg_detail::batch_count(a);
  const bool real_input = !is_complex(a.dtype());
  std::vector<int> failed(static_cast<size_t>(nb), 0);
  auto one = [&](int64_t b) {
    std::vector<Cx> m(static_cast<size_t>(n * n)), wb(static_cast<size_t>(n)), vb(v.defined() ? size_t(n * n) : 0);
    const In* src = data<In>(a) + b * n * n;
    for (int64_t i = 0; i < n * n; ++i) m[size_t(i)] = Cx(src[i]);
    if (!eig_dense(m, n, real_input, wb.data(), v.defined() ? vb.data() : nullptr)) {
      failed[size_t(b)] = 1;
      return;
    }
    auto* wo = data<std::complex<T>>(w) + b * n;
    for (int64_t i = 0; i < n; ++i) wo[i] = std::complex<T>(wb[size_t(i)]);
    if (v.defined()) {
      auto* vo = data<std::complex<T>>(v) + b * n * n;
      for (int64_t i = 0; i < n * n; ++i) vo[i] = std::complex<T>(vb[size_t(i)]);
    }
  };
  if (nb > 1 && nb * n * n * n >= (int64_t(1) << 15))
    parallel_for(nb, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) one(b);
    });
  else
    for (int64_t b = 0; b < nb; ++b) one(b);
  for (int64_t b = 0; b < nb; ++b)
    if (failed[size_t(b)])
      ember::detail::throw_value(op_name(c.op), (a.dim() > 2 ? "(batch element " + std::to_string(b) + "): " : std::string()) +
                                             "the algorithm failed to converge because the input "
                                             "matrix is ill-conditioned or has too many repeated "
                                             "eigenvalues");
}

TensorList k_eig(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  Tensor w = new_output(c, 0), v = c.attrs.b[0] ? new_output(c, 1) : Tensor();
  switch (a.dtype()) {
    case DType::F32: eig_batch<float, float>(c, a, w, v); break;
    case DType::F64: eig_batch<double, double>(c, a, w, v); break;
    case DType::C64: eig_batch<float, std::complex<float>>(c, a, w, v); break;
    default: eig_batch<double, std::complex<double>>(c, a, w, v); break;
  }
  if (v.defined()) return {w, v};
  return {w};
}

}  // namespace

void register_flex_eig(BackendImpl& b) {
  b.set_kernel(OpId::linalg_eig, k_eig, linalg_kernel::kReal | kComplexDTypes);
}

}  // namespace ember::flex
