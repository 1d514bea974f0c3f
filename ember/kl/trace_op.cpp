// The elementwise table for T = Expr, keyed by OpId at trace time.
#include "ember/kl/trace_op.h"

#include <limits>
#include <string>

#include "ember/error.h"
#include "ember/kl/elementwise.h"
#include "ember/ops/modes.h"

namespace ember::kl {
namespace {

// Attrs::mode of gelu and div, checked (a hand-built Attrs may hold anything).
ops::GeluApprox gelu_mode(const Attrs& a) { return ops::mode_of("gelu", a.mode, ops::GeluApprox::Tanh); }
ops::RoundingMode rounding_mode(const Attrs& a) { return ops::mode_of("div", a.mode, ops::RoundingMode::Trunc); }

bool is_predicate(OpId op) {
  return op == OpId::isnan || op == OpId::isinf || op == OpId::isfinite || op == OpId::logical_not;
}

// The dtype's largest finite value (nan_to_num's default for +-inf, as torch uses).
double max_finite(DType d) {
  switch (d) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return double(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

Expr unary(OpId op, const Attrs& a, const Expr& x, std::span<const Expr> s) {
  using namespace ew;
  switch (op) {
#define EMBER_X(name, expr) case OpId::name: return Def<OpId::name>::f(x);
    EMBER_KL_UNARY_FLOAT(EMBER_X)
#undef EMBER_X
    case OpId::gelu: return gelu_mode(a) == ops::GeluApprox::Tanh ? Def<OpId::gelu>::f_tanh(x) : Def<OpId::gelu>::f(x);
    case OpId::softplus: return Def<OpId::softplus>::f(x, s[0], s[1]);
    case OpId::elu: return Def<OpId::elu>::f(x, s[0]);
    case OpId::neg: return Def<OpId::neg>::f(x);
    case OpId::abs: return Def<OpId::abs>::f(x);
    case OpId::sign: return Def<OpId::sign>::f(x);
    case OpId::square: return Def<OpId::square>::f(x);
    case OpId::relu: return Def<OpId::relu>::f(x);
    case OpId::leaky_relu: return Def<OpId::leaky_relu>::f(x, s[0]);
#define EMBER_X(name, fn) case OpId::name: return Def<OpId::name>::f(x);
    EMBER_KL_ROUNDING(EMBER_X)
#undef EMBER_X
    case OpId::nan_to_num: return Def<OpId::nan_to_num>::f(x, s[0], s[1], s[2]);
    case OpId::bitwise_not: return Def<OpId::bitwise_not>::f(x);
    case OpId::isnan: return Def<OpId::isnan>::f(x);
    case OpId::isinf: return Def<OpId::isinf>::f(x);
    case OpId::isfinite: return Def<OpId::isfinite>::f(x);
    case OpId::logical_not: return Def<OpId::logical_not>::f(x);
    default: break;
  }
  ember::detail::throw_not_implemented("kl", std::string("no elementwise definition for ") + op_name(op));
}

Expr binary(OpId op, const Attrs& a, const Expr& x, const Expr& y) {
  using namespace ew;
  switch (op) {
    case OpId::add: return Def<OpId::add>::f(x, y);
    case OpId::sub: return Def<OpId::sub>::f(x, y);
    case OpId::mul: return Def<OpId::mul>::f(x, y);
    case OpId::div:
      switch (rounding_mode(a)) {
        case ops::RoundingMode::Trunc: return Def<OpId::div>::f_trunc(x, y);
        case ops::RoundingMode::Floor: return Def<OpId::div>::f_floor(x, y);
        case ops::RoundingMode::True: return Def<OpId::div>::f(x, y);
      }
      break;
    case OpId::remainder: return Def<OpId::remainder>::f(x, y);
    case OpId::fmod: return Def<OpId::fmod>::f(x, y);
    case OpId::pow: return Def<OpId::pow>::f(x, y);
    case OpId::atan2: return Def<OpId::atan2>::f(x, y);
    case OpId::maximum: return Def<OpId::maximum>::f(x, y);
    case OpId::minimum: return Def<OpId::minimum>::f(x, y);
#define EMBER_X(name, ...) case OpId::name: return Def<OpId::name>::f(x, y);
    EMBER_KL_COMPARE(EMBER_X)
    EMBER_KL_BITWISE(EMBER_X)
#undef EMBER_X
    case OpId::bitwise_left_shift: return Def<OpId::bitwise_left_shift>::f(x, y);
    case OpId::bitwise_right_shift: return Def<OpId::bitwise_right_shift>::f(x, y);
    default: break;
  }
  ember::detail::throw_not_implemented("kl", std::string("no elementwise definition for ") + op_name(op));
}

}  // namespace

bool is_elementwise(OpId op) {
  OpCategory c = op_def(op).category;
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary;
}

int ew_inputs(OpId op) {
  switch (op_def(op).category) {
    case OpCategory::Unary: return 1;
    case OpCategory::Binary: return 2;
    case OpCategory::Ternary: return 3;
    default: return 0;
  }
}

DType compute_dtype(OpId op, std::span<const DType> in, const MetaList& meta) {
  if (op_def(op).category != OpCategory::Unary) return meta.compute;
  if (op == OpId::cast || is_predicate(op)) return in[0];
  return meta.m[0].dtype;
}

std::vector<Scalar> op_scalars(OpId op, const Attrs& a, DType compute) {
  switch (op) {
    case OpId::softplus: return {a.f[0], a.f[1]};
    case OpId::elu: case OpId::leaky_relu: return {a.f[0]};
    case OpId::nan_to_num: {
      const double hi = max_finite(compute);
      return {a.f[0], a.b[0] ? a.f[1] : hi, a.b[1] ? a.f[2] : -hi};
    }
    case OpId::addcmul: case OpId::addcdiv: return {a.s[0]};
    default: return {};
  }
}

uint32_t static_attrs(OpId op, const Attrs& a) {
  switch (op) {
    case OpId::gelu: return gelu_mode(a) == ops::GeluApprox::Tanh;
    case OpId::div: {
      const ops::RoundingMode m = rounding_mode(a);
      return m == ops::RoundingMode::Trunc ? 1 : m == ops::RoundingMode::Floor ? 2 : 0;
    }
    case OpId::cast: return uint32_t(a.dtype);
    default: return 0;
  }
}

Expr pointwise(OpId op, const Attrs& a, std::span<const Expr> in, std::span<const Expr> scalars,
               DType compute, DType out) {
  const int n = ew_inputs(op);
  if (n == 0) ember::detail::throw_value("kl", std::string(op_name(op)) + " is not an elementwise op");
  if (int(in.size()) != n)
    ember::detail::throw_value("kl", std::string(op_name(op)) + ": expected " + std::to_string(n) +
                                  " operands, found " + std::to_string(in.size()));
  if (!in[0].valid() || in[0].weak())
    ember::detail::throw_value("kl", std::string(op_name(op)) + ": the first operand must be a traced value");
  if (op == OpId::cast) return cast(in[0], out);
  Builder& bd = *in[0].builder();
  const DType e = eval_dtype(compute);
  auto conv = [&](const Expr& x) { return x.valid() ? cast(cast(x, compute), e) : x; };

  std::vector<Expr> s;
  if (scalars.empty()) {
    for (const Scalar& v : op_scalars(op, a, compute))
      s.push_back(v.is_floating() ? bd.constant({e, 1}, v.to_double()) : bd.constant_int({e, 1}, v.to_int()));
  } else {
    for (const Expr& v : scalars) s.push_back(cast(v, e));
  }
  if (s.size() != op_scalars(op, a, compute).size())
    ember::detail::throw_value("kl", std::string(op_name(op)) + ": expected " +
                                  std::to_string(op_scalars(op, a, compute).size()) +
                                  " scalar operands, found " + std::to_string(s.size()));
  Expr r;
  switch (op_def(op).category) {
    case OpCategory::Unary: r = unary(op, a, conv(in[0]), s); break;
    case OpCategory::Binary: r = binary(op, a, conv(in[0]), conv(in[1])); break;
    default: {
      using namespace ew;
      if (op == OpId::where) {
        if (in[0].dtype() != DType::Bool) ember::detail::throw_dtype("kl", "where needs a bool condition");
        r = Def<OpId::where>::f(in[0], conv(in[1]), conv(in[2]));
      } else if (op == OpId::clamp) {
        Expr x = conv(in[0]), lo = conv(in[1]), hi = conv(in[2]);
        r = lo.valid() && hi.valid() ? Def<OpId::clamp>::f(x, lo, hi)
            : lo.valid()             ? Def<OpId::clamp>::f_lo(x, lo)
            : hi.valid()             ? Def<OpId::clamp>::f_hi(x, hi)
                                     : x;
      } else if (op == OpId::lerp) {
        r = Def<OpId::lerp>::f(conv(in[0]), conv(in[1]), conv(in[2]));
      } else if (op == OpId::addcmul) {
        r = Def<OpId::addcmul>::f(conv(in[0]), conv(in[1]), conv(in[2]), s[0]);
      } else {
        r = Def<OpId::addcdiv>::f(conv(in[0]), conv(in[1]), conv(in[2]), s[0]);
      }
    }
  }
  return fence(cast(r, out));  // the op rounds here, as the eager op does
}

}  // namespace ember::kl
