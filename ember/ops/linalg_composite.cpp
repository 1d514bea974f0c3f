// The linalg ops built from others (category Composite): every backend runs them through their
// decompositions, and autodiff differentiates through them. Attrs:
//   linalg_svdvals: none.  linalg_eigvalsh: b[0] upper.
//   linalg_lstsq: f[0] rcond (NaN: eps * max(m, n)), mode the driver (0 gelsy, 1 gels, 2 gelsd,
//     3 gelss); inputs {A, B} with broadcast batch dims.
//   linalg_pinv, linalg_matrix_rank: f[0] atol, f[1] rtol (NaN: not given), b[0] hermitian.
//   linalg_matrix_norm: mode the ord (0 fro, 1 nuc, 2 inf, 3 -inf, 4 1, 5 -1, 6 2, 7 -2),
//     ints the two dims, b[0] keepdim.
//   linalg_vector_norm: f[0] ord, ints the dims (empty: all), b[0] keepdim, dtype if has_dtype.
//   linalg_cross: i[0] dim (inputs broadcast).  trace: none.  diag: i[0] diagonal.
//   diag_embed: i[0] offset, i[1] dim1, i[2] dim2.  matrix_power: i[0] n.
#include <cmath>
#include <limits>

#include "ember/linalg.h"
#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/complex.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace ops {
void require_real_matrix(const char* op, const Tensor& t, const char* what, bool complex_ok = false);
void require_square(const char* op, const Tensor& t, const char* what, bool complex_ok = false);
DType real_dtype_of(DType d);
Shape batch_of(const Tensor& t, int64_t trailing);
Shape with(Shape s, std::initializer_list<int64_t> tail);
}  // namespace ops

