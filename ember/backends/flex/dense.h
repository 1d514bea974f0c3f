#pragma once
// Portable dense linear algebra on one row-major matrix at a time (flex's linalg kernels, so flex
// needs no LAPACK): partial-pivot LU, triangular and LU solves, Cholesky, Householder QR,
// one-sided Jacobi SVD, cyclic Jacobi eigh and the matrix exponential. Conventions follow
// LAPACK's where they show in results (pivots are 1-based row swaps, Householder reflectors make
// R's diagonal -sign(alpha) * norm), so results match torch's LAPACK-backed ones up to rounding.
// LU, Cholesky, QR, SVD and eigh also take std::complex elements (Hermitian where real ones are
// symmetric, as LAPACK's z routines); for real T the helpers below are the identity.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

namespace ember::flex::dense {

template <class T> struct real_of { using type = T; };
template <class R> struct real_of<std::complex<R>> { using type = R; };
/// The real type of an element type (float for std::complex<float>).
template <class T> using real_t = typename real_of<T>::type;
template <class T> inline constexpr bool is_cplx = !std::is_same_v<T, real_t<T>>;

template <class T> T cj(T x) {
  if constexpr (is_cplx<T>) return std::conj(x);
  else return x;
}
template <class T> real_t<T> re(T x) {
  if constexpr (is_cplx<T>) return x.real();
  else return x;
}
template <class T> real_t<T> im(T x) {
  if constexpr (is_cplx<T>) return x.imag();
  else return real_t<T>(0);
}
template <class T> real_t<T> abs2(T x) {
  if constexpr (is_cplx<T>) return x.real() * x.real() + x.imag() * x.imag();
  else return x * x;
}
// The pivot size LAPACK's getrf compares: |x|, or |re| + |im| (i?amax) for complex.
template <class T> real_t<T> pivot_mag(T x) {
  if constexpr (is_cplx<T>) return std::abs(x.real()) + std::abs(x.imag());
  else return std::abs(x);
}

/// LU with partial pivoting of an m x n matrix in place (L unit lower below the diagonal, U on
/// and above it); piv[j] is the 1-based row swapped with row j. Returns 0, or the 1-based index
/// of the first zero pivot (the factorisation still completes, as LAPACK's getrf does).
template <class T> int64_t lu(T* a, int64_t m, int64_t n, int32_t* piv) {
  const int64_t k = std::min(m, n);
  int64_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    real_t<T> best = pivot_mag(a[j * n + j]);
    for (int64_t i = j + 1; i < m; ++i)
      if (pivot_mag(a[i * n + j]) > best) best = pivot_mag(a[i * n + j]), p = i;
    piv[j] = int32_t(p + 1);
    if (!(best > real_t<T>(0))) {
      if (!info) info = j + 1;
      continue;
    }
    if (p != j) std::swap_ranges(a + j * n, a + j * n + n, a + p * n);
    const T inv = T(1) / a[j * n + j];
    const T* rj = a + j * n;
    for (int64_t i = j + 1; i < m; ++i) {
      T* ri = a + i * n;
      const T l = ri[j] *= inv;
      for (int64_t c = j + 1; c < n; ++c) ri[c] -= l * rj[c];
    }
  }
  return info;
}

