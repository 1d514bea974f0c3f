// Matrix decompositions and functions (ember/linalg.h): API, inference, registration. The ops
// with kernels (category Linalg) take a canonical form the front ends build: left-sided solves,
// batch dims already broadcast (expanded views), B always a matrix. Attrs:
//   linalg_solve, linalg_inv, linalg_det, linalg_slogdet, matrix_exp: none.
//   linalg_cholesky: b[0] upper.   linalg_qr: mode 0 reduced, 1 complete, 2 r.
//   linalg_svd: b[0] full_matrices, b[1] compute_uv (false: S is the only output).
//   linalg_eigh: b[0] upper (UPLO = "U"), b[1] compute_v (false: eigenvalues only).
//   linalg_lu_factor: none (inputs {A}; outputs LU, int32 pivots).
//   linalg_lu_solve: b[0] adjoint (inputs {LU, pivots, B}).
//   linalg_solve_triangular: b[0] upper, b[2] unitriangular (inputs {A, B}).
// inv, solve, det, slogdet, cholesky, qr, svd, eigh, solve_triangular, lu_factor, lu_solve,
// matrix_exp (and svdvals, eigvalsh) also take complex64/complex128:
// S, eigh's eigenvalues and slogdet's logabsdet are then real, slogdet's sign complex.
// The composite ops and their decompositions are in linalg_composite.cpp.
#include "ember/linalg.h"

#include "ember/ops/common.h"
#include "ember/ops/complex.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg_detail.h"
#include "ember/ops/binary.h"
#include "ember/ops/unary.h"

namespace ember {
namespace ops {
void register_linalg_composite_ops();
void register_linalg_eig_ops();
void register_fft_ops();

// The real dtype of a dtype's values (float32 for complex64): S of svd, eigh's eigenvalues.
DType real_dtype_of(DType d) { return is_complex(d) ? complex_part_dtype(d) : d; }

// complex_ok: the ops with complex kernels (det, slogdet, cholesky, qr, svd, eigh and their
// composites) also take complex64/complex128.
void require_real_matrix(const char* op, const Tensor& t, const char* what, bool complex_ok = false) {
  require_defined(t, op, what);
  if (complex_ok)
    require_dtype(op, t.dtype(), mask_of(DType::F32) | mask_of(DType::F64) | kComplexDTypes,
                  "a float32, float64, complex64 or complex128 input");
  else
    require_dtype(op, t.dtype(), mask_of(DType::F32) | mask_of(DType::F64),
                  "a float32 or float64 input");
  if (t.dim() < 2)
    detail::throw_shape(op, std::string("expected ") + what +
                                " to be a matrix or a batch of matrices (at least 2-D), found shape " +
                                shape_str(t.shape()));
}

void require_square(const char* op, const Tensor& t, const char* what, bool complex_ok = false) {
  require_real_matrix(op, t, what, complex_ok);
  if (t.size(-1) != t.size(-2))
    detail::throw_shape(op, std::string("expected ") + what +
                                " to be a batch of square matrices, found shape " +
                                shape_str(t.shape()));
}

Shape batch_of(const Tensor& t, int64_t trailing = 2) {
  return Shape(std::span<const int64_t>(t.shape().data(), t.shape().size() - size_t(trailing)));
}

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  for (int64_t d : tail) s.push_back(d);
  return s;
}

void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    detail::throw_dtype(op, "expected A and B to have the same dtype, found " +
                                std::string(dtype_name(a.dtype())) + " and " +
                                std::string(dtype_name(b.dtype())));
}

// The right-hand side of a left solve: [..., n, k] with A's batch.
void require_rhs(const char* op, const Tensor& a, const Tensor& b, bool complex_ok = false) {
  require_real_matrix(op, b, "B", complex_ok);
  require_same_dtype(op, a, b);
  if (b.size(-2) != a.size(-1) || batch_of(a) != batch_of(b))
    detail::throw_shape(op, "incompatible shapes of A and B for the equation AX = B: " +
                                shape_str(a.shape()) + " and " + shape_str(b.shape()));
}
}  // namespace ops