namespace {
using ops::batch_of;
using ops::with;

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
bool given(double v) { return !std::isnan(v); }
double eps_of(DType d) {
  return ops::real_dtype_of(d) == DType::F64 ? std::numeric_limits<double>::epsilon()
                                             : double(std::numeric_limits<float>::epsilon());
}
// The conjugate transpose (the transpose of a real matrix).
Tensor mH(const Tensor& t) { return (is_complex(t.dtype()) ? conj(t) : t).transpose(-2, -1); }
// |x| of a complex tensor (real), x itself otherwise.
Tensor magnitude(const Tensor& x) { return is_complex(x.dtype()) ? abs(x) : x; }
DType integral_to_i64(DType d) { return is_floating(d) || is_complex(d) ? d : DType::I64; }

enum MatrixOrd : uint8_t { kFro, kNuc, kInf, kNegInf, kOne, kNegOne, kTwo, kNegTwo };

Shape two_dims(const Attrs& a, const Tensor& A, const char* op) {
  if (a.ints.size() != 2)
    detail::throw_value(op, "expected dim to hold two dims, found " + std::to_string(a.ints.size()));
  const int64_t d0 = wrap_dim(a.ints[0], A.dim(), op), d1 = wrap_dim(a.ints[1], A.dim(), op);
  if (d0 == d1) detail::throw_value(op, "expected two different dims, found " + std::to_string(d0) + " twice");
  return {d0, d1};
}

void infer_composite(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  const Tensor& A = in[0];
  switch (op) {
    case OpId::linalg_svdvals:
      ops::require_real_matrix(name, A, "A", true);
      out.add(with(batch_of(A, 2), {std::min(A.size(-2), A.size(-1))}), ops::real_dtype_of(A.dtype()));
      return;
    case OpId::linalg_eigvalsh:
      ops::require_square(name, A, "A", true);
      out.add(with(batch_of(A, 2), {A.size(-1)}), ops::real_dtype_of(A.dtype()));
      return;
    case OpId::linalg_lstsq: {
      ops::require_real_matrix(name, A, "A", true);
      const Tensor& B = in[1];
      ops::require_real_matrix(name, B, "B", true);
      if (A.dtype() != B.dtype())
        detail::throw_dtype(name, "expected A and B to have the same dtype, found " +
                                      std::string(dtype_name(A.dtype())) + " and " +
                                      std::string(dtype_name(B.dtype())));
      if (B.size(-2) != A.size(-2) || batch_of(A, 2) != batch_of(B, 2))
        detail::throw_shape(name, "expected A and B to have the same number of rows, found shapes " +
                                      shape_str(A.shape()) + " and " + shape_str(B.shape()));
      const int64_t m = A.size(-2), n = A.size(-1), k = B.size(-1);
      const int driver = a.mode;
      const DType part = ops::real_dtype_of(A.dtype());
      out.add(with(batch_of(A, 2), {n, k}), A.dtype());
      out.add(m > n && driver != 0 ? with(batch_of(A, 2), {k}) : Shape{0}, part);
      out.add(driver == 1 ? Shape{0} : batch_of(A, 2), DType::I64);
      out.add(driver >= 2 ? with(batch_of(A, 2), {std::min(m, n)}) : Shape{0}, part);
      return;
    }
    case OpId::linalg_pinv:
      ops::require_real_matrix(name, A, "A", true);
      if (a.b[0]) ops::require_square(name, A, "A", true);
      out.add(with(batch_of(A, 2), {A.size(-1), A.size(-2)}), A.dtype());
      return;
    case OpId::linalg_matrix_rank:
      ops::require_real_matrix(name, A, "A", true);
      if (a.b[0]) ops::require_square(name, A, "A", true);
      out.add(batch_of(A, 2), DType::I64);
      return;
    case OpId::linalg_matrix_norm: {
      ops::require_defined(A, name, "A");
      ops::require_dtype(name, A.dtype(),
                         mask_of(DType::F32) | mask_of(DType::F64) | kComplexDTypes,
                         "a float32, float64, complex64 or complex128 input");
      if (A.dim() < 2)
        detail::throw_shape(name, "expected a matrix or a batch of matrices, found shape " +
                                      shape_str(A.shape()));
      const Shape d = two_dims(a, A, name);
      out.add(ops::reduced_shape(A.shape(), {std::min(d[0], d[1]), std::max(d[0], d[1])}, a.b[0]),
              ops::real_dtype_of(A.dtype()));
      return;
    }
    case OpId::linalg_vector_norm: {
      ops::require_defined(A, name, "x");
      const DType d = a.has_dtype ? a.dtype : A.dtype();
      ops::require_dtype(name, d, kFloatDTypes | kComplexDTypes,
                         "a floating or complex input (or dtype)");
      if (is_complex(A.dtype()) != is_complex(d))  // as torch: complex stays complex, real real
        detail::throw_dtype(name, std::string("expected a ") +
                                      (is_complex(A.dtype()) ? "complex" : "real") +
                                      " dtype for a " + std::string(dtype_name(A.dtype())) +
                                      " input, found " + std::string(dtype_name(d)));
      out.add(ops::reduced_shape(A.shape(), ops::reduce_dims(a.ints, A.dim(), name), a.b[0]),
              ops::real_dtype_of(d));
      return;
    }
    case OpId::linalg_cross: {
      const Tensor& B = in[1];
      ops::require_defined(A, name, "input");
      ops::require_defined(B, name, "other");
      if (A.dim() != B.dim())
        detail::throw_shape(name, "expected inputs of the same rank, found shapes " +
                                      shape_str(A.shape()) + " and " + shape_str(B.shape()));
      const Shape s = broadcast_shapes(A.shape(), B.shape(), name);
      const int64_t d = wrap_dim(a.i[0], int64_t(s.size()), name);
      if (A.size(d) != 3 || B.size(d) != 3)
        detail::throw_shape(name, "expected size 3 at dim " + std::to_string(d) + ", found shapes " +
                                      shape_str(A.shape()) + " and " + shape_str(B.shape()));
      out.add(s, result_type(A, B));
      return;
    }
    case OpId::trace:
      ops::require_defined(A, name);
      if (A.dim() != 2)
        detail::throw_shape(name, "expected a 2-D tensor, found shape " + shape_str(A.shape()));
      out.add({}, integral_to_i64(A.dtype()));
      return;
    case OpId::diag: {
      ops::require_defined(A, name);
      const int64_t k = a.i[0];
      if (A.dim() == 1) {
        const int64_t n = A.size(0) + std::abs(k);
        out.add({n, n}, A.dtype());
      } else if (A.dim() == 2) {
        const int64_t len = k >= 0 ? std::min(A.size(0), A.size(1) - k) : std::min(A.size(0) + k, A.size(1));
        out.add({std::max<int64_t>(len, 0)}, A.dtype());
      } else {
        detail::throw_shape(name, "expected a 1-D or 2-D tensor, found shape " + shape_str(A.shape()));
      }
      return;
    }
    case OpId::diag_embed: {
      ops::require_defined(A, name);
      const int64_t r = A.dim() + 1;
      const int64_t d1 = wrap_dim(a.i[1], r, name), d2 = wrap_dim(a.i[2], r, name);
      if (d1 == d2) detail::throw_value(name, "expected dim1 and dim2 to differ, found " + std::to_string(d1) + " twice");
      const int64_t n = (A.dim() ? A.size(-1) : 1) + std::abs(a.i[0]);
      Shape s = A.dim() ? batch_of(A, 1) : Shape{};
      for (int64_t d = 0; d < r; ++d)
        if (d == std::min(d1, d2) || d == std::max(d1, d2)) s.insert(size_t(d), n);
      out.add(s, A.dtype());
      return;
    }
    case OpId::matrix_power:
      ops::require_defined(A, name, "A");
      if (A.dim() < 2 || A.size(-1) != A.size(-2))
        detail::throw_shape(name, "expected a batch of square matrices, found shape " + shape_str(A.shape()));
      if (a.i[0] < 0) ops::require_square(name, A, "A (a negative power inverts it)", true);
      out.add(A.shape(), A.dtype());
      return;
    default:
      detail::throw_not_implemented(name, "no inference rule");
  }
}

Attrs flag_attrs(bool b0, bool b1) {
  Attrs a;
  a.b[0] = b0;
  a.b[1] = b1;
  return a;
}

TensorList d_svdvals(const Attrs&, std::span<const Tensor> in) {
  return dispatch(OpId::linalg_svd, flag_attrs(false, false), {in[0]});
}

TensorList d_eigvalsh(const Attrs& a, std::span<const Tensor> in) {
  return dispatch(OpId::linalg_eigh, flag_attrs(a.b[0], false), {in[0]});
}

// 1/s where s > cutoff, else 0 (finite in both branches, so gradients stay finite).
Tensor inv_above(const Tensor& s, const Tensor& cutoff) {
  Tensor keep = s > cutoff;
  return where(keep, reciprocal(where(keep, s, 1.0)), 0.0);
}

// max(atol, rtol * largest |s|) with torch's defaults; s: [..., k].
Tensor cutoff_of(const Tensor& s, double atol, double rtol, int64_t m, int64_t n, DType dt) {
  if (!given(rtol)) rtol = given(atol) && atol > 0 ? 0.0 : eps_of(dt) * double(std::max(m, n));
  if (!given(atol)) atol = 0;
  Tensor largest = s.size(-1) ? amax(abs(s), {-1}, true) : zeros(with(batch_of(s, 1), {1}), s.options());
  return maximum(largest * rtol, full({}, atol, s.options()));
}

TensorList d_lstsq(const Attrs& a, std::span<const Tensor> in) {
  const Tensor &A = in[0], &B = in[1];
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const int driver = a.mode;
  Tensor x;
  Tensor s, keep;
  if (k == 0) {
    x = zeros(with(batch_of(A, 2), {n, B.size(-1)}), A.options());
    s = zeros(with(batch_of(A, 2), {0}), {ops::real_dtype_of(A.dtype()), A.device()});
    keep = s > 0.0;
  } else {
    auto [u, sv, vh] = linalg::svd(A, false);
    const double rcond = given(a.f[0]) ? a.f[0] : eps_of(A.dtype()) * double(std::max(m, n));
    Tensor cut = amax(sv, {-1}, true) * rcond;
    x = matmul(mH(vh), inv_above(sv, cut).unsqueeze(-1) * matmul(mH(u), B));
    s = sv;
    keep = sv > cut;
  }
  const TensorOptions part{ops::real_dtype_of(A.dtype()), A.device()};
  Tensor residuals =
      m > n && driver != 0 ? sum(square(magnitude(matmul(A, x) - B)), {-2}) : zeros({0}, part);
  Tensor rank = driver == 1 ? zeros({0}, {DType::I64, A.device()}) : sum(keep, {-1}, false, DType::I64);
  Tensor svals = driver >= 2 ? s : zeros({0}, part);
  return {x, residuals, rank, svals};
}

TensorList d_pinv(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& A = in[0];
  const int64_t m = A.size(-2), n = A.size(-1);
  if (std::min(m, n) == 0) return {zeros(with(batch_of(A, 2), {n, m}), A.options())};
  if (a.b[0]) {
    auto [w, q] = linalg::eigh(A);
    Tensor winv = inv_above(abs(w), cutoff_of(w, a.f[0], a.f[1], m, n, A.dtype()));
    return {matmul(q * where(w < 0.0, -winv, winv).unsqueeze(-2), mH(q))};
  }
  auto [u, s, vh] = linalg::svd(A, false);
  Tensor sinv = inv_above(s, cutoff_of(s, a.f[0], a.f[1], m, n, A.dtype()));
  return {matmul(mH(vh) * sinv.unsqueeze(-2), mH(u))};
}

TensorList d_matrix_rank(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& A = in[0];
  const int64_t m = A.size(-2), n = A.size(-1);
  if (std::min(m, n) == 0) return {zeros(batch_of(A, 2), {DType::I64, A.device()})};
  Tensor s = a.b[0] ? abs(linalg::eigvalsh(A)) : linalg::svdvals(A);
  return {sum(s > cutoff_of(s, a.f[0], a.f[1], m, n, A.dtype()), {-1}, false, DType::I64)};
}

TensorList d_matrix_norm(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& A = in[0];
  const Shape d = two_dims(a, A, "linalg_matrix_norm");
  const bool keep = a.b[0];
  const int64_t r0 = d[0], r1 = d[1];
  switch (MatrixOrd(a.mode)) {
    case kFro: return {norm(magnitude(A), 2, {r0, r1}, keep)};
    case kOne: case kNegOne: {  // over columns: the sum down dim r0, then the extreme over r1
      Tensor cs = sum(abs(A), {r0}, true);
      Tensor e = a.mode == kOne ? amax(cs, {r1}, true) : amin(cs, {r1}, true);
      return {keep ? e : e.squeeze(std::max(r0, r1)).squeeze(std::min(r0, r1))};
    }
    case kInf: case kNegInf: {
      Tensor rs = sum(abs(A), {r1}, true);
      Tensor e = a.mode == kInf ? amax(rs, {r0}, true) : amin(rs, {r0}, true);
      return {keep ? e : e.squeeze(std::max(r0, r1)).squeeze(std::min(r0, r1))};
    }
    default: {  // nuc, 2, -2: from the singular values of the matrices over (r0, r1)
      Tensor s = linalg::svdvals(movedim(A, {r0, r1}, {-2, -1}));
      Tensor e = a.mode == kNuc ? sum(s, {-1}) : a.mode == kTwo ? amax(s, {-1}) : amin(s, {-1});
      if (keep) {
        e = e.unsqueeze(std::min(r0, r1));
        e = e.unsqueeze(std::max(r0, r1));
      }
      return {e};
    }
  }
}

TensorList d_vector_norm(const Attrs& a, std::span<const Tensor> in) {
  Tensor x = a.has_dtype ? in[0].to(a.dtype) : in[0];
  return {norm(magnitude(x), a.f[0], a.ints, a.b[0])};
}

TensorList d_cross(const Attrs& a, std::span<const Tensor> in) {
  const Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), "linalg_cross");
  const DType t = result_type(in[0], in[1]);
  const Tensor x = in[0].to(t).expand(s), y = in[1].to(t).expand(s);
  const int64_t d = wrap_dim(a.i[0], int64_t(s.size()), "linalg_cross");
  auto at = [d](const Tensor& v, int64_t i) { return v.narrow(d, i, 1); };
  return {cat({at(x, 1) * at(y, 2) - at(x, 2) * at(y, 1), at(x, 2) * at(y, 0) - at(x, 0) * at(y, 2),
               at(x, 0) * at(y, 1) - at(x, 1) * at(y, 0)},
              d)};
}