/// Solves A X = B (or A^T X = B when `adjoint`) in place in b (n x k) from lu()'s factors.
template <class T>
void lu_solve(const T* lu, int64_t n, const int32_t* piv, T* b, int64_t k, bool adjoint) {
  auto row = [&](int64_t i) { return b + i * k; };
  auto swap_rows = [&](int64_t i, int64_t j) {
    if (i != j) std::swap_ranges(row(i), row(i) + k, row(j));
  };
  if (!adjoint) {
    for (int64_t j = 0; j < n; ++j) swap_rows(j, piv[j] - 1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) {
        const T l = lu[i * n + j];
        if (l != T(0))
          for (int64_t c = 0; c < k; ++c) row(i)[c] -= l * row(j)[c];
      }
    for (int64_t i = n - 1; i >= 0; --i) {
      for (int64_t j = i + 1; j < n; ++j) {
        const T u = lu[i * n + j];
        if (u != T(0))
          for (int64_t c = 0; c < k; ++c) row(i)[c] -= u * row(j)[c];
      }
      const T inv = T(1) / lu[i * n + i];
      for (int64_t c = 0; c < k; ++c) row(i)[c] *= inv;
    }
    return;
  }
  // A^H = U^H L^H P^T: solve U^H y = b, then L^H z = y, then x = P z (A^T for real A).
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      const T u = cj(lu[j * n + i]);
      if (u != T(0))
        for (int64_t c = 0; c < k; ++c) row(i)[c] -= u * row(j)[c];
    }
    const T inv = T(1) / cj(lu[i * n + i]);
    for (int64_t c = 0; c < k; ++c) row(i)[c] *= inv;
  }
  for (int64_t i = n - 1; i >= 0; --i)
    for (int64_t j = i + 1; j < n; ++j) {
      const T l = cj(lu[j * n + i]);
      if (l != T(0))
        for (int64_t c = 0; c < k; ++c) row(i)[c] -= l * row(j)[c];
    }
  for (int64_t j = n - 1; j >= 0; --j) swap_rows(j, piv[j] - 1);
}

/// Solves A X = B in place in b (n x k) for triangular A (only its triangle is read; a unit
/// diagonal is assumed, not read, when `unit`).
template <class T>
void tri_solve(const T* a, int64_t n, T* b, int64_t k, bool upper, bool unit) {
  auto row = [&](int64_t i) { return b + i * k; };
  auto step = [&](int64_t i, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const T v = a[i * n + j];
      if (v != T(0))
        for (int64_t c = 0; c < k; ++c) row(i)[c] -= v * row(j)[c];
    }
    if (!unit) {
      const T inv = T(1) / a[i * n + i];
      for (int64_t c = 0; c < k; ++c) row(i)[c] *= inv;
    }
  };
  if (upper)
    for (int64_t i = n - 1; i >= 0; --i) step(i, i + 1, n);
  else
    for (int64_t i = 0; i < n; ++i) step(i, 0, i);
}

/// Cholesky A = L L^H from the lower triangle of a (the diagonal's real part), written to l
/// (n x n, zeros above the diagonal). Returns 0, or the order of the first leading minor that is
/// not positive-definite.
template <class T> int64_t cholesky(const T* a, int64_t n, T* l) {
  using R = real_t<T>;
  std::fill(l, l + n * n, T(0));
  for (int64_t j = 0; j < n; ++j) {
    R d = re(a[j * n + j]);
    for (int64_t k = 0; k < j; ++k) d -= abs2(l[j * n + k]);
    if (!(d > R(0))) return j + 1;
    const R ljj = std::sqrt(d);
    l[j * n + j] = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      T s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * cj(l[j * n + k]);
      l[i * n + j] = s / ljj;
    }
  }
  return 0;
}

/// Householder QR of an m x n matrix in place (LAPACK's geqrf): R on and above the diagonal
/// (a real diagonal), the reflectors' tails below it, their scales in tau (min(m, n) of them).
template <class T> void householder(T* a, int64_t m, int64_t n, T* tau) {
  using R = real_t<T>;
  const int64_t k = std::min(m, n);
  std::vector<T> w(static_cast<size_t>(std::max<int64_t>(n, 1)));
  for (int64_t j = 0; j < k; ++j) {
    const T alpha = a[j * n + j];
    R xnorm = 0;
    for (int64_t i = j + 1; i < m; ++i) xnorm = std::hypot(xnorm, std::abs(a[i * n + j]));
    if (xnorm == R(0) && im(alpha) == R(0)) {
      tau[j] = 0;
      continue;
    }
    const R beta = -std::copysign(std::hypot(std::hypot(re(alpha), im(alpha)), xnorm), re(alpha));
    tau[j] = (beta - alpha) / beta;
    const T scale = T(1) / (alpha - beta);
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= scale;
    a[j * n + j] = beta;
    // a[j:, j+1:] -= conj(tau) v (v^H a[j:, j+1:]), v = (1, a[j+1:, j]): H^H applied.
    std::fill(w.begin(), w.end(), T(0));
    for (int64_t i = j; i < m; ++i) {
      const T v = i == j ? T(1) : cj(a[i * n + j]);
      for (int64_t c = j + 1; c < n; ++c) w[size_t(c)] += v * a[i * n + c];
    }
    for (int64_t i = j; i < m; ++i) {
      const T v = (i == j ? T(1) : a[i * n + j]) * cj(tau[j]);
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= v * w[size_t(c)];
    }
  }
}

