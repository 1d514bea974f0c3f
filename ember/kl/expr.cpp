// Expr operators, maths, conversions and device control flow: each appends IR to the builder
// of its operands, folding what is known while tracing (weak literals, constant conditions).
#include "ember/kl/expr.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ember/error.h"

namespace ember::kl {
namespace {

[[noreturn]] void fail(const std::string& msg) { ember::detail::throw_value("kl", msg); }

Builder& owner(const Expr& a, const Expr& b = {}, const Expr& c = {}) {
  Builder* bd = nullptr;
  for (const Expr* e : {&a, &b, &c}) {
    if (!e->builder()) continue;
    if (bd && bd != e->builder()) fail("operands come from different kernels");
    bd = e->builder();
  }
  return bd ? *bd : Builder::current();
}

void need(const Expr& e, const char* what) {
  if (!e.valid()) fail(std::string(what) + ": an absent value was used");
}

// Both operands as traced values of one dtype and lane count (weak literals take the other's).
std::pair<Expr, Expr> unify(const char* what, const Expr& a, const Expr& b) {
  Builder& bd = owner(a, b);
  Expr x = a.weak() ? bd.typed(a, b.type()) : a;
  Expr y = b.weak() ? bd.typed(b, x.type()) : b;
  if (x.dtype() != y.dtype())
    fail(std::string(what) + ": operand dtypes " + type_name(x.type().scalar()) + " and " +
         type_name(y.type().scalar()) + " differ (cast one explicitly)");
  if (x.lanes() != y.lanes()) {
    if (x.lanes() == 1) x = broadcast(x, y.lanes());
    else if (y.lanes() == 1) y = broadcast(y, x.lanes());
    else fail(std::string(what) + ": lane counts " + std::to_string(x.lanes()) + " and " +
              std::to_string(y.lanes()) + " differ");
  }
  return {x, y};
}

Expr emit(Builder& bd, Op op, Type t, const Expr& a, const Expr& b = {}, const Expr& c = {}) {
  Inst in;
  in.op = op;
  in.type = t;
  in.a = a.valid() ? a.id() : -1;
  in.b = b.valid() ? b.id() : -1;
  in.c = c.valid() ? c.id() : -1;
  return bd.emit(in);
}

// Two weak literals: folded while tracing (in int64 when both are integers, else in double).
Expr fold(Op op, const Expr& a, const Expr& b) {
  if (a.weak_int() && b.weak_int()) {
    const int64_t x = a.literal_int(), y = b.literal_int();
    const uint64_t ux = uint64_t(x), uy = uint64_t(y);
    switch (op) {
      case Op::Add: return Expr(int64_t(ux + uy));
      case Op::Sub: return Expr(int64_t(ux - uy));
      case Op::Mul: return Expr(int64_t(ux * uy));
      case Op::Div: return Expr(y == 0 ? 0 : y == -1 ? int64_t(0 - ux) : x / y);
      case Op::Rem: return Expr(y == 0 ? x : y == -1 ? 0 : x % y);
      case Op::And: return Expr(x & y);
      case Op::Or: return Expr(x | y);
      case Op::Xor: return Expr(x ^ y);
      case Op::Shl: return Expr(y < 0 || y >= 64 ? 0 : int64_t(ux << y));
      case Op::Shr: return Expr(y < 0 || y >= 64 ? (x < 0 ? -1 : 0) : x >> y);
      default: break;
    }
  }
  const double x = a.literal(), y = b.literal();
  switch (op) {
    case Op::Add: return Expr(x + y);
    case Op::Sub: return Expr(x - y);
    case Op::Mul: return Expr(x * y);
    case Op::Div: return Expr(x / y);
    case Op::Pow: return Expr(std::pow(x, y));
    case Op::Atan2: return Expr(std::atan2(x, y));
    case Op::Fmod: return Expr(std::fmod(x, y));
    case Op::Eq: return Expr(int(x == y));
    case Op::Ne: return Expr(int(x != y));
    case Op::Lt: return Expr(int(x < y));
    case Op::Le: return Expr(int(x <= y));
    case Op::Gt: return Expr(int(x > y));
    case Op::Ge: return Expr(int(x >= y));
    default: fail(std::string(op_name(op)) + " of two float literals");
  }
}

Inst marker(Op op) {
  Inst in;
  in.op = op;
  return in;
}

bool is_compare(Op op) { return op >= Op::Eq && op <= Op::Ge; }

Expr binary(Op op, const char* what, const Expr& a, const Expr& b) {
  need(a, what);
  need(b, what);
  if (a.weak() && b.weak()) return fold(op, a, b);
  auto [x, y] = unify(what, a, b);
  const Type t = x.type();
  const DType d = t.dtype;
  bool ok = true;
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: ok = d != DType::Bool; break;
    case Op::And: case Op::Or: case Op::Xor: ok = !is_floating(d); break;
    case Op::Shl: case Op::Shr: ok = is_integral(d); break;
    case Op::Pow: case Op::Atan2: case Op::Fmod: ok = is_floating(d); break;
    default: break;
  }
  if (!ok) fail(std::string(what) + " is not defined for " + type_name(t.scalar()));
  Builder& bd = owner(x, y);
  if (is_integral(d)) {  // integer identities (index arithmetic is full of them)
    const Inst* cx = bd.as_const(x);
    const Inst* cy = bd.as_const(y);
    if ((op == Op::Add && cx && cx->imm == 0) || (op == Op::Mul && cx && cx->imm == 1)) return y;
    if (((op == Op::Add || op == Op::Sub) && cy && cy->imm == 0) ||
        ((op == Op::Mul || op == Op::Div) && cy && cy->imm == 1))
      return x;
  }
  return emit(bd, op, is_compare(op) ? Type{DType::Bool, t.lanes} : t, x, y);
}

// Logical and/or: bool operands, with constant operands folded.
Expr logical(Op op, const char* what, const Expr& a, const Expr& b) {
  need(a, what);
  need(b, what);
  if (a.weak() && b.weak())
    return Expr(int(op == Op::And ? (a.literal() != 0 && b.literal() != 0)
                                  : (a.literal() != 0 || b.literal() != 0)));
  for (const Expr* e : {&a, &b})
    if (!e->weak() && e->dtype() != DType::Bool)
      fail(std::string(what) + " needs bool operands, found " + type_name(e->type()));
  Builder& bd = owner(a, b);
  const uint8_t lanes = uint8_t(std::max(a.lanes(), b.lanes()));
  for (const Expr* e : {&a, &b}) {
    const Expr& other = e == &a ? b : a;
    const Inst* c = bd.as_const(*e);
    if (!e->weak() && !c) continue;
    const bool v = e->weak() ? e->literal() != 0 : c->imm != 0;
    if (op == Op::And && !v) return bd.constant_int({DType::Bool, lanes}, 0);
    if (op == Op::Or && v) return bd.constant_int({DType::Bool, lanes}, 1);
    if (!other.weak()) return broadcast(other, lanes);  // x && true == x
  }
  return binary(op, what, a, b);
}

Expr math1(Op op, const char* what, const Expr& x, double (*f)(double)) {
  need(x, what);
  if (x.weak()) return Expr(f(x.literal()));
  if (!is_floating(x.dtype()))
    fail(std::string(what) + " needs a float operand, found " + type_name(x.type()) + " (cast first)");
  return emit(owner(x), op, x.type(), x);
}

Expr predicate(Op op, const char* what, const Expr& x, bool (*f)(double)) {
  need(x, what);
  if (x.weak()) return Expr(int(f(x.literal())));
  Builder& bd = owner(x);
  const Type bt{DType::Bool, x.type().lanes};
  if (!is_floating(x.dtype())) return bd.constant_int(bt, 0);  // integers are never NaN/inf
  return emit(bd, op, bt, x);
}

double round_even_d(double v) { return std::nearbyint(v); }
bool isnan_d(double v) { return std::isnan(v); }
bool isinf_d(double v) { return std::isinf(v); }

}  // namespace