TensorList d_trace(const Attrs&, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  return {sum(diagonal(x, 0, 0, 1), {}, false, integral_to_i64(x.dtype()))};
}

// Matrices [..., N, N] with x [..., n] on diagonal `offset` (N = n + |offset|), at the last two
// dims: x padded to N, times the 0/1 mask of that diagonal.
Tensor embed_last(const Tensor& x, int64_t offset) {
  const int64_t n = x.size(-1), N = n + std::abs(offset);
  Tensor v = offset ? pad(x, {0, std::abs(offset)}) : x;
  // a real mask for a complex x (complex times real runs on the parts)
  Tensor ones_nn = ones({N, N}, {ops::real_dtype_of(x.dtype()), x.device()});
  Tensor mask = triu(ones_nn, offset) - triu(ones_nn, offset + 1);
  return offset >= 0 ? v.unsqueeze(-1) * mask : v.unsqueeze(-2) * mask;
}

TensorList d_diag(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  if (x.dim() == 1) return {embed_last(x, a.i[0])};
  return {diagonal(x, a.i[0], 0, 1).contiguous()};
}

TensorList d_diag_embed(const Attrs& a, std::span<const Tensor> in) {
  const Tensor x = in[0].dim() ? in[0] : in[0].unsqueeze(0);
  const int64_t r = x.dim() + 1;
  Tensor e = embed_last(x, a.i[0]);
  const int64_t d1 = wrap_dim(a.i[1], r, "diag_embed"), d2 = wrap_dim(a.i[2], r, "diag_embed");
  if (d1 == r - 2 && d2 == r - 1) return {e};
  return {movedim(e, {r - 2, r - 1}, {d1, d2}).contiguous()};
}

