// The cpu backend's linalg kernels through LAPACK (LAPACKE over OpenBLAS, Debian liblapacke-dev
// and libopenblas-dev), built when EMBER_LAPACK is on; flex's portable kernels serve the rest
// (matrix_exp) and every build without LAPACK. A row-major matrix is its transpose in LAPACK's
// column-major order, so the hot paths factor A^T in place instead of transposing copies: solve
// factors A^T = P L U and solves for X^T on the right with trsm, svd runs gesdd on A^T and reads
// U and Vh off its V^T and U. det, slogdet, cholesky, qr, svd, eigh, lu_factor and lu_solve also
// take c64/c128 through the c/z routines (getrf, getrs, potrf, geqrf + ungqr, gesdd, heevd); the
// same buffer tricks hold, since
// a Hermitian A^T is conj(A) (see each kernel).
#include <cblas.h>
#include <lapacke.h>

#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/flex/dense.h"
#include "ember/backends/flex/linalg_kernel.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/linalg_detail.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace ember::cpu {
namespace {

using linalg_detail::batch_count;
using linalg_detail::check_infos;
using linalg_detail::Failure;
using flex::new_output;
using namespace flex::linalg_kernel;

// OpenBLAS runs on as many threads as ember's pool has (set before each call: cheap).
void set_threads() { openblas_set_num_threads(flex::num_threads()); }

// --- typed LAPACK entry points ---
using C64 = std::complex<float>;
using C128 = std::complex<double>;
// std::complex is layout-compatible with LAPACK's complex types.
inline lapack_complex_float* lp(C64* p) { return reinterpret_cast<lapack_complex_float*>(p); }
inline lapack_complex_double* lp(C128* p) { return reinterpret_cast<lapack_complex_double*>(p); }
inline const lapack_complex_float* lp(const C64* p) { return reinterpret_cast<const lapack_complex_float*>(p); }
inline const lapack_complex_double* lp(const C128* p) { return reinterpret_cast<const lapack_complex_double*>(p); }

template <class T> lapack_int getrf(int layout, lapack_int m, lapack_int n, T* a, lapack_int lda, lapack_int* ipiv) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgetrf(layout, m, n, a, lda, ipiv);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cgetrf(layout, m, n, lp(a), lda, ipiv);
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zgetrf(layout, m, n, lp(a), lda, ipiv);
  else return LAPACKE_sgetrf(layout, m, n, a, lda, ipiv);
}
template <class T> lapack_int getri(lapack_int n, T* a, const lapack_int* ipiv) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgetri(LAPACK_COL_MAJOR, n, a, n, ipiv);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cgetri(LAPACK_COL_MAJOR, n, lp(a), n, ipiv);
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zgetri(LAPACK_COL_MAJOR, n, lp(a), n, ipiv);
  else return LAPACKE_sgetri(LAPACK_COL_MAJOR, n, a, n, ipiv);
}
template <class T> lapack_int getrs(char trans, lapack_int n, lapack_int k, const T* a, const lapack_int* ipiv, T* b) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgetrs(LAPACK_ROW_MAJOR, trans, n, k, a, n, ipiv, b, k);
  else if constexpr (std::is_same_v<T, C64>)
    return LAPACKE_cgetrs(LAPACK_ROW_MAJOR, trans, n, k, lp(a), n, ipiv, lp(b), k);
  else if constexpr (std::is_same_v<T, C128>)
    return LAPACKE_zgetrs(LAPACK_ROW_MAJOR, trans, n, k, lp(a), n, ipiv, lp(b), k);
  else return LAPACKE_sgetrs(LAPACK_ROW_MAJOR, trans, n, k, a, n, ipiv, b, k);
}
template <class T> void trsm(CBLAS_ORDER o, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_DIAG diag, int m,
                             int n, const T* a, int lda, T* b, int ldb) {
  const T one(1);
  if constexpr (std::is_same_v<T, double>)
    cblas_dtrsm(o, side, uplo, CblasNoTrans, diag, m, n, 1.0, a, lda, b, ldb);
  else if constexpr (std::is_same_v<T, C64>)
    cblas_ctrsm(o, side, uplo, CblasNoTrans, diag, m, n, &one, a, lda, b, ldb);
  else if constexpr (std::is_same_v<T, C128>)
    cblas_ztrsm(o, side, uplo, CblasNoTrans, diag, m, n, &one, a, lda, b, ldb);
  else
    cblas_strsm(o, side, uplo, CblasNoTrans, diag, m, n, 1.0f, a, lda, b, ldb);
}
template <class T> lapack_int potrf(char uplo, lapack_int n, T* a) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dpotrf(LAPACK_COL_MAJOR, uplo, n, a, n);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cpotrf(LAPACK_COL_MAJOR, uplo, n, lp(a), n);
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zpotrf(LAPACK_COL_MAJOR, uplo, n, lp(a), n);
  else return LAPACKE_spotrf(LAPACK_COL_MAJOR, uplo, n, a, n);
}
template <class T, class R>
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, R* s, T* u, lapack_int ldu, T* vt, lapack_int ldvt) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgesdd(LAPACK_COL_MAJOR, jobz, m, n, a, m, s, u, ldu, vt, ldvt);
  else if constexpr (std::is_same_v<T, C64>)
    return LAPACKE_cgesdd(LAPACK_COL_MAJOR, jobz, m, n, lp(a), m, s, lp(u), ldu, lp(vt), ldvt);
  else if constexpr (std::is_same_v<T, C128>)
    return LAPACKE_zgesdd(LAPACK_COL_MAJOR, jobz, m, n, lp(a), m, s, lp(u), ldu, lp(vt), ldvt);
  else return LAPACKE_sgesdd(LAPACK_COL_MAJOR, jobz, m, n, a, m, s, u, ldu, vt, ldvt);
}
// syevd, or heevd for complex T.
template <class T, class R> lapack_int syevd(char jobz, char uplo, lapack_int n, T* a, R* w) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dsyevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, n, w);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cheevd(LAPACK_COL_MAJOR, jobz, uplo, n, lp(a), n, w);
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zheevd(LAPACK_COL_MAJOR, jobz, uplo, n, lp(a), n, w);
  else return LAPACKE_ssyevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, n, w);
}
template <class T> lapack_int geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cgeqrf(LAPACK_ROW_MAJOR, m, n, lp(a), lda, lp(tau));
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zgeqrf(LAPACK_ROW_MAJOR, m, n, lp(a), lda, lp(tau));
  else return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
