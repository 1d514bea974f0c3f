// flex kernels: the matrix decompositions and functions of ember/linalg.h, batched, f32/f64
// (inv, solve, det, slogdet, cholesky, qr, svd, eigh and solve_triangular also
// c64/c128), each matrix copied to a row-major buffer and handed to ember/backends/flex/dense.h. Batches
// run one matrix per thread when they are worth splitting. The cpu backend replaces most of
// these with LAPACK (ember/backends/cpu/lapack_linalg.cpp); cuda reaches them through the host
// fallback.
#include "ember/backends/flex/dense.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/linalg_kernel.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/linalg_detail.h"

namespace ember::flex {
namespace {

using linalg_detail::batch_count;
using linalg_detail::check_infos;
using linalg_detail::Failure;

using namespace linalg_kernel;

// Runs f(b) for every matrix b of a batch: across threads when there are several and each
// carries some work.
template <class F> void over_batch(int64_t nb, int64_t work_each, const F& f) {
  if (nb > 1 && nb * work_each >= (int64_t(1) << 15)) {
    parallel_for(nb, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) f(b);
    });
  } else {
    for (int64_t b = 0; b < nb; ++b) f(b);
  }
}

int64_t cube(int64_t n) { return n * n * n; }

TensorList k_lu_factor(const OpCall& c) {
  const Tensor& a = c.inputs[0];
  Tensor lu = output_copy(c, 0, a), piv = new_output(c, 1);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), nb = batch_count(a);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, m * n * k, [&](int64_t b) {
      infos[size_t(b)] = dense::lu(data<T>(lu) + b * m * n, m, n, data<int32_t>(piv) + b * k);
    });
  });
  check_infos(op_name(c.op), infos, a.dim() > 2, Failure::LuZero);
  return {lu, piv};
}

TensorList k_lu_solve(const OpCall& c) {
  const Tensor &lu = c.inputs[0].contiguous(), &piv = c.inputs[1].contiguous();
  Tensor x = output_copy(c, 0, c.inputs[2]);
  const int64_t n = lu.size(-1), k = x.size(-1), nb = batch_count(x);
  dispatch_scalar(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, n * n * k, [&](int64_t b) {
      dense::lu_solve(data<T>(lu) + b * n * n, n, data<int32_t>(piv) + b * n,
                      data<T>(x) + b * n * k, k, c.attrs.b[0]);
    });
  });
  return {x};
}

// solve and inv: LU of a copy of A, the singular check, then the LU solve of B (or of I).
TensorList k_solve_inv(const OpCall& c) {
  const bool inv = c.op == OpId::linalg_inv;
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor x = inv ? new_output(c, 0) : output_copy(c, 0, c.inputs[1]);
  const int64_t k = inv ? n : x.size(-1);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, cube(n), [&](int64_t b) {
      std::vector<T> lu(data<T>(a) + b * n * n, data<T>(a) + (b + 1) * n * n);
      std::vector<int32_t> piv(static_cast<size_t>(n));
      infos[size_t(b)] = dense::lu(lu.data(), n, n, piv.data());
      if (infos[size_t(b)]) return;
      T* xb = data<T>(x) + b * n * k;
      if (inv)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) xb[i * n + j] = i == j ? T(1) : T(0);
      dense::lu_solve(lu.data(), n, piv.data(), xb, k, false);
    });
  });
  check_infos(op_name(c.op), infos, a.dim() > 2, Failure::Singular);
  return {x};
}

// det and slogdet from the LU's diagonal and the parity of its row swaps.
TensorList k_det(const OpCall& c) {
  const bool slog = c.op == OpId::linalg_slogdet;
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor d0 = new_output(c, 0), d1 = slog ? new_output(c, 1) : Tensor();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = dense::real_t<T>;
    over_batch(nb, cube(n), [&](int64_t b) {
      std::vector<T> lu(data<T>(a) + b * n * n, data<T>(a) + (b + 1) * n * n);
      std::vector<int32_t> piv(static_cast<size_t>(n));
      dense::lu(lu.data(), n, n, piv.data());
      T det, sign;
      R logabs;
      det_from_lu(lu.data(), n, piv.data(), det, sign, logabs);
      if (slog) {
        data<T>(d0)[b] = sign;
        data<R>(d1)[b] = logabs;
      } else {
        data<T>(d0)[b] = det;
      }
    });
  });
  if (slog) return {d0, d1};
  return {d0};
}