TensorList d_matrix_power(const Attrs& a, std::span<const Tensor> in) {
  Tensor base = in[0];
  int64_t n = a.i[0];
  if (n == 0) {
    const int64_t k = base.size(-1);
    Tensor id = eye(k, {}, {ops::real_dtype_of(base.dtype()), base.device()}).to(base.dtype());
    return {id.expand(base.shape()).contiguous()};
  }
  if (n < 0) {
    base = linalg::inv(base);
    n = -n;
  }
  Tensor result;
  while (true) {
    if (n & 1) result = result.defined() ? matmul(result, base) : base;
    n >>= 1;
    if (!n) break;
    base = matmul(base, base);
  }
  return {result.is_alias_of(in[0]) ? result.clone() : result};
}

}  // namespace

namespace linalg {

Tensor svdvals(const Tensor& A) { return dispatch1(OpId::linalg_svdvals, {}, {A}); }

std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B,
                                                 std::optional<double> rcond,
                                                 const std::optional<std::string>& driver) {
  const char* op = "linalg_lstsq";
  Attrs a;
  a.f[0] = rcond ? *rcond : kNone;
  const std::string d = driver.value_or("gelsy");
  if (d == "gelsy") a.mode = 0;
  else if (d == "gels") a.mode = 1;
  else if (d == "gelsd") a.mode = 2;
  else if (d == "gelss") a.mode = 3;
  else
    detail::throw_value(op, "expected driver \"gels\", \"gelsy\", \"gelsd\" or \"gelss\", found \"" + d + "\"");
  ops::require_real_matrix(op, A, "A", true);
  ops::require_defined(B, op, "B");
  // B of A's shape without its last dim: a (batch of) vector(s), as in torch.
  const bool vec = B.dim() == A.dim() - 1;
  const Tensor b = vec ? B.unsqueeze(-1) : B;
  ops::require_real_matrix(op, b, "B", true);
  const Shape batch = broadcast_shapes(batch_of(A, 2), batch_of(b, 2), op);
  TensorList r = dispatch(OpId::linalg_lstsq, a,
                          {A.expand(with(batch, {A.size(-2), A.size(-1)})),
                           b.expand(with(batch, {b.size(-2), b.size(-1)}))});
  if (vec) r[0] = r[0].squeeze(-1);  // the residuals keep their unit dim, as torch's do
  return {r[0], r[1], r[2], r[3]};
}