// orgqr, or ungqr for complex T.
template <class T> lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau) {
  if constexpr (std::is_same_v<T, double>) return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
  else if constexpr (std::is_same_v<T, C64>) return LAPACKE_cungqr(LAPACK_ROW_MAJOR, m, n, k, lp(a), lda, lp(tau));
  else if constexpr (std::is_same_v<T, C128>) return LAPACKE_zungqr(LAPACK_ROW_MAJOR, m, n, k, lp(a), lda, lp(tau));
  else return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}

// A LAPACK failure other than the documented ones (an argument error, no convergence).
void lapack_failed(const char* op, const char* routine, lapack_int info) {
  if (info != 0)
    detail::throw_value(op, std::string(routine) + " failed with info " + std::to_string(info) +
                                (info > 0 ? " (the algorithm did not converge)" : ""));
}

// solve: A X = B. The row-major A is A^T column-major: getrf gives A^T = P L U, and the
// row-major X (k x n column-major: X^T) solves X^T A^T = B^T, that is X^T P L U = B^T: two
// right-sided triangular solves, then X^T P^T as column swaps.
TensorList k_solve(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  Tensor x = output_copy(c, 0, c.inputs[1]);
  const int64_t n = a.size(-1), k = x.size(-1), nb = batch_count(a);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> lu(static_cast<size_t>(n * n));
    std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < nb && n > 0; ++b) {
      std::memcpy(lu.data(), data<T>(a) + b * n * n, sizeof(T) * size_t(n * n));
      lapack_int info = getrf<T>(LAPACK_COL_MAJOR, lapack_int(n), lapack_int(n), lu.data(),
                                 lapack_int(n), ipiv.data());
      infos[size_t(b)] = info;
      if (info || k == 0) continue;
      T* y = data<T>(x) + b * n * k;  // column-major k x n
      trsm<T>(CblasColMajor, CblasRight, CblasUpper, CblasNonUnit, int(k), int(n), lu.data(), int(n), y, int(k));
      trsm<T>(CblasColMajor, CblasRight, CblasLower, CblasUnit, int(k), int(n), lu.data(), int(n), y, int(k));
      for (int64_t i = n - 1; i >= 0; --i) {
        const int64_t p = ipiv[size_t(i)] - 1;
        if (p != i) std::swap_ranges(y + i * k, y + (i + 1) * k, y + p * k);
      }
    }
  });
  check_infos(op_name(c.op), infos, a.dim() > 2, Failure::Singular);
  return {x};
}

