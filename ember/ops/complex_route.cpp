// Ops on complex operands, run on their real and imaginary parts (see complex_route.h).
#include "ember/ops/complex_route.h"

#include <algorithm>
#include <numbers>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/tensor_impl.h"

namespace ember::detail {
namespace {

// What an op does with complex operands.
enum class Route : uint8_t {
  None,     // not supported: refused by name
  Kernel,   // the kernel moves complex elements itself (views, copies, gathers)
  Parts,    // computed on the parts here
};

Route route_of(OpId op) {
  switch (op) {
    case OpId::reshape: case OpId::view: case OpId::flatten: case OpId::unflatten:
    case OpId::permute: case OpId::transpose: case OpId::movedim: case OpId::squeeze:
    case OpId::unsqueeze: case OpId::expand: case OpId::broadcast_to: case OpId::slice:
    case OpId::select: case OpId::narrow: case OpId::diagonal: case OpId::contiguous:
    case OpId::cat: case OpId::stack: case OpId::split: case OpId::chunk: case OpId::unbind:
    case OpId::repeat: case OpId::tile: case OpId::flip: case OpId::roll:
    case OpId::index_select: case OpId::take: case OpId::gather: case OpId::masked_select:
    case OpId::view_as_real: case OpId::view_as_complex: case OpId::empty:
    case OpId::empty_like:
    case OpId::linalg_eig: case OpId::linalg_det: case OpId::linalg_slogdet:
    case OpId::linalg_cholesky: case OpId::linalg_qr: case OpId::linalg_svd:
    case OpId::linalg_eigh: case OpId::linalg_svdvals: case OpId::linalg_eigvalsh:
    case OpId::linalg_solve_triangular: case OpId::linalg_inv: case OpId::linalg_solve:
    case OpId::linalg_lu_factor: case OpId::linalg_lu_solve: case OpId::matrix_exp:
    case OpId::fft_c2c: case OpId::fft_r2c: case OpId::fft_c2r:
    // composites: their decompositions run ops that take complex
    case OpId::trace: case OpId::diag: case OpId::diag_embed: case OpId::linalg_cross:
    case OpId::linalg_vector_norm: case OpId::linalg_matrix_norm: case OpId::matrix_power:
    case OpId::linalg_lstsq: case OpId::linalg_pinv: case OpId::linalg_matrix_rank:
    case OpId::tril: case OpId::triu: case OpId::einsum:
      return Route::Kernel;
    case OpId::cast: case OpId::copy:  // same dtype: a kernel copy; else through the parts
    case OpId::full: case OpId::zeros: case OpId::ones: case OpId::zeros_like:
    case OpId::ones_like: case OpId::full_like:
    case OpId::neg: case OpId::abs: case OpId::exp: case OpId::log: case OpId::sqrt:
    case OpId::square: case OpId::reciprocal: case OpId::isnan: case OpId::isinf:
    case OpId::isfinite: case OpId::sin: case OpId::cos: case OpId::sinh: case OpId::cosh:
    case OpId::log2: case OpId::log10: case OpId::rsqrt: case OpId::pow: case OpId::cumsum:
    case OpId::tanh: case OpId::prod: case OpId::cumprod:
    case OpId::asin: case OpId::acos: case OpId::atan: case OpId::asinh: case OpId::acosh:
    case OpId::atanh:
    case OpId::add: case OpId::sub: case OpId::mul: case OpId::div: case OpId::eq: case OpId::ne:
    case OpId::where:
    case OpId::sum: case OpId::mean: case OpId::norm: case OpId::var: case OpId::std:
    case OpId::mm: case OpId::bmm: case OpId::matmul: case OpId::outer: case OpId::dot:
    case OpId::pad: case OpId::index_add:  // the adjoints of slicing and indexing
      return Route::Parts;
    default:
      return Route::None;
  }
}

DType complex_in(OpId op, const Attrs& a, std::span<const Tensor> in) {
  for (const Tensor& t : in)
    if (t.defined() && is_complex(t.dtype())) return t.dtype();
  return a.dtype;
}

[[noreturn]] void refuse(OpId op, DType d) {
  throw_dtype(op_name(op), "not supported for dtype " + std::string(dtype_name(d)) +
                               " (the ops that take complex tensors are listed in "
                               "docs/tensors.md, \"Complex numbers\")");
}

// --- the parts ---
struct Parts {
  Tensor re, im;  // im undefined: a real operand (imaginary part 0)
};

Parts parts(const Tensor& x, DType part) {
  if (!is_complex(x.dtype())) return {x.dtype() == part ? x : cast(x, part), Tensor()};
  if (is_constant(x)) {  // a wrapped complex scalar: two real constants, no views of it
    const Scalar& v = x.impl()->constant;
    const bool w = x.impl()->wrapped_number;
    return {constant_tensor(v.to_double(), part, x.device(), w),
            constant_tensor(v.imag(), part, x.device(), w)};
  }
  Tensor r = view_as_real(x);
  if (r.dtype() != part) r = cast(r, part);
  return {select(r, -1, 0), select(r, -1, 1)};
}

Tensor as_complex(const Tensor& pairs) {
  return view_as_complex(pairs.is_contiguous() ? pairs : contiguous(pairs));
}
Tensor join(const Tensor& re, const Tensor& im, const Shape& shape) {
  return view_as_complex(stack({expand(re, shape), expand(im, shape)}, -1));
}
// A fresh tensor (never a view of the input), as a cast's result is.
Tensor fresh(const Tensor& x, DType d) { return x.dtype() == d ? clone(x) : cast(x, d); }

Tensor plus(const Tensor& a, const Tensor& b) {  // either may be undefined (zero)
  return !a.defined() ? b : !b.defined() ? a : add(a, b);
}
Tensor minus(const Tensor& a, const Tensor& b) {
  return !b.defined() ? a : !a.defined() ? neg(b) : sub(a, b);
}

// |z| without overflow for large parts and with a zero gradient at 0 (torch's sgn(0) = 0).
Tensor magnitude(const Tensor& re, const Tensor& im) {
  Tensor m = maximum(abs(re), abs(im));
  Tensor zero = eq(m, 0);
  Tensor ms = where(zero, 1.0, m);
  Tensor a = re / ms, b = im / ms;
  Tensor inner = where(zero, 1.0, a * a + b * b);
  return where(zero, 0.0, ms * sqrt(inner));
}

Tensor cast_complex(const Tensor& x, DType to) {
  const DType from = x.dtype();
  if (from == to) return x;
  if (is_complex(to)) {
    const DType part = complex_part_dtype(to);
    if (is_complex(from)) return as_complex(cast(view_as_real(x), part));
    Tensor re = fresh(x, part);
    return join(re, zeros_like(re), re.shape());
  }
  // complex -> real keeps the real part (torch does the same and warns once).
  return fresh(select(view_as_real(x), -1, 0), to);
}

// i z, and -i w: asinh(z) = -i asin(i z), atan(z) = -i atanh(i z).
Tensor times_i(const Tensor& re, const Tensor& im, const Shape& shape) { return join(neg(im), re, shape); }
Tensor times_minus_i(const Tensor& w, const Shape& shape) { return join(imag(w), neg(real(w)), shape); }

// The inverse trigonometric functions on their principal branches, in Kahan's forms ("Branch
// cuts for complex elementary functions", 1987): accurate near the branch points, and the side
// of a cut follows the sign of a zero imaginary part, as in std::complex (C99 Annex G).
Tensor inverse_trig(OpId op, const Tensor& re, const Tensor& im, DType part, const Shape& shape) {
  switch (op) {
    case OpId::asin: case OpId::acos: {  // s = sqrt(1 - z), t = sqrt(1 + z)
      auto [sr, si] = parts(sqrt(join(1.0 - re, neg(im), shape)), part);
      auto [tr, ti] = parts(sqrt(join(1.0 + re, im, shape)), part);
      if (op == OpId::asin) return join(atan2(re, sr * tr - si * ti), asinh(sr * ti - si * tr), shape);
      return join(atan2(sr, tr) * 2.0, asinh(tr * si - ti * sr), shape);
    }
    case OpId::acosh: {  // s = sqrt(z - 1), t = sqrt(z + 1)
      auto [sr, si] = parts(sqrt(join(re - 1.0, im, shape)), part);
      auto [tr, ti] = parts(sqrt(join(re + 1.0, im, shape)), part);
      return join(asinh(sr * tr + si * ti), atan2(si, tr) * 2.0, shape);
    }
    case OpId::atanh: {  // log((1 + z) / (1 - z)) / 2 on the parts
      Tensor om = 1.0 - re;
      Tensor r = log1p(re * 4.0 / (om * om + im * im)) * 0.25;
      return join(r, atan2(im * 2.0, om * (1.0 + re) - im * im) * 0.5, shape);
    }
    case OpId::asinh: return times_minus_i(asin(times_i(re, im, shape)), shape);
    default: return times_minus_i(atanh(times_i(re, im, shape)), shape);  // atan
  }
}

Tensor unary(OpId op, const Tensor& x, const Shape& shape) {
  const DType part = complex_part_dtype(x.dtype());
  if (op == OpId::neg) return as_complex(neg(view_as_real(x)));
  if (op == OpId::square) return mul(x, x);
  if (op == OpId::reciprocal) return div(1, x);
  if (op == OpId::rsqrt) return div(1, sqrt(x));
  if (op == OpId::log2) return log(x) / std::numbers::ln2;
  if (op == OpId::log10) return log(x) / std::numbers::ln10;
  auto [re, im] = parts(x, part);
  switch (op) {
    case OpId::abs: return magnitude(re, im);
    case OpId::isnan: return logical_or(isnan(re), isnan(im));
    case OpId::isinf: return logical_or(isinf(re), isinf(im));
    case OpId::isfinite: return logical_and(isfinite(re), isfinite(im));
    case OpId::exp: {
      Tensor e = exp(re);
      return join(e * cos(im), e * sin(im), shape);
    }
    case OpId::log: return join(log(magnitude(re, im)), atan2(im, re), shape);
    case OpId::sin: return join(sin(re) * cosh(im), cos(re) * sinh(im), shape);
    case OpId::cos: return join(cos(re) * cosh(im), neg(sin(re) * sinh(im)), shape);
    case OpId::sinh: return join(sinh(re) * cos(im), cosh(re) * sin(im), shape);
    case OpId::cosh: return join(cosh(re) * cos(im), sinh(re) * sin(im), shape);
    case OpId::tanh: {
      // With t = tanh(re), s = tan(im): ((1 + s^2) t + i s sech^2(re)) / (1 + t^2 s^2), which
      // stays finite for large |re| (the sinh/cosh form overflows to inf / inf).
      Tensor t = tanh(re), s = tan(im), c = cosh(re);
      Tensor den = 1.0 + t * t * s * s;
      return join((1.0 + s * s) * t / den, s / (c * c) / den, shape);
    }
    case OpId::sqrt: {  // principal root, from the polar form
      Tensor r = sqrt(magnitude(re, im)), t = atan2(im, re) * 0.5;
      return join(r * cos(t), r * sin(t), shape);
    }
    case OpId::asin: case OpId::acos: case OpId::atan: case OpId::asinh: case OpId::acosh:
    case OpId::atanh:
      return inverse_trig(op, re, im, part, shape);
    default: refuse(op, x.dtype());
  }
}

Tensor binary(OpId op, const Attrs& a, const Tensor& x, const Tensor& y, DType c,
              const Shape& shape) {
  const DType part = complex_part_dtype(c);
  auto [ar, ai] = parts(x, part);
  auto [br, bi] = parts(y, part);
  switch (op) {
    case OpId::add: return join(add(ar, br), plus(ai, bi), shape);
    case OpId::sub: return join(sub(ar, br), minus(ai, bi), shape);
    case OpId::mul:
      if (!bi.defined()) return join(ar * br, ai * br, shape);
      if (!ai.defined()) return join(ar * br, ar * bi, shape);
      return join(ar * br - ai * bi, ar * bi + ai * br, shape);
    case OpId::div: {
      if (a.mode != 0)  // floor / trunc division
        throw_dtype("div", "rounding modes are not supported for dtype " +
                               std::string(dtype_name(c)));
      if (!bi.defined()) return join(ar / br, ai / br, shape);
      Tensor d = br * br + bi * bi;
      if (!ai.defined()) return join(ar * br / d, neg(ar * bi) / d, shape);
      return join((ar * br + ai * bi) / d, (ai * br - ar * bi) / d, shape);
    }
    case OpId::eq: case OpId::ne: {
      Tensor same_im = !ai.defined() ? eq(bi, 0) : !bi.defined() ? eq(ai, 0) : eq(ai, bi);
      Tensor same = logical_and(eq(ar, br), same_im);
      return op == OpId::eq ? same : logical_not(same);
    }
    case OpId::mm: case OpId::bmm: case OpId::matmul: case OpId::outer: case OpId::dot: {
      auto f = [&](const Tensor& p, const Tensor& q) { return dispatch1(op, a, {p, q}); };
      if (!bi.defined()) return join(f(ar, br), f(ai, br), shape);
      if (!ai.defined()) return join(f(ar, br), f(ar, bi), shape);
      return join(f(ar, br) - f(ai, bi), f(ar, bi) + f(ai, br), shape);
    }
    default: refuse(op, c);
  }
}

// x ** y = exp(y log x) on the principal branch; the common real exponents exactly.
Tensor power(const Tensor& x, const Tensor& y, DType c) {
  if (is_constant(y) && !is_complex(y.dtype())) {
    const double p = y.impl()->constant.to_double();
    if (p == 1) return cast_complex(clone(x), c);
    if (p == 2) return mul(x, x);
    if (p == 0.5) return sqrt(cast_complex(x, c));
  }
  return exp(mul(y, log(cast_complex(x, c))));
}

// cumsum: each part on its own (the sum is linear); dims count in x's dims.
// The product along `dim` as a tree of complex products (exact products, gradients through
// zeros), ones padding odd levels.
Tensor product(Tensor x, int64_t dim, bool keepdim) {
  x = movedim(x, {dim}, {-1});
  while (x.size(-1) > 1) {
    const int64_t n = x.size(-1);
    if (n % 2) x = cat({x, ones_like(narrow(x, -1, 0, 1))}, -1);
    const int64_t h = x.size(-1) / 2;
    x = narrow(x, -1, 0, h) * narrow(x, -1, h, h);
  }
  if (x.size(-1) == 0) {  // an empty product is 1
    Shape s = x.shape();
    s[s.size() - 1] = 1;
    x = ones(s, {x.dtype(), x.device()});
  }
  x = movedim(x, {-1}, {dim});
  return keepdim ? x : x.squeeze(dim);
}

// The cumulative product along `dim` by doubling (Hillis-Steele): log2(n) complex products.
Tensor cumulative_product(Tensor x, int64_t dim) {
  const int64_t n = x.size(dim);
  for (int64_t k = 1; k < n; k *= 2) {
    Tensor head = ones_like(narrow(x, dim, 0, k));
    x = x * cat({head, narrow(x, dim, 0, n - k)}, dim);
  }
  return x;
}

Tensor cumulate(const Attrs& a, const Tensor& input, bool cumprod) {
  Tensor x = input;
  if (a.has_dtype) {
    if (!is_complex(a.dtype))
      throw_dtype(cumprod ? "cumprod" : "cumsum", "cannot accumulate " + std::string(dtype_name(x.dtype())) +
                                " into dtype " + std::string(dtype_name(a.dtype)));
    x = cast_complex(x, a.dtype);
  }
  if (x.dim() == 0) return clone(x);
  if (cumprod) return cumulative_product(x, wrap_dim(a.i[0], x.dim(), "cumprod"));
  return as_complex(cumsum(view_as_real(x), wrap_dim(a.i[0], x.dim(), "cumsum")));
}

Tensor reduce(OpId op, const Attrs& a, const Tensor& input) {
  Tensor x = input;
  if (a.has_dtype) {
    if (!is_complex(a.dtype))
      throw_dtype(op_name(op), "cannot reduce " + std::string(dtype_name(x.dtype())) +
                                   " into dtype " + std::string(dtype_name(a.dtype)));
    x = cast_complex(x, a.dtype);
  }
  Shape dims;
  if (a.ints.empty())
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  else
    for (int64_t d : a.ints) dims.push_back(wrap_dim(d, x.dim(), op_name(op)));
  if (dims.empty()) return clone(x);  // a 0-d tensor: its own sum and mean
  if (op == OpId::prod) {
    std::sort(dims.begin(), dims.end());
    for (size_t i = dims.size(); i-- > 0;) x = product(x, dims[i], a.b[0]);
    return x;
  }
  Tensor r = view_as_real(x);
  return as_complex(op == OpId::sum ? sum(r, dims, a.b[0]) : mean(r, dims, a.b[0]));
}

Tensor create(OpId op, const Attrs& a, std::span<const Tensor> in, const TensorMeta& m,
              Device dev) {
  Scalar v = op == OpId::zeros || op == OpId::zeros_like ? Scalar(0)
             : op == OpId::ones || op == OpId::ones_like ? Scalar(1)
                                                         : a.s[0];
  const DType part = complex_part_dtype(m.dtype);
  TensorOptions o{part, in.empty() ? a.device : in[0].device()};
  Tensor re = full(m.shape, v.to_double(), o), im = full(m.shape, v.imag(), o);
  return join(re, im, m.shape);
}

}  // namespace

void check_complex_op(OpId op, const Attrs& a, std::span<const Tensor> in, Device dev) {
  const DType d = complex_in(op, a, in);
  if (route_of(op) == Route::None) refuse(op, d);
  BackendImpl* b = backend_for(dev.backend());
  if (b && !b->is_host())
    throw_not_implemented(op_name(op), "dtype " + std::string(dtype_name(d)) +
                                           " runs on the host devices (flex, cpu) only, not on " +
                                           dev.str());
}

bool route_complex(OpId op, const Attrs& a, std::span<const Tensor> in, const MetaList& meta,
                   Device dev, TensorList& out) {
  const Route r = route_of(op);
  if (r == Route::Kernel) return false;
  switch (op) {
    case OpId::cast:
      if (in[0].dtype() == a.dtype) return false;
      out = {cast_complex(in[0], a.dtype)};
      return true;
    case OpId::copy:
      if (in.size() == 1 || in[0].dtype() == in[1].dtype()) return false;
      out = dispatch(OpId::copy, a, {in[0], cast_complex(in[1], in[0].dtype())});
      return true;
    case OpId::full: case OpId::zeros: case OpId::ones: case OpId::zeros_like:
    case OpId::ones_like: case OpId::full_like:
      out = {create(op, a, in, meta.m[0], dev)};
      return true;
    case OpId::sum: case OpId::mean: case OpId::prod:
      out = {reduce(op, a, in[0])};
      return true;
    case OpId::norm:  // the p-norm of |x|
      out = {dispatch1(op, a, {abs(in[0])})};
      return true;
    case OpId::var: case OpId::std: {  // E|x - mean|^2 = var(re) + var(im)
      auto [re, im] = parts(in[0], complex_part_dtype(in[0].dtype()));
      Tensor v = add(dispatch1(OpId::var, a, {re}), dispatch1(OpId::var, a, {im}));
      out = {op == OpId::std ? sqrt(v) : v};
      return true;
    }
    case OpId::cumsum: case OpId::cumprod:
      out = {cumulate(a, in[0], op == OpId::cumprod)};
      return true;
    case OpId::pow:
      out = {power(in[0], in[1], meta.compute)};
      return true;
    case OpId::pad: {  // each part on its own: the fill value is real (value + 0j)
      auto [re, im] = parts(in[0], complex_part_dtype(in[0].dtype()));
      Attrs zero = a;
      zero.f[0] = 0;
      out = {join(dispatch1(op, a, {re}), dispatch1(op, zero, {im}), meta.m[0].shape)};
      return true;
    }
    case OpId::index_add: {  // x.index_add(dim, index, src, alpha) on each part
      const DType c = meta.m[0].dtype, part = complex_part_dtype(c);
      if (!is_complex(c) || a.s[0].is_complex()) refuse(op, complex_in(op, a, in));
      auto [xr, xi] = parts(in[0], part);
      auto [sr, si] = parts(in[2], part);
      Tensor re = dispatch1(op, a, {xr, in[1], sr});
      Tensor im = si.defined() ? dispatch1(op, a, {xi, in[1], si}) : xi;
      out = {join(re, im, meta.m[0].shape)};
      return true;
    }
    case OpId::where: {
      const DType c = meta.m[0].dtype, part = complex_part_dtype(c);
      auto [ar, ai] = parts(in[1], part);
      auto [br, bi] = parts(in[2], part);
      const Tensor& cond = in[0];
      Tensor im = !ai.defined() ? where(cond, 0.0, bi)
                  : !bi.defined() ? where(cond, ai, 0.0)
                                  : where(cond, ai, bi);
      out = {join(where(cond, ar, br), im, meta.m[0].shape)};
      return true;
    }
    default: break;
  }
  if (op_def(op).category == OpCategory::Unary) {
    out = {unary(op, in[0], meta.m[0].shape)};
    return true;
  }
  // binary ops: the promoted dtype; products: their operands' (one dtype)
  const DType c = is_complex(meta.compute) ? meta.compute : meta.m[0].dtype;
  out = {binary(op, a, in[0], in[1], c, meta.m[0].shape)};
  return true;
}

}  // namespace ember::detail