/// The first `cols` columns of Q = H_0 ... H_{k-1} from householder()'s output (LAPACK's orgqr),
/// written to q (m x cols).
template <class T>
void form_q(const T* a, int64_t m, int64_t n, const T* tau, T* q, int64_t cols) {
  const int64_t k = std::min(m, n);
  std::fill(q, q + m * cols, T(0));
  for (int64_t i = 0; i < std::min(m, cols); ++i) q[i * cols + i] = T(1);
  std::vector<T> w(static_cast<size_t>(std::max<int64_t>(cols, 1)));
  for (int64_t j = k - 1; j >= 0; --j) {
    if (tau[j] == T(0)) continue;
    std::fill(w.begin(), w.end(), T(0));
    for (int64_t i = j; i < m; ++i) {
      const T v = i == j ? T(1) : cj(a[i * n + j]);
      for (int64_t c = 0; c < cols; ++c) w[size_t(c)] += v * q[i * cols + c];
    }
    for (int64_t i = j; i < m; ++i) {
      const T v = (i == j ? T(1) : a[i * n + j]) * tau[j];
      for (int64_t c = 0; c < cols; ++c) q[i * cols + c] -= v * w[size_t(c)];
    }
  }
}

/// Completes the first r orthonormal columns of u (m x m) to an orthonormal basis: the
/// remaining columns span the orthogonal complement (through a full QR of the first r).
template <class T> void complete_basis(T* u, int64_t m, int64_t r) {
  if (r >= m) return;
  std::vector<T> a(static_cast<size_t>(m * std::max<int64_t>(r, 1))), tau(size_t(std::max<int64_t>(r, 1)));
  std::vector<T> q(static_cast<size_t>(m * m));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < r; ++j) a[size_t(i * r + j)] = u[i * m + j];
  if (r > 0) householder(a.data(), m, r, tau.data());
  if (r > 0) form_q(a.data(), m, r, tau.data(), q.data(), m);
  else
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) q[size_t(i * m + j)] = i == j ? T(1) : T(0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = r; j < m; ++j) u[i * m + j] = q[size_t(i * m + j)];
}

