#pragma once
// Portable dense linear algebra on one row-major matrix at a time (flex's linalg kernels, so flex
// needs no LAPACK): partial-pivot LU, triangular and LU solves, Cholesky, Householder QR,
// one-sided Jacobi SVD, cyclic Jacobi eigh and the matrix exponential. Conventions follow
// LAPACK's where they show in results (pivots are 1-based row swaps, Householder reflectors make
// R's diagonal -sign(alpha) * norm), so results match torch's LAPACK-backed ones up to rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace ember::flex::dense {

/// LU with partial pivoting of an m x n matrix in place (L unit lower below the diagonal, U on
/// and above it); piv[j] is the 1-based row swapped with row j. Returns 0, or the 1-based index
/// of the first zero pivot (the factorisation still completes, as LAPACK's getrf does).
template <class T> int64_t lu(T* a, int64_t m, int64_t n, int32_t* piv) {
  const int64_t k = std::min(m, n);
  int64_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    T best = std::abs(a[j * n + j]);
    for (int64_t i = j + 1; i < m; ++i)
      if (std::abs(a[i * n + j]) > best) best = std::abs(a[i * n + j]), p = i;
    piv[j] = int32_t(p + 1);
    if (!(best > T(0))) {
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
  // A^T = U^T L^T P^T: solve U^T y = b, then L^T z = y, then x = P z.
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      const T u = lu[j * n + i];
      if (u != T(0))
        for (int64_t c = 0; c < k; ++c) row(i)[c] -= u * row(j)[c];
    }
    const T inv = T(1) / lu[i * n + i];
    for (int64_t c = 0; c < k; ++c) row(i)[c] *= inv;
  }
  for (int64_t i = n - 1; i >= 0; --i)
    for (int64_t j = i + 1; j < n; ++j) {
      const T l = lu[j * n + i];
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

/// Cholesky A = L L^T from the lower triangle of a, written to l (n x n, zeros above the
/// diagonal). Returns 0, or the order of the first leading minor that is not positive-definite.
template <class T> int64_t cholesky(const T* a, int64_t n, T* l) {
  std::fill(l, l + n * n, T(0));
  for (int64_t j = 0; j < n; ++j) {
    T d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
    if (!(d > T(0))) return j + 1;
    const T ljj = std::sqrt(d);
    l[j * n + j] = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      T s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = s / ljj;
    }
  }
  return 0;
}

/// Householder QR of an m x n matrix in place (LAPACK's geqrf): R on and above the diagonal,
/// the reflectors' tails below it, their scales in tau (min(m, n) of them).
template <class T> void householder(T* a, int64_t m, int64_t n, T* tau) {
  const int64_t k = std::min(m, n);
  std::vector<T> w(static_cast<size_t>(std::max<int64_t>(n, 1)));
  for (int64_t j = 0; j < k; ++j) {
    const T alpha = a[j * n + j];
    T xnorm = 0;
    for (int64_t i = j + 1; i < m; ++i) xnorm = std::hypot(xnorm, a[i * n + j]);
    if (xnorm == T(0)) {
      tau[j] = 0;
      continue;
    }
    const T beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
    tau[j] = (beta - alpha) / beta;
    const T scale = T(1) / (alpha - beta);
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= scale;
    a[j * n + j] = beta;
    // a[j:, j+1:] -= tau v (v^T a[j:, j+1:]), v = (1, a[j+1:, j]).
    std::fill(w.begin(), w.end(), T(0));
    for (int64_t i = j; i < m; ++i) {
      const T v = i == j ? T(1) : a[i * n + j];
      for (int64_t c = j + 1; c < n; ++c) w[size_t(c)] += v * a[i * n + c];
    }
    for (int64_t i = j; i < m; ++i) {
      const T v = (i == j ? T(1) : a[i * n + j]) * tau[j];
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
      const T v = i == j ? T(1) : a[i * n + j];
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
/// columns of zero singular values left zero: `rank` says how many are set), vt (n x n).
template <class T>
void jacobi_svd_tall(const T* a, int64_t m, int64_t n, T* s, T* u, T* vt, int64_t& rank) {
  // g's rows are a's columns, so rotations touch contiguous memory.
  std::vector<T> g(static_cast<size_t>(n * m)), v(size_t(n * n), T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) g[size_t(j * m + i)] = a[i * n + j];
  for (int64_t j = 0; j < n; ++j) v[size_t(j * n + j)] = T(1);
  const T eps = std::numeric_limits<T>::epsilon();
  auto dot = [m](const T* x, const T* y) {
    T r = 0;
    for (int64_t i = 0; i < m; ++i) r += x[i] * y[i];
    return r;
  };
  auto rotate = [](T* x, T* y, int64_t len, T c, T sn) {
    for (int64_t i = 0; i < len; ++i) {
      const T xi = x[i], yi = y[i];
      x[i] = c * xi - sn * yi;
      y[i] = sn * xi + c * yi;
    }
  };
  std::vector<T> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) norms[size_t(j)] = dot(&g[size_t(j * m)], &g[size_t(j * m)]);
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n - 1; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T* gp = &g[size_t(p * m)];
        T* gq = &g[size_t(q * m)];
        const T alpha = norms[size_t(p)], beta = norms[size_t(q)];
        const T gamma = dot(gp, gq);
        if (gamma == T(0) || std::abs(gamma) <= eps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const T zeta = (beta - alpha) / (T(2) * gamma);
        const T t = std::copysign(T(1), zeta) / (std::abs(zeta) + std::sqrt(T(1) + zeta * zeta));
        const T c = T(1) / std::sqrt(T(1) + t * t), sn = c * t;
        rotate(gp, gq, m, c, sn);
        rotate(&v[size_t(p * n)], &v[size_t(q * n)], n, c, sn);
        norms[size_t(p)] = dot(gp, gp);
        norms[size_t(q)] = dot(gq, gq);
      }
    if (!rotated) break;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<T> sv(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) sv[size_t(j)] = std::sqrt(dot(&g[size_t(j * m)], &g[size_t(j * m)]));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return sv[size_t(x)] > sv[size_t(y)]; });
  const T tiny = sv.empty() ? T(0) : sv[size_t(order[0])] * eps * T(m) ;
  rank = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = order[size_t(k)];
    s[k] = sv[size_t(j)];
    for (int64_t c = 0; c < n; ++c) vt[k * n + c] = v[size_t(j * n + c)];
    const bool set = s[k] > tiny && s[k] > std::numeric_limits<T>::min();
    if (set) ++rank;
    for (int64_t i = 0; i < m; ++i) u[i * n + k] = set ? g[size_t(j * m + i)] / s[k] : T(0);
  }
}