// inv: getri of A^T's factors is (A^-1)^T column-major, which is A^-1 row-major.
TensorList k_inv(const OpCall& c) {
  Tensor x = output_copy(c, 0, c.inputs[0]);
  const int64_t n = x.size(-1), nb = batch_count(x);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  set_threads();
  dispatch_scalar(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < nb && n > 0; ++b) {
      T* p = data<T>(x) + b * n * n;
      lapack_int info = getrf<T>(LAPACK_COL_MAJOR, lapack_int(n), lapack_int(n), p, lapack_int(n), ipiv.data());
      infos[size_t(b)] = info;
      if (!info) lapack_failed(op_name(c.op), "getri", getri<T>(lapack_int(n), p, ipiv.data()));
    }
  });
  check_infos(op_name(c.op), infos, x.dim() > 2, Failure::Singular);
  return {x};
}

// det, slogdet: det(A^T) = det(A), from A^T's LU (no transposing copy).
TensorList k_det(const OpCall& c) {
  const bool slog = c.op == OpId::linalg_slogdet;
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor d0 = new_output(c, 0), d1 = slog ? new_output(c, 1) : Tensor();
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = flex::dense::real_t<T>;
    std::vector<T> lu(static_cast<size_t>(n * n));
    std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < nb; ++b) {
      std::memcpy(lu.data(), data<T>(a) + b * n * n, sizeof(T) * size_t(n * n));
      if (n > 0) getrf<T>(LAPACK_COL_MAJOR, lapack_int(n), lapack_int(n), lu.data(), lapack_int(n), ipiv.data());
      T det, sign;
      R logabs;
      det_from_lu(lu.data(), n, ipiv.data(), det, sign, logabs);
      if (slog) data<T>(d0)[b] = sign, data<R>(d1)[b] = logabs;
      else data<T>(d0)[b] = det;
    }
  });
  if (slog) return {d0, d1};
  return {d0};
}

// cholesky: A's lower triangle (row-major) is the upper one of the column-major A^T: potrf('U')
// gives A^T = U^H U column-major, whose buffer read row-major is L = U^T (a Hermitian A^T is
// conj(A) = U^H U, so A = U^T conj(U) = L L^H). upper: the other way.
TensorList k_cholesky(const OpCall& c) {
  const bool upper = c.attrs.b[0];
  Tensor l = output_copy(c, 0, c.inputs[0]);
  const int64_t n = l.size(-1), nb = batch_count(l);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  set_threads();
  dispatch_scalar(l.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < nb && n > 0; ++b) {
      T* p = data<T>(l) + b * n * n;
      infos[size_t(b)] = potrf<T>(upper ? 'L' : 'U', lapack_int(n), p);
      for (int64_t i = 0; i < n; ++i)  // zero the other triangle (row-major)
        for (int64_t j = 0; j < n; ++j)
          if (upper ? j < i : j > i) p[i * n + j] = T(0);
    }
  });
  check_infos(op_name(c.op), infos, l.dim() > 2, Failure::NotPd);
  return {l};
}

