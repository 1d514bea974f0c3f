// Binary and ternary ops: API, type promotion, inference, registration.
// Attrs: div: mode = ops::RoundingMode. addcmul/addcdiv/lerp(scalar w): s[0].
#include "ember/ops/binary.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/complex.h"
#include "ember/ops/creation.h"
#include "ember/ops/modes.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

// torch's combine_categories: the higher priority class wins unless the lower one is of a
// higher category (bool < int < float < complex).
int category(DType d) {
  return d == DType::Bool ? 0 : is_complex(d) ? 3 : is_floating(d) ? 2 : 1;
}
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  // f64 tensor + 1j -> complex128: the wrapped complex counts as complex64 (under f32).
  if (category(*lower) > category(*higher)) return promote_types(*higher, *lower);
  return higher;
}

// A Scalar operand as a 0-d wrapped number on `like`'s device: a graph constant, so no device
// buffer is made or copied, and a lazy device passes it to kernels as a parameter.
Tensor wrap(Scalar s, const Tensor& like) {
  ops::require_defined(like, "binary op", "tensor operand");
  const DType d = s.is_floating() ? DType::F64 : s.is_complex() ? DType::C128 : s.dtype();
  return detail::constant_tensor(s, d, like.device(), true);
}

DType result_type_of(std::span<const Tensor> ts) {
  std::optional<DType> dim, zero, wrapped;
  auto upd = [](std::optional<DType>& st, DType d) { st = st ? promote_types(*st, d) : d; };
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    if (t.impl()->wrapped_number) {
      DType d = t.dtype();
      upd(wrapped, is_floating(d)  ? default_dtype()
                   : is_complex(d) ? complex_dtype_for(default_dtype())
                                   : d);
    } else if (t.dim() == 0) {
      upd(zero, t.dtype());
    } else {
      upd(dim, t.dtype());
    }
  }
  auto r = combine(dim, combine(zero, wrapped));
  return r.value_or(default_dtype());
}

enum class Kind { Arith, TrueDiv, FloatOut, Compare, Logical, Bitwise, Shift, NoBool };

Kind kind_of(OpId op) {
  switch (op) {
    case OpId::div: return Kind::TrueDiv;
    case OpId::atan2: return Kind::FloatOut;
    case OpId::eq: case OpId::ne: case OpId::lt: case OpId::le: case OpId::gt: case OpId::ge:
      return Kind::Compare;
    case OpId::logical_and: case OpId::logical_or: case OpId::logical_xor: return Kind::Logical;
    case OpId::bitwise_and: case OpId::bitwise_or: case OpId::bitwise_xor: return Kind::Bitwise;
    case OpId::bitwise_left_shift: case OpId::bitwise_right_shift: return Kind::Shift;
    case OpId::sub: case OpId::remainder: case OpId::fmod: case OpId::pow: return Kind::NoBool;
    default: return Kind::Arith;
  }
}

Shape broadcast_all(std::span<const Tensor> in, const char* op) {
  // Most calls combine two operands of one shape (or a tensor and a scalar): nothing to check.
  if (in.size() == 2 && in[0].defined() && in[1].defined()) {
    const Shape& a = in[0].impl()->shape;
    const Shape& b = in[1].impl()->shape;
    if (a == b || b.empty()) return a;
    if (a.empty()) return b;
  }
  Shape s;
  for (const Tensor& t : in)
    if (t.defined()) s = broadcast_shapes(s, t.shape(), op);
  return s;
}