Expr operator+(const Expr& a, const Expr& b) { return binary(Op::Add, "add", a, b); }
Expr operator-(const Expr& a, const Expr& b) { return binary(Op::Sub, "sub", a, b); }
Expr operator*(const Expr& a, const Expr& b) { return binary(Op::Mul, "mul", a, b); }
Expr operator/(const Expr& a, const Expr& b) { return binary(Op::Div, "div", a, b); }
Expr operator%(const Expr& a, const Expr& b) { return binary(Op::Rem, "rem", a, b); }
Expr operator&(const Expr& a, const Expr& b) { return binary(Op::And, "and", a, b); }
Expr operator|(const Expr& a, const Expr& b) { return binary(Op::Or, "or", a, b); }
Expr operator^(const Expr& a, const Expr& b) { return binary(Op::Xor, "xor", a, b); }
Expr operator<<(const Expr& a, const Expr& b) { return binary(Op::Shl, "shl", a, b); }
Expr operator>>(const Expr& a, const Expr& b) { return binary(Op::Shr, "shr", a, b); }
Expr operator==(const Expr& a, const Expr& b) { return binary(Op::Eq, "eq", a, b); }
Expr operator!=(const Expr& a, const Expr& b) { return binary(Op::Ne, "ne", a, b); }
Expr operator<(const Expr& a, const Expr& b) { return binary(Op::Lt, "lt", a, b); }
Expr operator<=(const Expr& a, const Expr& b) { return binary(Op::Le, "le", a, b); }
Expr operator>(const Expr& a, const Expr& b) { return binary(Op::Gt, "gt", a, b); }
Expr operator>=(const Expr& a, const Expr& b) { return binary(Op::Ge, "ge", a, b); }
Expr operator&&(const Expr& a, const Expr& b) { return logical(Op::And, "logical and", a, b); }
Expr operator||(const Expr& a, const Expr& b) { return logical(Op::Or, "logical or", a, b); }