// svd: gesdd on A^T (n x m column-major, the row-major A's buffer): A^T = U' S V'^H, so
// A = conj(V') S U'^T, and V'^H's buffer (column-major) is conj(V') = U row-major, U''s buffer
// is Vh.
TensorList k_svd(const OpCall& c) {
  const bool full = c.attrs.b[0], uv = c.attrs.b[1];
  Tensor a = c.inputs[0].contiguous().clone();
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), nb = batch_count(a);
  Tensor u = uv ? new_output(c, 0) : Tensor(), s = new_output(c, uv ? 1 : 0);
  Tensor vh = uv ? new_output(c, 2) : Tensor();
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = flex::dense::real_t<T>;
    T dummy[1] = {0};
    for (int64_t b = 0; b < nb; ++b) {
      if (k == 0) {  // no singular values; the bases are identities
        if (uv) {
          T* ub = data<T>(u) + b * m * ucols;
          T* vb = data<T>(vh) + b * vrows * n;
          for (int64_t i = 0; i < m * ucols; ++i) ub[i] = i / ucols == i % ucols ? T(1) : T(0);
          for (int64_t i = 0; i < vrows * n; ++i) vb[i] = i / n == i % n ? T(1) : T(0);
        }
        continue;
      }
      T* ab = data<T>(a) + b * m * n;
      T* ub = uv ? data<T>(vh) + b * vrows * n : dummy;   // U' (n x vrows), ldu = n
      T* vtb = uv ? data<T>(u) + b * m * ucols : dummy;   // V'^T (ucols x m), ldvt = ucols
      lapack_int info = gesdd<T, R>(jobz, lapack_int(n), lapack_int(m), ab, data<R>(s) + b * k, ub,
                                 lapack_int(uv ? n : 1), vtb, lapack_int(uv ? ucols : 1));
      lapack_failed(op_name(c.op), "gesdd", info);
    }
  });
  if (uv) return {u, s, vh};
  return {s};
}

// eigh: the row-major lower triangle is the column-major upper one of A^T (conj(A) when
// Hermitian); syevd's (heevd's) eigenvectors come as column-major columns, i.e. row-major rows:
// transposed (and conjugated: conj(A)'s eigenvectors are conj(A's), with the same eigenvalues).
TensorList k_eigh(const OpCall& c) {
  const bool upper = c.attrs.b[0], vecs = c.attrs.b[1];
  Tensor a = c.inputs[0].contiguous().clone();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor w = new_output(c, 0), z = vecs ? new_output(c, 1) : Tensor();
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = flex::dense::real_t<T>;
    for (int64_t b = 0; b < nb && n > 0; ++b) {
      T* p = data<T>(a) + b * n * n;
      lapack_failed(op_name(c.op), flex::dense::is_cplx<T> ? "heevd" : "syevd",
                    syevd<T, R>(vecs ? 'V' : 'N', upper ? 'L' : 'U', lapack_int(n), p, data<R>(w) + b * n));
      if (vecs) {
        T* zb = data<T>(z) + b * n * n;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) zb[i * n + j] = flex::dense::cj(p[j * n + i]);
      }
    }
  });
  if (vecs) return {w, z};
  return {w};
}

// lu_factor: getrf of A itself (LAPACKE transposes), so LU and pivots are torch's.
TensorList k_lu_factor(const OpCall& c) {
  Tensor lu = output_copy(c, 0, c.inputs[0]), piv = new_output(c, 1);
  const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n), nb = batch_count(lu);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  set_threads();
  dispatch_scalar(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(k, 1)));
    for (int64_t b = 0; b < nb && k > 0; ++b) {
      infos[size_t(b)] = getrf<T>(LAPACK_ROW_MAJOR, lapack_int(m), lapack_int(n), data<T>(lu) + b * m * n,
                                  lapack_int(n), ipiv.data());
      for (int64_t i = 0; i < k; ++i) data<int32_t>(piv)[b * k + i] = int32_t(ipiv[size_t(i)]);
    }
  });
  check_infos(op_name(c.op), infos, lu.dim() > 2, Failure::LuZero);
  return {lu, piv};
}

TensorList k_lu_solve(const OpCall& c) {
  const Tensor lu = c.inputs[0].contiguous(), piv = c.inputs[1].contiguous();
  Tensor x = output_copy(c, 0, c.inputs[2]);
  const int64_t n = lu.size(-1), k = x.size(-1), nb = batch_count(x);
  set_threads();
  // the adjoint solve is A^H X = B for complex LU ('C'), A^T X = B for real
  const char trans = !c.attrs.b[0] ? 'N' : is_complex(lu.dtype()) ? 'C' : 'T';
  dispatch_scalar(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < nb && n > 0 && k > 0; ++b) {
      for (int64_t i = 0; i < n; ++i) ipiv[size_t(i)] = data<int32_t>(piv)[b * n + i];
      lapack_failed(op_name(c.op), "getrs",
                    getrs<T>(trans, lapack_int(n), lapack_int(k), data<T>(lu) + b * n * n,
                             ipiv.data(), data<T>(x) + b * n * k));
    }
  });
  return {x};
}