void infer_binary(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 2) detail::throw_value(name, "expected 2 inputs");
  ops::require_defined(in[0], name, "the first operand");
  ops::require_defined(in[1], name, "the second operand");
  Shape s = broadcast_all(in, name);
  DType r = result_type_of(in);
  DType o = r;
  switch (kind_of(op)) {
    case Kind::TrueDiv:
      if (ops::mode_of(name, a.mode, ops::RoundingMode::Trunc) == ops::RoundingMode::True)
        r = o = ops::float_result(r);
      else if (r == DType::Bool)
        detail::throw_dtype(name, "floor/trunc division is not supported for bool");
      break;
    case Kind::FloatOut: r = o = ops::float_result(r); break;
    case Kind::Compare: o = DType::Bool; break;
    case Kind::Logical: r = o = DType::Bool; break;
    case Kind::Bitwise:
      ops::require_dtype(name, r, kIntDTypes | mask_of(DType::Bool), "integer or bool operands");
      break;
    case Kind::Shift: ops::require_dtype(name, r, kIntDTypes, "integer operands"); break;
    case Kind::NoBool:
      if (r == DType::Bool)
        detail::throw_dtype(name, "not supported for bool operands (use logical ops)");
      break;
    case Kind::Arith: break;
  }
  out.add(std::move(s), o);
  out.compute = r;
}

void infer_ternary(OpId op, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 3) detail::throw_value(name, "expected 3 inputs");
  Shape s = broadcast_all(in, name);
  switch (op) {
    case OpId::where: {
      ops::require_defined(in[0], name, "condition");
      ops::require_defined(in[1], name, "input");
      ops::require_defined(in[2], name, "other");
      if (in[0].dtype() != DType::Bool)
        detail::throw_dtype(name, "expected a bool condition, found " +
                                      std::string(dtype_name(in[0].dtype())));
      DType r = result_type_of(in.subspan(1));
      out.add(std::move(s), r);
      out.compute = r;
      return;
    }
    case OpId::clamp: {
      ops::require_defined(in[0], name);
      if (!in[1].defined() && !in[2].defined())
        detail::throw_value(name, "expected at least one of min and max");
      DType r = result_type_of(in);
      if (r == DType::Bool) detail::throw_dtype(name, "not supported for bool");
      out.add(std::move(s), r);
      out.compute = r;
      return;
    }
    default: {  // lerp, addcmul, addcdiv
      for (const Tensor& t : in) ops::require_defined(t, name);
      DType r = result_type_of(in);
      if (op == OpId::lerp && !is_floating(result_type_of(in.subspan(0, 2))))
        detail::throw_dtype(name, "expected floating start and end, found " +
                                      std::string(dtype_name(in[0].dtype())) + " and " +
                                      std::string(dtype_name(in[1].dtype())));
      if (op == OpId::addcdiv && !is_floating(r))
        detail::throw_dtype(name, "integer division with addcdiv is not supported; use floating operands");
      out.add(std::move(s), r);
      out.compute = r;
      return;
    }
  }
}

// Binary ops without attributes share one (an Attrs is a few hundred bytes to clear per call).
const Attrs kNoAttrs{};

Tensor bin(OpId op, const Tensor& a, const Tensor& b, const Attrs& at = kNoAttrs) {
  return dispatch1(op, at, {a, b});
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  Tensor ts[] = {a, b};
  return result_type_of(ts);
}

#define EMBER_BINARY_DEF(name)                                                            \
  Tensor name(const Tensor& a, const Tensor& b) { return bin(OpId::name, a, b); }         \
  Tensor name(const Tensor& a, Scalar b) { return bin(OpId::name, a, wrap(b, a)); }       \
  Tensor name(Scalar a, const Tensor& b) { return bin(OpId::name, wrap(a, b), b); }