// The n x n matrix b of a, conjugate-transposed when `t` (a's other triangle read as this one).
template <class T> std::vector<T> square_of(const Tensor& a, int64_t b, int64_t n, bool t) {
  const T* p = data<T>(a) + b * n * n;
  std::vector<T> m(p, p + n * n);
  if (t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) m[size_t(i * n + j)] = dense::cj(p[j * n + i]);
  return m;
}

TensorList k_cholesky(const OpCall& c) {
  const bool upper = c.attrs.b[0];
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor l = new_output(c, 0);
  std::vector<int64_t> infos(static_cast<size_t>(nb));
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, cube(n), [&](int64_t b) {
      // upper: the upper triangle, read as the lower one of A^H; U = L^H.
      std::vector<T> m = square_of<T>(a, b, n, upper);
      T* out = data<T>(l) + b * n * n;
      infos[size_t(b)] = dense::cholesky(m.data(), n, out);
      if (upper)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = i + 1; j < n; ++j) {
            const T lo = out[j * n + i];
            out[j * n + i] = dense::cj(out[i * n + j]);
            out[i * n + j] = dense::cj(lo);
          }
    });
  });
  check_infos(op_name(c.op), infos, a.dim() > 2, Failure::NotPd);
  return {l};
}

// qr: mode 0 reduced (Q m x k, R k x n), 1 complete (Q m x m, R m x n), 2 r (Q empty).
TensorList k_qr(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), nb = batch_count(a);
  const int mode = c.attrs.mode;
  Tensor q = new_output(c, 0), r = new_output(c, 1);
  const int64_t qcols = mode == 1 ? m : k, rrows = mode == 1 ? m : k;
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, m * n * k, [&](int64_t b) {
      std::vector<T> h(data<T>(a) + b * m * n, data<T>(a) + (b + 1) * m * n);
      std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
      dense::householder(h.data(), m, n, tau.data());
      T* rb = data<T>(r) + b * rrows * n;
      for (int64_t i = 0; i < rrows; ++i)
        for (int64_t j = 0; j < n; ++j) rb[i * n + j] = j >= i && i < m ? h[size_t(i * n + j)] : T(0);
      if (mode != 2) dense::form_q(h.data(), m, n, tau.data(), data<T>(q) + b * m * qcols, qcols);
    });
  });
  return {q, r};
}

// svd: b[0] full_matrices, b[1] compute_uv. One-sided Jacobi on the tall orientation (A, or
// A^H when m < n); columns past the rank, and the extra ones of full matrices, complete the
// orthonormal bases.
template <class T>
void svd_one(const T* a, int64_t m, int64_t n, bool full, bool uv, dense::real_t<T>* s, T* u, T* vh) {
  using dense::cj;
  const bool wide = m < n;
  const int64_t tm = wide ? n : m, tn = wide ? m : n;  // the tall orientation: tm >= tn
  std::vector<T> t(static_cast<size_t>(tm * tn));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) t[size_t(wide ? j * m + i : i * n + j)] = wide ? cj(a[i * n + j]) : a[i * n + j];
  std::vector<T> tu(static_cast<size_t>(tm * tn)), tvt(size_t(tn * tn));
  int64_t rank = 0;
  dense::jacobi_svd_tall(t.data(), tm, tn, s, tu.data(), tvt.data(), rank);
  if (!uv) return;
  // The tall factor's basis (tm x tm when full, else tm x tn), completed past the rank.
  const int64_t bc = full ? tm : tn;
  std::vector<T> basis(static_cast<size_t>(tm * tm));
  for (int64_t i = 0; i < tm; ++i)
    for (int64_t j = 0; j < tn; ++j) basis[size_t(i * tm + j)] = tu[size_t(i * tn + j)];
  if (rank < bc) dense::complete_basis(basis.data(), tm, rank);
  if (!wide) {  // U = basis (m x bc), Vh = tvt
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < bc; ++j) u[i * bc + j] = basis[size_t(i * tm + j)];
    std::copy(tvt.begin(), tvt.end(), vh);
  } else {  // A^H = tu S tvt: U = tvt^H (m x m), Vh = basis^H (bc x n)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) u[i * m + j] = cj(tvt[size_t(j * m + i)]);
    for (int64_t i = 0; i < bc; ++i)
      for (int64_t j = 0; j < n; ++j) vh[i * n + j] = cj(basis[size_t(j * tm + i)]);
  }
}