namespace {
using ops::batch_of;
using ops::with;

void infer_linalg(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  const Tensor& A = in[0];
  switch (op) {
    case OpId::linalg_inv: case OpId::matrix_exp:
      ops::require_square(name, A, "A", true);
      out.add(A.shape(), A.dtype());
      return;
    case OpId::linalg_solve: case OpId::linalg_solve_triangular: {
      ops::require_square(name, A, "A", true);
      ops::require_rhs(name, A, in[1], true);
      out.add(in[1].shape(), A.dtype());
      return;
    }
    case OpId::linalg_cholesky:
      ops::require_square(name, A, "A", true);
      out.add(A.shape(), A.dtype());
      return;
    case OpId::linalg_det:
      ops::require_square(name, A, "A", true);
      out.add(batch_of(A), A.dtype());
      return;
    case OpId::linalg_slogdet:  // sign (of modulus 1 when complex), real log|det|
      ops::require_square(name, A, "A", true);
      out.add(batch_of(A), A.dtype());
      out.add(batch_of(A), ops::real_dtype_of(A.dtype()));
      return;
    case OpId::linalg_qr: {
      ops::require_real_matrix(name, A, "A", true);
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
      if (a.mode == 2) out.add({0}, A.dtype());
      else out.add(with(batch_of(A), {m, a.mode == 1 ? m : k}), A.dtype());
      out.add(with(batch_of(A), {a.mode == 1 ? m : k, n}), A.dtype());
      return;
    }
    case OpId::linalg_svd: {  // S is real
      ops::require_real_matrix(name, A, "A", true);
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
      const bool full = a.b[0];
      if (a.b[1]) out.add(with(batch_of(A), {m, full ? m : k}), A.dtype());
      out.add(with(batch_of(A), {k}), ops::real_dtype_of(A.dtype()));
      if (a.b[1]) out.add(with(batch_of(A), {full ? n : k, n}), A.dtype());
      return;
    }
    case OpId::linalg_eigh:  // real eigenvalues
      ops::require_square(name, A, "A", true);
      out.add(with(batch_of(A), {A.size(-1)}), ops::real_dtype_of(A.dtype()));
      if (a.b[1]) out.add(A.shape(), A.dtype());
      return;
    case OpId::linalg_lu_factor: {
      ops::require_real_matrix(name, A, "A", true);
      out.add(A.shape(), A.dtype());
      out.add(with(batch_of(A), {std::min(A.size(-2), A.size(-1))}), DType::I32);
      return;
    }
    case OpId::linalg_lu_solve: {
      ops::require_square(name, A, "LU", true);
      const Tensor& piv = in[1];
      ops::require_defined(piv, name, "pivots");
      if (piv.dtype() != DType::I32)
        detail::throw_dtype(name, "expected int32 pivots, found " + std::string(dtype_name(piv.dtype())));
      if (piv.shape() != with(batch_of(A), {A.size(-1)}))
        detail::throw_shape(name, "expected pivots of shape " +
                                      shape_str(with(batch_of(A), {A.size(-1)})) + " for LU of shape " +
                                      shape_str(A.shape()) + ", found " + shape_str(piv.shape()));
      ops::require_rhs(name, A, in[2], true);
      out.add(in[2].shape(), A.dtype());
      return;
    }
    default:
      detail::throw_not_implemented(name, "no inference rule");
  }
}

Attrs flags(bool b0, bool b1 = false, bool b2 = false) {
  Attrs a;
  a.b = {b0, b1, b2, false};
  return a;
}

// A left solve's right-hand side: B as a matrix batch, and whether B was a (batch of) vector(s).
std::pair<Tensor, bool> rhs_matrix(const Tensor& A, const Tensor& B) {
  const bool vec = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.shape() == batch_of(A, 1));
  return {vec ? B.unsqueeze(-1) : B, vec};
}

// A and B expanded to their common batch dims (views).
std::pair<Tensor, Tensor> broadcast_batch(const Tensor& A, const Tensor& B, const char* op) {
  const Shape batch = broadcast_shapes(batch_of(A), batch_of(B), op);
  return {A.expand(with(batch, {A.size(-2), A.size(-1)})),
          B.expand(with(batch, {B.size(-2), B.size(-1)}))};
}

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }
Tensor mH(const Tensor& t) { return (is_complex(t.dtype()) ? conj(t) : t).transpose(-2, -1); }