namespace {
Attrs tolerance_attrs(std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  Attrs a;
  a.f[0] = atol ? *atol : kNone;
  a.f[1] = rtol ? *rtol : kNone;
  a.b[0] = hermitian;
  return a;
}
}  // namespace

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  return dispatch1(OpId::linalg_pinv, tolerance_attrs(atol, rtol, hermitian), {A});
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol,
                   bool hermitian) {
  return dispatch1(OpId::linalg_matrix_rank, tolerance_attrs(atol, rtol, hermitian), {A});
}

Tensor matrix_norm(const Tensor& A, const std::string& ord, const Shape& dim, bool keepdim) {
  Attrs a;
  if (ord == "fro") a.mode = kFro;
  else if (ord == "nuc") a.mode = kNuc;
  else detail::throw_value("linalg_matrix_norm", "expected ord \"fro\" or \"nuc\", found \"" + ord + "\"");
  a.ints = dim;
  a.b[0] = keepdim;
  return dispatch1(OpId::linalg_matrix_norm, a, {A});
}

Tensor matrix_norm(const Tensor& A, double ord, const Shape& dim, bool keepdim) {
  Attrs a;
  if (ord == INFINITY) a.mode = kInf;
  else if (ord == -INFINITY) a.mode = kNegInf;
  else if (ord == 1) a.mode = kOne;
  else if (ord == -1) a.mode = kNegOne;
  else if (ord == 2) a.mode = kTwo;
  else if (ord == -2) a.mode = kNegTwo;
  else
    detail::throw_value("linalg_matrix_norm",
                        "expected ord 1, -1, 2, -2, inf or -inf, found " + std::to_string(ord));
  a.ints = dim;
  a.b[0] = keepdim;
  return dispatch1(OpId::linalg_matrix_norm, a, {A});
}