TensorList k_svd(const OpCall& c) {
  const bool full = c.attrs.b[0], uv = c.attrs.b[1];
  const Tensor a = c.inputs[0].contiguous();
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), nb = batch_count(a);
  Tensor u = uv ? new_output(c, 0) : Tensor(), s = new_output(c, uv ? 1 : 0);
  Tensor vh = uv ? new_output(c, 2) : Tensor();
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, m * n * k * 8, [&](int64_t b) {
      svd_one<T>(data<T>(a) + b * m * n, m, n, full, uv, data<dense::real_t<T>>(s) + b * k,
                 uv ? data<T>(u) + b * m * ucols : nullptr, uv ? data<T>(vh) + b * vrows * n : nullptr);
    });
  });
  if (uv) return {u, s, vh};
  return {s};
}

// eigh: b[0] upper (UPLO="U"), b[1] compute_v. Only the named triangle is read.
TensorList k_eigh(const OpCall& c) {
  const bool upper = c.attrs.b[0], vecs = c.attrs.b[1];
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor w = new_output(c, 0), z = vecs ? new_output(c, 1) : Tensor();
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, cube(n) * 8, [&](int64_t b) {
      std::vector<T> m = square_of<T>(a, b, n, false);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) {
          T& lo = m[size_t(j * n + i)];
          T& up = m[size_t(i * n + j)];
          if (upper) lo = dense::cj(up);
          else up = dense::cj(lo);
        }
      dense::jacobi_eigh(std::move(m), n, data<dense::real_t<T>>(w) + b * n,
                         vecs ? data<T>(z) + b * n * n : nullptr);
    });
  });
  if (vecs) return {w, z};
  return {w};
}

// solve_triangular (left, A X = B): b[0] upper, b[2] unitriangular.
TensorList k_solve_triangular(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  Tensor x = output_copy(c, 0, c.inputs[1]);
  const int64_t n = a.size(-1), k = x.size(-1), nb = batch_count(x);
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, n * n * k, [&](int64_t b) {
      dense::tri_solve(data<T>(a) + b * n * n, n, data<T>(x) + b * n * k, k, c.attrs.b[0],
                       c.attrs.b[2]);
    });
  });
  return {x};
}

TensorList k_matrix_exp(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  const int64_t n = a.size(-1), nb = batch_count(a);
  Tensor out = new_output(c, 0);
  dispatch_scalar(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    over_batch(nb, cube(n) * 20, [&](int64_t b) {
      dense::matrix_exp(data<T>(a) + b * n * n, n, data<T>(out) + b * n * n);
    });
  });
  return {out};
}

}  // namespace

void register_flex_eig(BackendImpl& b);      // eig.cpp
void register_flex_fft_ops(BackendImpl& b);  // fft_ops.cpp

void register_flex_linalg_decomp(BackendImpl& b) {
  register_flex_eig(b);
  register_flex_fft_ops(b);
  b.set_kernel(OpId::linalg_lu_factor, k_lu_factor, kRealComplex);
  b.set_kernel(OpId::linalg_lu_solve, k_lu_solve, kRealComplex);
  b.set_kernel(OpId::linalg_solve, k_solve_inv, kRealComplex);
  b.set_kernel(OpId::linalg_inv, k_solve_inv, kRealComplex);
  b.set_kernel(OpId::linalg_det, k_det, kRealComplex);
  b.set_kernel(OpId::linalg_slogdet, k_det, kRealComplex);
  b.set_kernel(OpId::linalg_cholesky, k_cholesky, kRealComplex);
  b.set_kernel(OpId::linalg_qr, k_qr, kRealComplex);
  b.set_kernel(OpId::linalg_svd, k_svd, kRealComplex);
  b.set_kernel(OpId::linalg_eigh, k_eigh, kRealComplex);
  b.set_kernel(OpId::linalg_solve_triangular, k_solve_triangular, kRealComplex);
  b.set_kernel(OpId::matrix_exp, k_matrix_exp, kRealComplex);
}

}  // namespace ember::flex