Expr operator-(const Expr& a) {
  need(a, "neg");
  if (a.weak_int()) return Expr(int64_t(0 - uint64_t(a.literal_int())));
  if (a.weak()) return Expr(-a.literal());
  if (a.dtype() == DType::Bool) fail("neg is not defined for bool");
  return emit(owner(a), Op::Neg, a.type(), a);
}
Expr operator~(const Expr& a) {
  need(a, "not");
  if (a.weak_int()) return Expr(~a.literal_int());
  if (a.weak() || is_floating(a.dtype())) fail("bitwise not needs an integer or bool operand");
  return emit(owner(a), Op::Not, a.type(), a);
}
Expr operator!(const Expr& a) {
  need(a, "logical not");
  if (a.weak()) return Expr(int(a.literal() == 0));
  if (a.dtype() != DType::Bool) fail("logical not needs a bool operand, found " + type_name(a.type()));
  if (const Inst* c = owner(a).as_const(a)) return owner(a).constant_int(a.type(), !c->imm);
  return emit(owner(a), Op::Not, a.type(), a);
}

#define EMBER_KL_MATH(name, op, fn) \
  Expr name(const Expr& x) { return math1(Op::op, #name, x, [](double v) { return fn(v); }); }
EMBER_KL_MATH(exp, Exp, std::exp) EMBER_KL_MATH(exp2, Exp2, std::exp2)
EMBER_KL_MATH(expm1, Expm1, std::expm1) EMBER_KL_MATH(log, Log, std::log)
EMBER_KL_MATH(log2, Log2, std::log2) EMBER_KL_MATH(log10, Log10, std::log10)
EMBER_KL_MATH(log1p, Log1p, std::log1p) EMBER_KL_MATH(sqrt, Sqrt, std::sqrt)
EMBER_KL_MATH(sin, Sin, std::sin) EMBER_KL_MATH(cos, Cos, std::cos) EMBER_KL_MATH(tan, Tan, std::tan)
EMBER_KL_MATH(asin, Asin, std::asin) EMBER_KL_MATH(acos, Acos, std::acos)
EMBER_KL_MATH(atan, Atan, std::atan) EMBER_KL_MATH(sinh, Sinh, std::sinh)
EMBER_KL_MATH(cosh, Cosh, std::cosh) EMBER_KL_MATH(tanh, Tanh, std::tanh)
EMBER_KL_MATH(asinh, Asinh, std::asinh) EMBER_KL_MATH(acosh, Acosh, std::acosh)
EMBER_KL_MATH(atanh, Atanh, std::atanh) EMBER_KL_MATH(erf, Erf, std::erf)
EMBER_KL_MATH(floor, Floor, std::floor) EMBER_KL_MATH(ceil, Ceil, std::ceil)
EMBER_KL_MATH(trunc, Trunc, std::trunc) EMBER_KL_MATH(round_even, RoundEven, round_even_d)
EMBER_KL_MATH(fabs, Abs, std::fabs)
#undef EMBER_KL_MATH
Expr isnan(const Expr& x) { return predicate(Op::IsNan, "isnan", x, isnan_d); }
Expr isinf(const Expr& x) { return predicate(Op::IsInf, "isinf", x, isinf_d); }
Expr atan2(const Expr& a, const Expr& b) { return binary(Op::Atan2, "atan2", a, b); }
Expr pow(const Expr& a, const Expr& b) { return binary(Op::Pow, "pow", a, b); }
Expr fmod(const Expr& a, const Expr& b) { return binary(Op::Fmod, "fmod", a, b); }

Expr copysign(const Expr& a, const Expr& b) {
  if (a.weak() && b.weak()) return Expr(std::copysign(a.literal(), b.literal()));
  auto [x, y] = unify("copysign", a, b);
  if (!is_floating(x.dtype())) fail("copysign needs float operands, found " + type_name(x.type()));
  const size_t size = itemsize(x.dtype());
  const DType bits = size == 2 ? DType::I16 : size == 4 ? DType::I32 : DType::I64;
  Builder& bd = owner(x, y);
  const Type bt = x.type();
  const Expr sign = bd.constant_int({bits, bt.lanes}, int64_t(uint64_t(1) << (size * 8 - 1)));
  Expr r = (bitcast(x, bits) & ~sign) | (bitcast(y, bits) & sign);
  return bitcast(r, x.dtype());
}

Expr select(const Expr& cond, const Expr& a, const Expr& b) {
  need(cond, "select");
  need(a, "select");
  need(b, "select");
  if (cond.weak()) return cond.literal() != 0 ? a : b;
  if (cond.dtype() != DType::Bool) fail("select needs a bool condition, found " + type_name(cond.type()));
  Builder& bd = owner(cond, a, b);
  if (const Inst* c = bd.as_const(cond)) return c->imm ? a : b;
  if (a.weak() && b.weak())
    fail("select of two weakly typed literals: give one a dtype with kl::lit(like, v)");
  auto [x, y] = unify("select", a, b);
  Expr c = cond;
  if (c.lanes() != x.lanes()) {
    if (x.lanes() == 1) {
      x = broadcast(x, c.lanes());
      y = broadcast(y, c.lanes());
    } else if (c.lanes() != 1) {
      fail("select: condition has " + std::to_string(c.lanes()) + " lanes, values " +
           std::to_string(x.lanes()));
    }
  }
  return emit(bd, Op::Select, x.type(), c, x, y);
}

Expr lit(const Expr& like, double v) { return owner(like).constant(like.type(), v); }

Expr cast(const Expr& x, DType to) {
  need(x, "cast");
  Builder& bd = owner(x);
  if (x.weak()) return bd.typed(x, {to, 1});
  if (x.dtype() == to) return x;
  if (const Inst* c = bd.as_const(x)) {  // constants convert while tracing
    if (is_floating(c->type.dtype)) return bd.constant({to, x.type().lanes}, const_as_double(c->type.dtype, c->imm));
    if (is_floating(to)) return bd.constant({to, x.type().lanes}, double(c->imm));
    return bd.constant_int({to, x.type().lanes}, c->imm);
  }
  return emit(bd, Op::Cast, {to, x.type().lanes}, x);
}

Expr bitcast(const Expr& x, DType to) {
  need(x, "bitcast");
  if (x.weak()) fail("bitcast of a weakly typed literal");
  if (itemsize(x.dtype()) != itemsize(to))
    fail("bitcast from " + type_name(x.type().scalar()) + " to " + type_name({to, 1}) + ": sizes differ");
  if (x.dtype() == to) return x;
  return emit(owner(x), Op::Bitcast, {to, x.type().lanes}, x);
}

Expr broadcast(const Expr& x, int lanes) {
  need(x, "broadcast");
  if (x.weak() || x.lanes() == lanes) return x;
  if (x.lanes() != 1 || lanes < 1 || lanes > kMaxLanes)
    fail("broadcast of " + type_name(x.type()) + " to " + std::to_string(lanes) + " lanes");
  Builder& bd = owner(x);
  if (const Inst* c = bd.as_const(x)) return bd.constant_bits(x.type().with_lanes(lanes), c->imm);
  return emit(bd, Op::Broadcast, x.type().with_lanes(lanes), x);
}

Expr extract(const Expr& x, int lane) {
  need(x, "extract");
  if (x.weak()) return x;
  if (lane < 0 || lane >= x.lanes())
    fail("extract of lane " + std::to_string(lane) + " from " + type_name(x.type()));
  if (x.lanes() == 1) return x;
  Builder& bd = owner(x);
  Inst in;
  in.op = Op::Extract;
  in.type = x.type().scalar();
  in.a = x.id();
  in.imm = lane;
  return bd.emit(in);
}

Expr fence(const Expr& x) {
  need(x, "fence");
  if (x.weak() || !is_floating(x.dtype())) return x;  // only float rounding can change
  Builder& bd = owner(x);
  if (bd.as_const(x) || bd.inst(x.id()).op == Op::Fence) return x;
  return emit(bd, Op::Fence, x.type(), x);
}

Expr iota(DType dtype, int lanes) {
  Inst in;
  in.op = Op::Iota;
  in.type = {dtype, uint8_t(lanes)};
  return Builder::current().emit(in);
}

void for_range(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body,
               int64_t step) {
  Builder& bd = owner(begin, end);
  if (step < 1) fail("for_range step must be >= 1, found " + std::to_string(step));
  auto as_i64 = [&](const Expr& e) {
    need(e, "for_range");
    Expr v = bd.typed(e, {DType::I64, 1});
    if (!is_integral(v.dtype()) || v.lanes() != 1)
      fail("for_range bounds must be scalar integers, found " + type_name(v.type()));
    return cast(v, DType::I64);
  };
  Expr b = as_i64(begin), e = as_i64(end);
  Inst in;
  in.op = Op::For;
  in.type = {DType::I64, 1};
  in.a = b.id();
  in.b = e.id();
  in.imm = step;
  Expr i = bd.emit_region(in);
  body(i);
  bd.close_region();
  bd.emit(marker(Op::EndFor));
}

void if_(const Expr& cond, const std::function<void()>& then_, const std::function<void()>& else_) {
  need(cond, "if_");
  Builder& bd = owner(cond);
  if (cond.weak()) {
    if (cond.literal() != 0) then_();
    else if (else_) else_();
    return;
  }
  if (!(cond.type() == Type{DType::Bool, 1}))
    fail("if_ needs a scalar bool condition, found " + type_name(cond.type()));
  if (const Inst* c = bd.as_const(cond)) {
    if (c->imm) then_();
    else if (else_) else_();
    return;
  }
  Inst in;
  in.op = Op::If;
  in.a = cond.id();
  bd.emit_region(in);
  then_();
  bd.close_region();
  if (else_) {
    bd.emit_region(marker(Op::Else));
    else_();
    bd.close_region();
  }
  bd.emit(marker(Op::EndIf));
}

Expr plane_reduce(const Expr& x, ReduceKind kind) {
  need(x, "plane_reduce");
  Inst in;
  in.op = Op::PlaneReduce;
  in.sub = uint8_t(kind);
  in.type = x.type();
  in.a = x.id();
  return owner(x).emit(in);
}
Expr plane_broadcast(const Expr& x, const Expr& lane) {
  Builder& bd = owner(x, lane);
  return emit(bd, Op::PlaneBroadcast, x.type(), x, bd.typed(lane, {DType::I64, 1}));
}
Expr plane_shuffle(const Expr& x, const Expr& src_lane) {
  Builder& bd = owner(x, src_lane);
  return emit(bd, Op::PlaneShuffle, x.type(), x, bd.typed(src_lane, {DType::I64, 1}));
}
Expr plane_shuffle_xor(const Expr& x, int64_t mask) {
  Inst in;
  in.op = Op::PlaneShuffleXor;
  in.type = x.type();
  in.a = x.id();
  in.imm = mask;
  return owner(x).emit(in);
}
Expr lane_id() { return Builder::current().emit({Op::LaneId, 0, {DType::I64, 1}}); }
Expr local_id() { return Builder::current().emit({Op::LocalId, 0, {DType::I64, 1}}); }
Expr plane_size() { return Builder::current().emit({Op::PlaneSize, 0, {DType::I64, 1}}); }
void barrier() { Builder::current().emit(marker(Op::Barrier)); }

}  // namespace ember::kl