EMBER_BINARY_DEF(add) EMBER_BINARY_DEF(sub) EMBER_BINARY_DEF(mul) EMBER_BINARY_DEF(div)
EMBER_BINARY_DEF(remainder) EMBER_BINARY_DEF(fmod) EMBER_BINARY_DEF(pow)
EMBER_BINARY_DEF(atan2) EMBER_BINARY_DEF(maximum) EMBER_BINARY_DEF(minimum)
EMBER_BINARY_DEF(eq) EMBER_BINARY_DEF(ne) EMBER_BINARY_DEF(lt) EMBER_BINARY_DEF(le)
EMBER_BINARY_DEF(gt) EMBER_BINARY_DEF(ge) EMBER_BINARY_DEF(logical_and)
EMBER_BINARY_DEF(logical_or) EMBER_BINARY_DEF(logical_xor) EMBER_BINARY_DEF(bitwise_and)
EMBER_BINARY_DEF(bitwise_or) EMBER_BINARY_DEF(bitwise_xor)
EMBER_BINARY_DEF(bitwise_left_shift) EMBER_BINARY_DEF(bitwise_right_shift)
#undef EMBER_BINARY_DEF

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  if (alpha.to_double() == 1 && !alpha.is_floating()) return add(a, b);
  return add(a, mul(b, alpha));
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  if (alpha.to_double() == 1 && !alpha.is_floating()) return sub(a, b);
  return sub(a, mul(b, alpha));
}
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  Attrs at;
  at.mode = uint8_t(ops::parse_rounding_mode("div", rounding_mode));
  return bin(OpId::div, a, b, at);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  return dispatch1(OpId::where, {}, {c, a, b});
}
Tensor where(const Tensor& c, const Tensor& a, Scalar b) { return where(c, a, wrap(b, a)); }
Tensor where(const Tensor& c, Scalar a, const Tensor& b) { return where(c, wrap(a, b), b); }
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  ops::require_defined(x, "clamp");
  return dispatch1(OpId::clamp, {}, {x, lo ? wrap(*lo, x) : Tensor(), hi ? wrap(*hi, x) : Tensor()});
}
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  return dispatch1(OpId::clamp, {}, {x, lo, hi});
}
Tensor lerp(const Tensor& a, const Tensor& b, Scalar w) { return lerp(a, b, wrap(w, a)); }
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  return dispatch1(OpId::lerp, {}, {a, b, w});
}
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  Attrs at;
  at.s[0] = value;
  return dispatch1(OpId::addcmul, at, {x, t1, t2});
}
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  Attrs at;
  at.s[0] = value;
  return dispatch1(OpId::addcdiv, at, {x, t1, t2});
}

#define EMBER_X(sym, op)                                                                  \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return op(a, b); }             \
  Tensor operator sym(const Tensor& a, Scalar b) { return op(a, b); }                    \
  Tensor operator sym(Scalar a, const Tensor& b) { return op(a, b); }
EMBER_TENSOR_OPERATORS(EMBER_X)
#undef EMBER_X
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  if (is_complex(a.dtype()) || is_complex(b.dtype()))  // both parts, each within tolerance
    return allclose(view_as_real(a.to(DType::C128)), view_as_real(b.to(DType::C128)), rtol, atol,
                    equal_nan);
  Tensor x = a.to(DType::F64), y = b.to(DType::F64);
  broadcast_shapes(x.shape(), y.shape(), "allclose");
  Tensor diff = abs(x - y);
  Tensor tol = atol + rtol * abs(y);
  Tensor ok = le(diff, tol) | (eq(x, y));  // eq covers equal infinities
  if (equal_nan) ok = ok | (isnan(x) & isnan(y));
  return all(ok).item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  if (a.numel() == 0) return true;
  return all(eq(a, b)).item<bool>();
}

namespace ops {
void register_binary_ops() {
  set_infer_for_category(OpCategory::Binary, infer_binary);
  set_infer_for_category(OpCategory::Ternary, infer_ternary);
  for (OpId op : {OpId::eq, OpId::ne, OpId::lt, OpId::le, OpId::gt, OpId::ge, OpId::logical_and,
                  OpId::logical_or, OpId::logical_xor, OpId::bitwise_and, OpId::bitwise_or,
                  OpId::bitwise_xor, OpId::bitwise_left_shift, OpId::bitwise_right_shift})
    op_def_mut(op).differentiable = false;
}
}  // namespace ops

}  // namespace ember
