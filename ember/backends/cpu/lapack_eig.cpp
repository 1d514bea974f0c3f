// The cpu backend's linalg_eig through LAPACK's geev (sgeev/dgeev for real input, cgeev/zgeev
// for complex), as torch's CPU computes it: the same eigenvalue order, eigenvectors of norm 1
// with the largest component real. A real matrix's complex pair (w, conj w) comes back as two
// real columns (re, im) that become v and conj v.
#include <lapacke.h>

#include <complex>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/flex/linalg_kernel.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/linalg_detail.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace ember::cpu {
namespace {

using flex::linalg_kernel::data;

lapack_int geev_real(lapack_int n, char jobv, double* a, double* wr, double* wi, double* vr) {
  return LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', jobv, n, a, n, wr, wi, nullptr, n, vr, n);
}
lapack_int geev_real(lapack_int n, char jobv, float* a, float* wr, float* wi, float* vr) {
  return LAPACKE_sgeev(LAPACK_ROW_MAJOR, 'N', jobv, n, a, n, wr, wi, nullptr, n, vr, n);
}
lapack_int geev_complex(lapack_int n, char jobv, std::complex<double>* a, std::complex<double>* w,
                        std::complex<double>* vr) {
  using Z = lapack_complex_double;  // layout-compatible with std::complex<double>
  return LAPACKE_zgeev(LAPACK_ROW_MAJOR, 'N', jobv, n, reinterpret_cast<Z*>(a), n, reinterpret_cast<Z*>(w),
                       nullptr, n, reinterpret_cast<Z*>(vr), n);
}
lapack_int geev_complex(lapack_int n, char jobv, std::complex<float>* a, std::complex<float>* w,
                        std::complex<float>* vr) {
  using Z = lapack_complex_float;
  return LAPACKE_cgeev(LAPACK_ROW_MAJOR, 'N', jobv, n, reinterpret_cast<Z*>(a), n, reinterpret_cast<Z*>(w),
                       nullptr, n, reinterpret_cast<Z*>(vr), n);
}

template <class T>
lapack_int eig_real(const T* src, int64_t n, std::complex<T>* w, std::complex<T>* v) {
  std::vector<T> a(src, src + n * n), wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n)), vr(v ? size_t(n * n) : 1);
  const lapack_int info = geev_real(lapack_int(n), v ? 'V' : 'N', a.data(), wr.data(), wi.data(), vr.data());
  if (info != 0) return info;
  for (int64_t j = 0; j < n; ++j) w[j] = {wr[size_t(j)], wi[size_t(j)]};
  if (!v) return 0;
  for (int64_t j = 0; j < n; ++j) {
    if (wi[size_t(j)] != 0 && j + 1 < n) {  // columns j, j + 1: re and im of v_j; v_j+1 = conj v_j
      for (int64_t i = 0; i < n; ++i) {
        const T re = vr[size_t(i * n + j)], im = vr[size_t(i * n + j + 1)];
        v[i * n + j] = {re, im};
        v[i * n + j + 1] = {re, -im};
      }
      ++j;
    } else {
      for (int64_t i = 0; i < n; ++i) v[i * n + j] = {vr[size_t(i * n + j)], T(0)};
    }
  }
  return 0;
}

template <class T>
lapack_int eig_complex(const std::complex<T>* src, int64_t n, std::complex<T>* w, std::complex<T>* v) {
  std::vector<std::complex<T>> a(src, src + n * n), vr(v ? size_t(n * n) : 1);
  const lapack_int info = geev_complex(lapack_int(n), v ? 'V' : 'N', a.data(), w, vr.data());
  if (info == 0 && v) std::copy(vr.begin(), vr.end(), v);
  return info;
}

TensorList k_eig(const OpCall& c) {
  const Tensor a = c.inputs[0].contiguous();
  const bool vecs = c.attrs.b[0];
  Tensor w = flex::new_output(c, 0), v = vecs ? flex::new_output(c, 1) : Tensor();
  const int64_t n = a.size(-1), nb = linalg_detail::batch_count(a);
  openblas_set_num_threads(flex::num_threads());
  for (int64_t b = 0; b < nb && n > 0; ++b) {
    lapack_int info = 0;
    const int64_t nn = b * n * n;
    switch (a.dtype()) {
      case DType::F32:
        info = eig_real(data<float>(a) + nn, n, data<std::complex<float>>(w) + b * n,
                        vecs ? data<std::complex<float>>(v) + nn : nullptr);
        break;
      case DType::F64:
        info = eig_real(data<double>(a) + nn, n, data<std::complex<double>>(w) + b * n,
                        vecs ? data<std::complex<double>>(v) + nn : nullptr);
        break;
      case DType::C64:
        info = eig_complex(data<std::complex<float>>(a) + nn, n, data<std::complex<float>>(w) + b * n,
                           vecs ? data<std::complex<float>>(v) + nn : nullptr);
        break;
      default:
        info = eig_complex(data<std::complex<double>>(a) + nn, n, data<std::complex<double>>(w) + b * n,
                           vecs ? data<std::complex<double>>(v) + nn : nullptr);
        break;
    }
    if (info != 0)
      detail::throw_value(op_name(c.op),
                          (a.dim() > 2 ? "(batch element " + std::to_string(b) + "): " : std::string()) +
                              "the algorithm failed to converge because the input matrix is "
                              "ill-conditioned or has too many repeated eigenvalues (geev info " +
                              std::to_string(info) + ")");
  }
  if (vecs) return {w, v};
  return {w};
}

}  // namespace

void register_lapack_eig(BackendImpl& b) {
  b.set_kernel(OpId::linalg_eig, k_eig, flex::linalg_kernel::kReal | kComplexDTypes);
}

}  // namespace ember::cpu