Tensor vector_norm(const Tensor& x, double ord, const Shape& dim, bool keepdim,
                   std::optional<DType> dtype) {
  Attrs a;
  a.f[0] = ord;
  a.ints = dim;
  a.b[0] = keepdim;
  if (dtype) a.dtype = *dtype, a.has_dtype = true;
  return dispatch1(OpId::linalg_vector_norm, a, {x});
}

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  Attrs at;
  at.i[0] = dim;
  return dispatch1(OpId::linalg_cross, at, {a, b});
}

Tensor matrix_power(const Tensor& A, int64_t n) {
  Attrs a;
  a.i[0] = n;
  return dispatch1(OpId::matrix_power, a, {A});
}

}  // namespace linalg

Tensor pinverse(const Tensor& A, double rcond) { return linalg::pinv(A, std::nullopt, rcond); }
Tensor trace(const Tensor& x) { return dispatch1(OpId::trace, {}, {x}); }
Tensor diag(const Tensor& x, int64_t diagonal) {
  Attrs a;
  a.i[0] = diagonal;
  return dispatch1(OpId::diag, a, {x});
}
Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  Attrs a;
  a.i = {offset, dim1, dim2, 0};
  return dispatch1(OpId::diag_embed, a, {x});
}
Tensor matrix_power(const Tensor& A, int64_t n) { return linalg::matrix_power(A, n); }
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  if (!dim) {
    for (int64_t d = 0; d < a.dim() && d < b.dim(); ++d)
      if (a.size(d) == 3 && b.size(d) == 3) {
        dim = d;
        break;
      }
    if (!dim)
      detail::throw_shape("linalg_cross", "no dim of size 3 in shapes " + shape_str(a.shape()) +
                                              " and " + shape_str(b.shape()));
  }
  return linalg::cross(a, b, *dim);
}

namespace ops {
void register_linalg_composite_ops() {
  struct Entry {
    OpId op;
    DecompFn fn;
  };
  for (const Entry& e : {Entry{OpId::linalg_svdvals, d_svdvals}, Entry{OpId::linalg_eigvalsh, d_eigvalsh},
                         Entry{OpId::linalg_lstsq, d_lstsq}, Entry{OpId::linalg_pinv, d_pinv},
                         Entry{OpId::linalg_matrix_rank, d_matrix_rank},
                         Entry{OpId::linalg_matrix_norm, d_matrix_norm},
                         Entry{OpId::linalg_vector_norm, d_vector_norm}, Entry{OpId::linalg_cross, d_cross},
                         Entry{OpId::trace, d_trace}, Entry{OpId::diag, d_diag},
                         Entry{OpId::diag_embed, d_diag_embed}, Entry{OpId::matrix_power, d_matrix_power}}) {
    op_def_mut(e.op).infer = infer_composite;
    op_def_mut(e.op).decompose = e.fn;
  }
  op_def_mut(OpId::linalg_matrix_rank).differentiable = false;
}
}  // namespace ops

}  // namespace ember
