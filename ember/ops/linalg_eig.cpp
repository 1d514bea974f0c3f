// linalg.eig / linalg.eigvals: the eigen-decomposition of a general square matrix, real or
// complex, with complex results as torch.linalg.eig. Attrs of linalg_eig: b[0] compute_v (false:
// the eigenvalues are the only output). Kernels: ember/backends/flex/eig.cpp (Hessenberg + shifted
// QR) and ember/backends/cpu/lapack_eig.cpp (geev); the VJP is in ember/autodiff/rules_linalg.cpp.
#include "ember/linalg.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember {
namespace {

void infer_eig(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  const Tensor& A = in[0];
  ops::require_defined(A, name, "A");
  ops::require_dtype(name, A.dtype(), mask_of(DType::F32) | mask_of(DType::F64) | kComplexDTypes,
                "a float32, float64, complex64 or complex128 input");
  if (A.dim() < 2 || A.size(-1) != A.size(-2))
    detail::throw_shape(name, "expected A to be a batch of square matrices, found shape " +
                                  shape_str(A.shape()));
  // The results are complex, which only the host devices hold.
  const BackendImpl* b = backend_for(A.device().backend());
  if (b && !b->is_host())
    detail::throw_not_implemented(name, "complex results run on the host devices (flex, cpu) "
                                        "only, not on " + A.device().str());
  const DType c = is_complex(A.dtype()) ? A.dtype() : complex_dtype_for(A.dtype());
  Shape w(std::span<const int64_t>(A.shape().data(), A.shape().size() - 1));
  out.add(w, c);
  if (a.b[0]) out.add(A.shape(), c);
}

Attrs eig_attrs(bool vectors) {
  Attrs a;
  a.b[0] = vectors;
  return a;
}

}  // namespace

namespace linalg {

std::tuple<Tensor, Tensor> eig(const Tensor& A) {
  TensorList r = dispatch(OpId::linalg_eig, eig_attrs(true), {A});
  return {r[0], r[1]};
}

Tensor eigvals(const Tensor& A) { return dispatch1(OpId::linalg_eig, eig_attrs(false), {A}); }

}  // namespace linalg

namespace ops {
void register_linalg_eig_ops() { op_def_mut(OpId::linalg_eig).infer = infer_eig; }
}  // namespace ops

}  // namespace ember