bool either_complex(const Tensor& a, const Tensor& b) {
  return (a.defined() && is_complex(a.dtype())) || (b.defined() && is_complex(b.dtype()));
}

DType complex_of(const Tensor& a, const Tensor& b, const char* op) {
  DType d = b.defined() ? promote_types(a.dtype(), b.dtype()) : a.dtype();
  if (d != DType::C64 && d != DType::C128)
    detail::throw_dtype(op, std::string("expected complex64 or complex128 operands, found ") +
                                std::string(dtype_name(d)));
  return d;
}

// Complex solve operands: both in their common complex dtype (ember extends torch here, which
// refuses mixed real and complex operands).
std::pair<Tensor, Tensor> to_complex(const Tensor& A, const Tensor& B, const char* op) {
  ops::require_defined(A, op, "A");
  ops::require_defined(B, op, "B");
  const DType c = complex_of(A, B, op);
  return {A.dtype() == c ? A : A.to(c), B.dtype() == c ? B : B.to(c)};
}

}  // namespace

namespace linalg {

Tensor inv(const Tensor& A) { return dispatch1(OpId::linalg_inv, {}, {A}); }

Tensor solve(const Tensor& A0, const Tensor& B0, bool left) {
  const char* op = "linalg_solve";
  Tensor A = A0, B = B0;
  if (either_complex(A0, B0)) [[unlikely]]
    std::tie(A, B) = to_complex(A0, B0, op);
  ops::require_square(op, A, "A", true);
  ops::require_defined(B, op, "B");
  auto [b, vec] = rhs_matrix(A, B);
  if (!left && !vec) b = mT(b);
  auto [a2, b2] = broadcast_batch(left ? A : mT(A), b, op);
  Tensor x = dispatch1(OpId::linalg_solve, {}, {a2, b2});
  if (vec) return x.squeeze(-1);
  return left ? x : mT(x);
}

Tensor det(const Tensor& A) { return dispatch1(OpId::linalg_det, {}, {A}); }

std::tuple<Tensor, Tensor> slogdet(const Tensor& A) {
  TensorList r = dispatch(OpId::linalg_slogdet, {}, {A});
  return {r[0], r[1]};
}

Tensor cholesky(const Tensor& A, bool upper) {
  return dispatch1(OpId::linalg_cholesky, flags(upper), {A});
}

std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode) {
  Attrs a;
  if (mode == "reduced") a.mode = 0;
  else if (mode == "complete") a.mode = 1;
  else if (mode == "r") a.mode = 2;
  else
    detail::throw_value("linalg_qr", "expected mode \"reduced\", \"complete\" or \"r\", found \"" +
                                         mode + "\"");
  TensorList r = dispatch(OpId::linalg_qr, a, {A});
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices) {
  TensorList r = dispatch(OpId::linalg_svd, flags(full_matrices, true), {A});
  return {r[0], r[1], r[2]};
}

namespace {
bool uplo_upper(const std::string& UPLO, const char* op) {
  if (UPLO != "L" && UPLO != "U")
    detail::throw_value(op, "expected UPLO to be \"L\" or \"U\", found \"" + UPLO + "\"");
  return UPLO == "U";
}
}  // namespace

std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO) {
  TensorList r = dispatch(OpId::linalg_eigh, flags(uplo_upper(UPLO, "linalg_eigh"), true), {A});
  return {r[0], r[1]};
}