/// SVD of an m x n matrix (m >= n) by one-sided Jacobi (Hestenes): s (n, descending), u (m x n,
/// columns of zero singular values left zero: `rank` says how many are set), vt (n x n, V^H).
/// A complex pair of columns is first turned by the phase of their inner product, so the
/// rotation that orthogonalises them is real.
template <class T>
void jacobi_svd_tall(const T* a, int64_t m, int64_t n, real_t<T>* s, T* u, T* vt, int64_t& rank) {
  using R = real_t<T>;
  // g's rows are a's columns, so rotations touch contiguous memory.
  std::vector<T> g(static_cast<size_t>(n * m)), v(size_t(n * n), T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) g[size_t(j * m + i)] = a[i * n + j];
  for (int64_t j = 0; j < n; ++j) v[size_t(j * n + j)] = T(1);
  const R eps = std::numeric_limits<R>::epsilon();
  auto dot = [m](const T* x, const T* y) {  // x^H y
    T r = 0;
    for (int64_t i = 0; i < m; ++i) r += cj(x[i]) * y[i];
    return r;
  };
  auto norm2 = [m](const T* x) {
    R r = 0;
    for (int64_t i = 0; i < m; ++i) r += abs2(x[i]);
    return r;
  };
  auto rotate = [](T* x, T* y, int64_t len, R c, R sn) {
    for (int64_t i = 0; i < len; ++i) {
      const T xi = x[i], yi = y[i];
      x[i] = c * xi - sn * yi;
      y[i] = sn * xi + c * yi;
    }
  };
  std::vector<R> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) norms[size_t(j)] = norm2(&g[size_t(j * m)]);
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n - 1; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T* gp = &g[size_t(p * m)];
        T* gq = &g[size_t(q * m)];
        const R alpha = norms[size_t(p)], beta = norms[size_t(q)];
        const T gpq = dot(gp, gq);
        const R gamma = std::abs(gpq);
        if (gamma == R(0) || gamma <= eps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        if constexpr (is_cplx<T>) {  // column q times conj(phase): gp^H gq becomes real
          const T ph = std::conj(gpq / gamma);
          for (int64_t i = 0; i < m; ++i) gq[i] *= ph;
          for (int64_t i = 0; i < n; ++i) v[size_t(q * n + i)] *= ph;
        }
        const R zeta = (beta - alpha) / (R(2) * (is_cplx<T> ? gamma : re(gpq)));
        const R t = std::copysign(R(1), zeta) / (std::abs(zeta) + std::sqrt(R(1) + zeta * zeta));
        const R c = R(1) / std::sqrt(R(1) + t * t), sn = c * t;
        rotate(gp, gq, m, c, sn);
        rotate(&v[size_t(p * n)], &v[size_t(q * n)], n, c, sn);
        norms[size_t(p)] = norm2(gp);
        norms[size_t(q)] = norm2(gq);
      }
    if (!rotated) break;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<R> sv(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) sv[size_t(j)] = std::sqrt(norm2(&g[size_t(j * m)]));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return sv[size_t(x)] > sv[size_t(y)]; });
  const R tiny = sv.empty() ? R(0) : sv[size_t(order[0])] * eps * R(m) ;
  rank = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = order[size_t(k)];
    s[k] = sv[size_t(j)];
    for (int64_t c = 0; c < n; ++c) vt[k * n + c] = cj(v[size_t(j * n + c)]);
    const bool set = s[k] > tiny && s[k] > std::numeric_limits<R>::min();
    if (set) ++rank;
    for (int64_t i = 0; i < m; ++i) u[i * n + k] = set ? g[size_t(j * m + i)] / s[k] : T(0);
  }
}