TensorList k_solve_triangular(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  Tensor x = output_copy(c, 0, c.inputs[1]);
  const int64_t n = a.size(-1), k = x.size(-1), nb = batch_count(x);
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < nb && n > 0 && k > 0; ++b)
      trsm<T>(CblasRowMajor, CblasLeft, c.attrs.b[0] ? CblasUpper : CblasLower,
              c.attrs.b[2] ? CblasUnit : CblasNonUnit, int(n), int(k), data<T>(a) + b * n * n, int(n),
              data<T>(x) + b * n * k, int(k));
  });
  return {x};
}

// qr: geqrf + orgqr (ungqr for complex; LAPACKE transposes to column-major and back).
TensorList k_qr(const OpCall& c) {
  const int mode = c.attrs.mode;
  const Tensor a = c.inputs[0].contiguous();
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), nb = batch_count(a);
  Tensor q = new_output(c, 0), r = new_output(c, 1);
  const int64_t qcols = mode == 1 ? m : k, rrows = mode == 1 ? m : k;
  set_threads();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < nb; ++b) {
      // A wide enough buffer for both the factorisation (m x n) and Q (m x qcols).
      const int64_t w = std::max(n, qcols);
      std::vector<T> h(static_cast<size_t>(std::max<int64_t>(m * w, 1)), T(0));
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(&h[size_t(i * w)], data<T>(a) + b * m * n + i * n, sizeof(T) * size_t(n));
      std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
      if (k > 0) lapack_failed(op_name(c.op), "geqrf",
                               geqrf<T>(lapack_int(m), lapack_int(n), h.data(), lapack_int(w), tau.data()));
      T* rb = data<T>(r) + b * rrows * n;
      for (int64_t i = 0; i < rrows; ++i)
        for (int64_t j = 0; j < n; ++j) rb[i * n + j] = j >= i && i < m ? h[size_t(i * w + j)] : T(0);
      if (mode == 2) continue;
      T* qb = data<T>(q) + b * m * qcols;
      if (qcols == 0) continue;
      if (k > 0) lapack_failed(op_name(c.op), "orgqr",
                               orgqr<T>(lapack_int(m), lapack_int(qcols), lapack_int(k), h.data(), lapack_int(w), tau.data()));
      else
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < qcols; ++j) h[size_t(i * w + j)] = i == j ? T(1) : T(0);
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(qb + i * qcols, &h[size_t(i * w)], sizeof(T) * size_t(qcols));
    }
  });
  return {q, r};
}

}  // namespace

void register_lapack_eig(BackendImpl& b);  // lapack_eig.cpp

void register_lapack_linalg(BackendImpl& b) {
  register_lapack_eig(b);
  b.set_kernel(OpId::linalg_solve, k_solve, kRealComplex);
  b.set_kernel(OpId::linalg_inv, k_inv, kRealComplex);
  b.set_kernel(OpId::linalg_det, k_det, kRealComplex);
  b.set_kernel(OpId::linalg_slogdet, k_det, kRealComplex);
  b.set_kernel(OpId::linalg_cholesky, k_cholesky, kRealComplex);
  b.set_kernel(OpId::linalg_svd, k_svd, kRealComplex);
  b.set_kernel(OpId::linalg_eigh, k_eigh, kRealComplex);
  b.set_kernel(OpId::linalg_lu_factor, k_lu_factor, kRealComplex);
  b.set_kernel(OpId::linalg_lu_solve, k_lu_solve, kRealComplex);
  b.set_kernel(OpId::linalg_solve_triangular, k_solve_triangular, kRealComplex);
  b.set_kernel(OpId::linalg_qr, k_qr, kRealComplex);
}

}  // namespace ember::cpu