/// Eigen-decomposition of a symmetric n x n matrix (a holds it whole) by cyclic Jacobi:
/// eigenvalues ascending in w, eigenvectors as the columns of z (n x n) when z is given.
template <class T> void jacobi_eigh(std::vector<T> a, int64_t n, T* w, T* z) {
  std::vector<T> vt(size_t(n * n), T(0));  // rows are eigenvectors
  for (int64_t j = 0; j < n; ++j) vt[size_t(j * n + j)] = T(1);
  auto at = [&](int64_t i, int64_t j) -> T& { return a[size_t(i * n + j)]; };
  const T eps = std::numeric_limits<T>::epsilon();
  for (int sweep = 0; sweep < 100; ++sweep) {
    T off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        total += at(i, j) * at(i, j);
        if (i != j) off += at(i, j) * at(i, j);
      }
    if (off <= eps * eps * total || off == T(0)) break;
    for (int64_t p = 0; p < n - 1; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const T apq = at(p, q);
        if (apq == T(0)) continue;
        const T theta = (at(q, q) - at(p, p)) / (T(2) * apq);
        const T t = std::copysign(T(1), theta) / (std::abs(theta) + std::sqrt(theta * theta + T(1)));
        const T c = T(1) / std::sqrt(t * t + T(1)), s = t * c, tau = s / (T(1) + c);
        at(p, p) -= t * apq;
        at(q, q) += t * apq;
        at(p, q) = at(q, p) = T(0);
        for (int64_t r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const T arp = at(r, p), arq = at(r, q);
          at(r, p) = at(p, r) = arp - s * (arq + tau * arp);
          at(r, q) = at(q, r) = arq + s * (arp - tau * arq);
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
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return at(x, x) < at(y, y); });
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = order[size_t(k)];
    w[k] = at(j, j);
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
  T norm1 = 0;
  for (int64_t j = 0; j < n; ++j) {
    T col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::abs(a[i * n + j]);
    norm1 = std::max(norm1, col);
  }
  int squarings = 0;
  if (norm1 > T(0.5)) squarings = int(std::ceil(std::log2(double(norm1) / 0.5)));
  if (!std::isfinite(double(norm1))) squarings = 0;
  const T scale = T(std::ldexp(1.0, -squarings));
  std::vector<T> b(static_cast<size_t>(n * n)), e(size_t(n * n)), tmp(size_t(n * n));
  for (int64_t i = 0; i < n * n; ++i) b[size_t(i)] = a[i] * scale;
  std::fill(e.begin(), e.end(), T(0));
  for (int64_t i = 0; i < n; ++i) e[size_t(i * n + i)] = T(1);
  for (int k = 18; k >= 1; --k) {  // e = I + b e / k (Horner)
    matmul_square(b.data(), e.data(), tmp.data(), n);
    for (int64_t i = 0; i < n * n; ++i) e[size_t(i)] = tmp[size_t(i)] / T(k);
    for (int64_t i = 0; i < n; ++i) e[size_t(i * n + i)] += T(1);
  }
  for (int s = 0; s < squarings; ++s) {
    matmul_square(e.data(), e.data(), tmp.data(), n);
    e.swap(tmp);
  }
  std::copy(e.begin(), e.end(), out);
}

}  // namespace ember::flex::dense