/// Eigen-decomposition of a symmetric (Hermitian) n x n matrix (a holds it whole) by cyclic
/// Jacobi: eigenvalues ascending in w, eigenvectors as the columns of z (n x n) when z is given.
/// A complex pivot a_pq is made real by a diagonal phase on row and column q first.
template <class T> void jacobi_eigh(std::vector<T> a, int64_t n, real_t<T>* w, T* z) {
  using R = real_t<T>;
  std::vector<T> vt(size_t(n * n), T(0));  // rows are eigenvectors
  for (int64_t j = 0; j < n; ++j) vt[size_t(j * n + j)] = T(1);
  auto at = [&](int64_t i, int64_t j) -> T& { return a[size_t(i * n + j)]; };
  const R eps = std::numeric_limits<R>::epsilon();
  for (int64_t i = 0; i < n; ++i) at(i, i) = re(at(i, i));
  for (int sweep = 0; sweep < 100; ++sweep) {
    R off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        total += abs2(at(i, j));
        if (i != j) off += abs2(at(i, j));
      }
    if (off <= eps * eps * total || off == R(0)) break;
    for (int64_t p = 0; p < n - 1; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (at(p, q) == T(0)) continue;
        if constexpr (is_cplx<T>) {  // A <- P^H A P, P = diag(.., conj(phase) at q, ..)
          const R mag = std::abs(at(p, q));
          const T ph = std::conj(at(p, q) / mag);
          for (int64_t r = 0; r < n; ++r) {
            if (r == q) continue;
            at(r, q) *= ph;
            at(q, r) = std::conj(at(r, q));
          }
          for (int64_t r = 0; r < n; ++r) vt[size_t(q * n + r)] *= ph;
          at(p, q) = at(q, p) = mag;
        }
        const R apq = re(at(p, q));
        const R theta = (re(at(q, q)) - re(at(p, p))) / (R(2) * apq);
        const R t = std::copysign(R(1), theta) / (std::abs(theta) + std::sqrt(theta * theta + R(1)));
        const R c = R(1) / std::sqrt(t * t + R(1)), s = t * c, tau = s / (R(1) + c);
        at(p, p) -= t * apq;
        at(q, q) += t * apq;
        at(p, q) = at(q, p) = T(0);
        for (int64_t r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const T arp = at(r, p), arq = at(r, q);
          at(r, p) = arp - s * (arq + tau * arp);
          at(r, q) = arq + s * (arp - tau * arq);
          at(p, r) = cj(at(r, p));
          at(q, r) = cj(at(r, q));
        }
        T* vp = &vt[size_t(p * n)];
        T* vq = &vt[size_t(q * n)];
        for (int64_t r = 0; r < n; ++r) {
          const T x = vp[r], y = vq[r];
          vp[r] = x - s * (y + tau * x);
          vq[r] = y + s * (x - tau * y);
        }
      }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return re(at(x, x)) < re(at(y, y)); });
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = order[size_t(k)];
    w[k] = re(at(j, j));
    if (z)
      for (int64_t r = 0; r < n; ++r) z[r * n + k] = vt[size_t(j * n + r)];
  }
}

/// c (n x n) = a @ b, all n x n.
template <class T> void matmul_square(const T* a, const T* b, T* c, int64_t n) {
  std::fill(c, c + n * n, T(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const T x = a[i * n + k];
      if (x == T(0)) continue;
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += x * b[k * n + j];
    }
}

/// exp(a) for an n x n matrix: scaling and squaring around a degree-18 Taylor polynomial (the
/// scaled matrix has 1-norm <= 1/2, where the truncation error is below f64's rounding).
template <class T> void matrix_exp(const T* a, int64_t n, T* out) {
  using R = real_t<T>;
  R norm1 = 0;
  for (int64_t j = 0; j < n; ++j) {
    R col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::abs(a[i * n + j]);
    norm1 = std::max(norm1, col);
  }
  int squarings = 0;
  if (norm1 > R(0.5)) squarings = int(std::ceil(std::log2(double(norm1) / 0.5)));
  if (!std::isfinite(double(norm1))) squarings = 0;
  const T scale = T(R(std::ldexp(1.0, -squarings)));
  std::vector<T> b(static_cast<size_t>(n * n)), e(size_t(n * n)), tmp(size_t(n * n));
  for (int64_t i = 0; i < n * n; ++i) b[size_t(i)] = a[i] * scale;
  std::fill(e.begin(), e.end(), T(0));
  for (int64_t i = 0; i < n; ++i) e[size_t(i * n + i)] = T(1);
  for (int k = 18; k >= 1; --k) {  // e = I + b e / k (Horner)
    matmul_square(b.data(), e.data(), tmp.data(), n);
    for (int64_t i = 0; i < n * n; ++i) e[size_t(i)] = tmp[size_t(i)] / T(R(k));
    for (int64_t i = 0; i < n; ++i) e[size_t(i * n + i)] += T(1);
  }
  for (int s = 0; s < squarings; ++s) {
    matmul_square(e.data(), e.data(), tmp.data(), n);
    e.swap(tmp);
  }
  std::copy(e.begin(), e.end(), out);
}

}  // namespace ember::flex::dense