Tensor eigvalsh(const Tensor& A, const std::string& UPLO) {
  return dispatch1(OpId::linalg_eigvalsh, flags(uplo_upper(UPLO, "linalg_eigvalsh")), {A});
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, bool pivot) {
  if (!pivot)
    detail::throw_not_implemented("linalg_lu_factor",
                                  "LU without pivoting is not implemented (as on torch's CPU)");
  TensorList r = dispatch(OpId::linalg_lu_factor, {}, {A});
  return {r[0], r[1]};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg_lu_solve";
  ops::require_square(op, LU, "LU", true);
  ops::require_real_matrix(op, B, "B", true);
  if (LU.dtype() != B.dtype())
    detail::throw_dtype(op, "expected LU and B to have the same dtype, found " +
                                std::string(dtype_name(LU.dtype())) + " and " +
                                std::string(dtype_name(B.dtype())));
  // X A = B is A^H X^H = B^H: the adjoint solve of B^H (the adjoint is A^T for real A).
  Tensor b = left ? B : mH(B);
  auto [lu, b2] = broadcast_batch(LU, b, op);
  Tensor piv = pivots;
  if (pivots.defined() && pivots.dim() >= 1) piv = pivots.expand(with(batch_of(lu), {pivots.size(-1)}));
  Tensor x = dispatch1(OpId::linalg_lu_solve, flags(left ? adjoint : !adjoint), {lu, piv, b2});
  return left ? x : mH(x);
}

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left,
                        bool unitriangular) {
  const char* op = "linalg_solve_triangular";
  ops::require_square(op, A, "A", true);
  ops::require_real_matrix(op, B, "B", true);
  // X A = B is A^T X^T = B^T, and A^T's triangle is the other one.
  auto [a2, b2] = broadcast_batch(left ? A : mT(A), left ? B : mT(B), op);
  Tensor x = dispatch1(OpId::linalg_solve_triangular, flags(left ? upper : !upper, false, unitriangular),
                       {a2, b2});
  return left ? x : mT(x);
}

Tensor matrix_exp(const Tensor& A) { return dispatch1(OpId::matrix_exp, {}, {A}); }

Tensor diagonal(const Tensor& A, int64_t offset, int64_t dim1, int64_t dim2) {
  return ember::diagonal(A, offset, dim1, dim2);
}

}  // namespace linalg

Tensor inverse(const Tensor& A) { return linalg::inv(A); }
Tensor det(const Tensor& A) { return linalg::det(A); }
std::tuple<Tensor, Tensor> slogdet(const Tensor& A) { return linalg::slogdet(A); }
Tensor logdet(const Tensor& A) {
  auto [sign, logabs] = linalg::slogdet(A);
  return logabs + log(sign);  // log(-1) = NaN, log(0) = -inf: torch's logdet
}
Tensor cholesky(const Tensor& A, bool upper) { return linalg::cholesky(A, upper); }
Tensor matrix_exp(const Tensor& A) { return linalg::matrix_exp(A); }

namespace ops {
void register_linalg_decomp_ops() {
  for (OpId op : {OpId::linalg_inv, OpId::linalg_solve, OpId::linalg_det, OpId::linalg_slogdet,
                  OpId::linalg_cholesky, OpId::linalg_qr, OpId::linalg_svd, OpId::linalg_eigh,
                  OpId::linalg_lu_factor, OpId::linalg_lu_solve, OpId::linalg_solve_triangular,
                  OpId::matrix_exp})
    op_def_mut(op).infer = infer_linalg;
  // The factors have no gradient (lu_solve's does, with respect to LU and B).
  op_def_mut(OpId::linalg_lu_factor).differentiable = false;
  register_linalg_composite_ops();
  register_linalg_eig_ops();
  register_fft_ops();
}
}  // namespace ops

namespace linalg_detail {

void check_infos(const char* op, std::span<const int64_t> infos, bool batched, Failure kind) {
  for (size_t b = 0; b < infos.size(); ++b) {
    const int64_t info = infos[b];
    if (info == 0) continue;
    std::string msg = batched ? "(batch element " + std::to_string(b) + "): " : "";
    const std::string k = std::to_string(info);
    switch (kind) {
      case Failure::Singular:
        msg += "the diagonal element " + k +
               " is zero, the inversion could not be completed because the input matrix is singular";
        break;
      case Failure::LuZero:
        msg += "U[" + k + "," + k + "] is zero and using it on lu_solve would result in a division by zero";
        break;
      case Failure::NotPd:
        msg += "the factorization could not be completed because the input is not positive-definite "
               "(the leading minor of order " + k + " is not positive-definite)";
        break;
    }
    detail::throw_value(op, msg);
  }
}

}  // namespace linalg_detail

}  // namespace ember
