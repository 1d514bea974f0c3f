// ember ops as ONNX nodes: unary, binary and ternary elementwise ops.
#include <cmath>

#include "ember/ember.h"
#include "ember/onnx/export_ops.h"
#include "ember/ops/modes.h"

namespace ember::onnx::detail {

namespace {

bool unary(Emitter& e, const char* type) {
  e.out(0, e.node1(type, {e.in_as(0, e.output().dtype())}));
  return true;
}

bool gelu(Emitter& e) {
  const DType d = e.output().dtype();
  const std::string x = e.in_as(0, d);
  std::string inner;
  if (ops::GeluApprox(e.op().attrs.mode) == ops::GeluApprox::Tanh) {
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    std::string x3 = e.node1("Mul", {x, e.node1("Mul", {x, x})});
    std::string u = e.node1("Add", {x, with_const(e, "Mul", x3, 0.044715, d)});
    inner = e.node1("Tanh", {with_const(e, "Mul", u, std::sqrt(2.0 / M_PI), d)});
  } else {  // 0.5 x (1 + erf(x / sqrt 2))
    inner = e.node1("Erf", {with_const(e, "Mul", x, M_SQRT1_2, d)});
  }
  std::string half_x = with_const(e, "Mul", x, 0.5, d);
  e.out(0, e.node1("Mul", {half_x, with_const(e, "Add", inner, 1.0, d)}));
  return true;
}

bool softplus(Emitter& e) {
  // torch: x where beta x > threshold, else log(1 + exp(beta x)) / beta.
  const DType d = e.output().dtype();
  const double beta = e.op().attrs.f[0], threshold = e.op().attrs.f[1];
  const std::string x = e.in_as(0, d);
  std::string bx = beta == 1 ? x : with_const(e, "Mul", x, beta, d);
  std::string sp = e.node1("Softplus", {bx});
  if (beta != 1) sp = with_const(e, "Div", sp, beta, d);
  std::string big = with_const(e, "Greater", bx, threshold, d);
  e.out(0, e.node1("Where", {big, x, sp}));
  return true;
}

bool binary(Emitter& e, const char* type) {
  const DType out = e.output().dtype();
  e.out(0, e.node1(type, {e.in_as(0, out), e.in_as(1, out)}));
  return true;
}

bool compare(Emitter& e, const char* type, bool negate = false) {
  const DType c = e.op().compute;
  std::string r = e.node1(type, {e.in_as(0, c), e.in_as(1, c)});
  e.out(0, negate ? e.node1("Not", {r}) : r);
  return true;
}

bool logical(Emitter& e, const char* type) {
  e.out(0, e.node1(type, {e.in_as(0, kBool), e.in_as(1, kBool)}));
  return true;
}

bool bitwise(Emitter& e, const char* type) {  // ONNX's bitwise ops on integers came in opset 18
  if (e.output().dtype() != kBool) {
    e.unsupported("on integers, which ONNX has from opset 18");
    return false;
  }
  return logical(e, type);
}

// atan(y / x) moved to the quadrant of (x, y); 0 at the origin, as torch.
bool atan2(Emitter& e) {
  const DType d = e.output().dtype();
  const std::string y = e.in_as(0, d), x = e.in_as(1, d);
  const std::string a = e.node1("Atan", {e.node1("Div", {y, x})});
  const std::string up = with_const(e, "Add", a, M_PI, d), down = with_const(e, "Sub", a, M_PI, d);
  const std::string upper = e.node1("Not", {with_const(e, "Less", y, 0.0, d)});
  const std::string left = with_const(e, "Less", x, 0.0, d);
  std::string r = e.node1("Where", {left, e.node1("Where", {upper, up, down}), a});
  const std::string origin =
      e.node1("And", {with_const(e, "Equal", x, 0.0, d), with_const(e, "Equal", y, 0.0, d)});
  e.out(0, e.node1("Where", {origin, e.scalar(0.0, d), r}));
  return true;
}

bool div(Emitter& e) {
  const DType out = e.output().dtype();
  auto mode = ops::RoundingMode(e.op().attrs.mode);
  std::string q = e.node1("Div", {e.in_as(0, out), e.in_as(1, out)});
  if (mode == ops::RoundingMode::True) {
    e.out(0, q);
    return true;
  }
  if (!is_floating(out)) {
    e.unsupported("integer rounding_mode floor or trunc");
    return false;
  }
  if (mode == ops::RoundingMode::Floor) {
    e.out(0, e.node1("Floor", {q}));
    return true;
  }
  // trunc: toward zero
  std::string neg = with_const(e, "Less", q, 0.0, out);
  e.out(0, e.node1("Where", {neg, e.node1("Ceil", {q}), e.node1("Floor", {q})}));
  return true;
}

bool remainder(Emitter& e, bool fmod) {
  const DType out = e.output().dtype();
  if (fmod && !is_floating(out)) {  // C's % on integers (the dividend's sign): ONNX has none
    e.unsupported("integer fmod");
    return false;
  }
  const std::string a = e.in_as(0, out), b = e.in_as(1, out);
  if (fmod || !is_floating(out)) {  // float fmod, or integer % with the divisor's sign
    e.out(0, e.node1("Mod", {a, b}));
    e.attr("fmod", int64_t(fmod ? 1 : 0));
    return true;
  }
  // Python's %: a - floor(a / b) * b
  std::string f = e.node1("Floor", {e.node1("Div", {a, b})});
  e.out(0, e.node1("Sub", {a, e.node1("Mul", {f, b})}));
  return true;
}

bool where(Emitter& e) {
  const DType out = e.output().dtype();
  e.out(0, e.node1("Where", {e.in_as(0, kBool), e.in_as(1, out), e.in_as(2, out)}));
  return true;
}

bool clamp(Emitter& e) {
  const DType out = e.output().dtype();
  std::string x = e.in_as(0, out);
  bool scalars = (!e.has(1) || e.input(1).dim() == 0) && (!e.has(2) || e.input(2).dim() == 0);
  if (scalars) {
    e.out(0,
          e.node1("Clip", {x, e.has(1) ? e.in_as(1, out) : "", e.has(2) ? e.in_as(2, out) : ""}));
    return true;
  }
  if (e.has(1)) x = e.node1("Max", {x, e.in_as(1, out)});
  if (e.has(2)) x = e.node1("Min", {x, e.in_as(2, out)});
  e.out(0, x);
  return true;
}

bool addc(Emitter& e, const char* type) {  // x + value * (t1 op t2)
  const DType out = e.output().dtype();
  std::string p = e.node1(type, {e.in_as(1, out), e.in_as(2, out)});
  double v = e.op().attrs.s[0].to_double();
  if (v != 1) p = with_const(e, "Mul", p, v, out);
  e.out(0, e.node1("Add", {e.in_as(0, out), p}));
  return true;
}

bool lerp(Emitter& e) {  // a + w (b - a)
  const DType out = e.output().dtype();
  std::string a = e.in_as(0, out);
  std::string d = e.node1("Sub", {e.in_as(1, out), a});
  e.out(0, e.node1("Add", {a, e.node1("Mul", {e.in_as(2, out), d})}));
  return true;
}

}  // namespace

void add_emit_math(EmitTable& t) {
#define EMBER_UNARY(op, type) t[size_t(OpId::op)] = [](Emitter& e) { return unary(e, type); };
  EMBER_UNARY(neg, "Neg")
  EMBER_UNARY(abs, "Abs")
  EMBER_UNARY(sign, "Sign")
  EMBER_UNARY(exp, "Exp") EMBER_UNARY(log, "Log") EMBER_UNARY(sqrt, "Sqrt")
      EMBER_UNARY(reciprocal, "Reciprocal") EMBER_UNARY(sin, "Sin") EMBER_UNARY(cos, "Cos")
          EMBER_UNARY(tan, "Tan") EMBER_UNARY(asin, "Asin") EMBER_UNARY(acos, "Acos")
              EMBER_UNARY(atan, "Atan") EMBER_UNARY(sinh, "Sinh") EMBER_UNARY(cosh, "Cosh")
                  EMBER_UNARY(tanh, "Tanh") EMBER_UNARY(asinh, "Asinh") EMBER_UNARY(acosh, "Acosh")
                      EMBER_UNARY(atanh, "Atanh") EMBER_UNARY(erf, "Erf")
                          EMBER_UNARY(floor, "Floor") EMBER_UNARY(ceil, "Ceil")
                              EMBER_UNARY(round, "Round") EMBER_UNARY(sigmoid, "Sigmoid")
                                  EMBER_UNARY(relu, "Relu")
#undef EMBER_UNARY
                                      t[size_t(OpId::isnan)] = [](Emitter& e) {
                                        e.out(0, e.node1("IsNaN", {e.in(0)}));
                                        return true;
                                      };
  t[size_t(OpId::isinf)] = [](Emitter& e) {
    e.out(0, e.node1("IsInf", {e.in(0)}));
    return true;
  };
  t[size_t(OpId::logical_not)] = [](Emitter& e) {
    e.out(0, e.node1("Not", {e.in_as(0, kBool)}));
    return true;
  };
  t[size_t(OpId::cast)] = [](Emitter& e) {
    e.out(0, e.in_as(0, e.output().dtype()));
    return true;
  };
  t[size_t(OpId::rsqrt)] = [](Emitter& e) {
    e.out(0, e.node1("Reciprocal", {e.node1("Sqrt", {e.in_as(0, e.output().dtype())})}));
    return true;
  };
  t[size_t(OpId::square)] = [](Emitter& e) {
    std::string x = e.in_as(0, e.output().dtype());
    e.out(0, e.node1("Mul", {x, x}));
    return true;
  };
  t[size_t(OpId::log1p)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    e.out(0, e.node1("Log", {with_const(e, "Add", e.in_as(0, d), 1.0, d)}));
    return true;
  };
  t[size_t(OpId::expm1)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    e.out(0, with_const(e, "Sub", e.node1("Exp", {e.in_as(0, d)}), 1.0, d));
    return true;
  };
  t[size_t(OpId::log2)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    e.out(0, with_const(e, "Div", e.node1("Log", {e.in_as(0, d)}), M_LN2, d));
    return true;
  };
  t[size_t(OpId::log10)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    e.out(0, with_const(e, "Div", e.node1("Log", {e.in_as(0, d)}), M_LN10, d));
    return true;
  };
  t[size_t(OpId::trunc)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    const std::string x = e.in_as(0, d);
    e.out(0, e.node1("Where", {with_const(e, "Less", x, 0.0, d), e.node1("Ceil", {x}),
                               e.node1("Floor", {x})}));
    return true;
  };
  t[size_t(OpId::isfinite)] = [](Emitter& e) {
    if (!is_floating(e.input(0).dtype())) {
      e.out(0, e.constant(ones(e.output().shape(), {.dtype = kBool, .device = Device::flex()})));
      return true;
    }
    const std::string x = e.in(0);
    e.out(0, e.node1("Not", {e.node1("Or", {e.node1("IsNaN", {x}), e.node1("IsInf", {x})})}));
    return true;
  };
  t[size_t(OpId::bitwise_not)] = [](Emitter& e) {
    if (e.output().dtype() != kBool) {
      e.unsupported("on integers, which ONNX has from opset 18");
      return false;
    }
    e.out(0, e.node1("Not", {e.in(0)}));
    return true;
  };
  t[size_t(OpId::exp2)] = [](Emitter& e) {
    const DType d = e.output().dtype();
    e.out(0, e.node1("Pow", {e.scalar(2.0, d), e.in_as(0, d)}));
    return true;
  };
  t[size_t(OpId::silu)] = [](Emitter& e) {
    std::string x = e.in_as(0, e.output().dtype());
    e.out(0, e.node1("Mul", {x, e.node1("Sigmoid", {x})}));
    return true;
  };
  t[size_t(OpId::mish)] = [](Emitter& e) {
    std::string x = e.in_as(0, e.output().dtype());
    e.out(0, e.node1("Mul", {x, e.node1("Tanh", {e.node1("Softplus", {x})})}));
    return true;
  };
  t[size_t(OpId::gelu)] = gelu;
  t[size_t(OpId::softplus)] = softplus;
  t[size_t(OpId::elu)] = [](Emitter& e) {
    e.out(0, e.node1("Elu", {e.in(0)}));
    e.attr_f("alpha", e.op().attrs.f[0]);
    return true;
  };
  t[size_t(OpId::leaky_relu)] = [](Emitter& e) {
    e.out(0, e.node1("LeakyRelu", {e.in(0)}));
    e.attr_f("alpha", e.op().attrs.f[0]);
    return true;
  };
  t[size_t(OpId::hardsigmoid)] = [](Emitter& e) {
    e.out(0, e.node1("HardSigmoid", {e.in(0)}));
    e.attr_f("alpha", 1.0 / 6);
    e.attr_f("beta", 0.5);
    return true;
  };
  t[size_t(OpId::hardswish)] = [](Emitter& e) {
    std::string x = e.in(0);
    if (e.opset() >= 14) {
      e.out(0, e.node1("HardSwish", {x}));
      return true;
    }
    std::string h = e.node1("HardSigmoid", {x});
    e.attr_f("alpha", 1.0 / 6);
    e.attr_f("beta", 0.5);
    e.out(0, e.node1("Mul", {x, h}));
    return true;
  };

#define EMBER_BINARY(op, type) t[size_t(OpId::op)] = [](Emitter& e) { return binary(e, type); };
  EMBER_BINARY(add, "Add")
  EMBER_BINARY(sub, "Sub")
  EMBER_BINARY(mul, "Mul")
  EMBER_BINARY(pow, "Pow") EMBER_BINARY(maximum, "Max") EMBER_BINARY(minimum, "Min")
#undef EMBER_BINARY
#define EMBER_COMPARE(op, type) t[size_t(OpId::op)] = [](Emitter& e) { return compare(e, type); };
      EMBER_COMPARE(eq, "Equal") EMBER_COMPARE(lt, "Less") EMBER_COMPARE(le, "LessOrEqual")
          EMBER_COMPARE(gt, "Greater") EMBER_COMPARE(ge, "GreaterOrEqual")
#undef EMBER_COMPARE
              t[size_t(OpId::ne)] = [](Emitter& e) { return compare(e, "Equal", true); };
  t[size_t(OpId::logical_and)] = [](Emitter& e) { return logical(e, "And"); };
  t[size_t(OpId::logical_or)] = [](Emitter& e) { return logical(e, "Or"); };
  t[size_t(OpId::logical_xor)] = [](Emitter& e) { return logical(e, "Xor"); };
  t[size_t(OpId::bitwise_and)] = [](Emitter& e) { return bitwise(e, "And"); };
  t[size_t(OpId::bitwise_or)] = [](Emitter& e) { return bitwise(e, "Or"); };
  t[size_t(OpId::bitwise_xor)] = [](Emitter& e) { return bitwise(e, "Xor"); };
  t[size_t(OpId::atan2)] = atan2;
  t[size_t(OpId::div)] = div;
  t[size_t(OpId::remainder)] = [](Emitter& e) { return remainder(e, false); };
  t[size_t(OpId::fmod)] = [](Emitter& e) { return remainder(e, true); };
  t[size_t(OpId::where)] = where;
  t[size_t(OpId::clamp)] = clamp;
  t[size_t(OpId::addcmul)] = [](Emitter& e) { return addc(e, "Mul"); };
  t[size_t(OpId::addcdiv)] = [](Emitter& e) { return addc(e, "Div"); };
  t[size_t(OpId::lerp)] = lerp;
}

}  // namespace ember::onnx::detail
