// The CUDA renderer's helpers: device functions emitted once per source and only when a kernel
// uses them (16-bit float conversions, integer division with the IR's edge cases, float ->
// integer conversions, bit casts). Everything is plain CUDA C: NVRTC needs no headers for it.
#include "ember/kl/cuda/helpers.h"

#include "ember/error.h"

namespace ember::kl::cuda {
namespace {

// ember/half.h's conversions, bit for bit (the same branch-free form as the C++ renderer's).
const char* kToF16 = R"(static __device__ __forceinline__ unsigned short kl_f32_to_f16(float f) {
  const unsigned x = __float_as_uint(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned ax = x & 0x7fffffffu;
  const unsigned r_nan = 0x7c00u | ((~((ax - 0x7f800001u) >> 31) & 1u) << 9);
  const float v = __uint_as_float(ax) + 0.5f;
  const unsigned r_sub = __float_as_uint(v) - 0x3f000000u;
  const unsigned r_norm = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;
  unsigned r = ax < 0x38800000u ? r_sub : r_norm;
  r = ax >= 0x477ff000u ? 0x7c00u : r;
  r = ax >= 0x7f800000u ? r_nan : r;
  return (unsigned short)(r | sign);
}
)";
const char* kFromF16 =
    R"(static __device__ __forceinline__ float kl_f16_to_f32(unsigned short h16) {
  const unsigned h = h16;
  const unsigned sign = (h & 0x8000u) << 16;
  const unsigned e = (h >> 10) & 0x1fu;
  const unsigned mant = h & 0x3ffu;
  const unsigned r_norm = sign | ((e + 112u) << 23) | (mant << 13);
  const unsigned r_inf = sign | 0x7f800000u | (mant << 13);
  const unsigned r_sub = __float_as_uint((float)mant * 5.9604644775390625e-08f) | sign;
  unsigned r = e == 0u ? r_sub : r_norm;
  r = e == 0x1fu ? r_inf : r;
  return __uint_as_float(r);
}
)";
const char* kToBF16 = R"(static __device__ __forceinline__ unsigned short kl_f32_to_bf16(float f) {
  const unsigned x = __float_as_uint(f);
  const unsigned r_nan = (x >> 16) | 0x40u;
  const unsigned r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return (unsigned short)((x & 0x7fffffffu) > 0x7f800000u ? r_nan : r);
}
)";
const char* kFromBF16 =
    R"(static __device__ __forceinline__ float kl_bf16_to_f32(unsigned short b) {
  return __uint_as_float((unsigned)b << 16);
}
)";
const char* kBitcast =
    R"(template <class T, class F> static __device__ __forceinline__ T kl_bitcast(F f) {
  union { F f; T t; } u;
  u.f = f;
  return u.t;
}
)";

}  // namespace

const char* ctype(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::U8:
      return "unsigned char";
    case DType::I8:
      return "signed char";
    case DType::I16:
      return "short";
    case DType::I32:
      return "int";
    case DType::I64:
      return "long long";
    case DType::F16:
    case DType::BF16:
      return "unsigned short";  // the bits; maths is in f32
    case DType::F32:
      return "float";
    default:
      return "double";
  }
}

const char* mem_ctype(DType d) { return d == DType::Bool ? "unsigned char" : ctype(d); }

const char* uctype(DType d) { return itemsize(d) == 8 ? "unsigned long long" : "unsigned"; }

bool Helpers::once(const std::string& name) { return have_.insert(name).second; }

std::string Helpers::to_half(DType half) {
  const bool f16 = half == DType::F16;
  if (once(f16 ? "to_f16" : "to_bf16")) text_ += f16 ? kToF16 : kToBF16;
  return f16 ? "kl_f32_to_f16" : "kl_f32_to_bf16";
}

std::string Helpers::from_half(DType half) {
  const bool f16 = half == DType::F16;
  if (once(f16 ? "from_f16" : "from_bf16")) text_ += f16 ? kFromF16 : kFromBF16;
  return f16 ? "kl_f16_to_f32" : "kl_bf16_to_f32";
}

std::string Helpers::bitcast() {
  if (once("bitcast")) text_ += kBitcast;
  return "kl_bitcast";
}

std::string Helpers::int_op(Op op, DType d) {
  const std::string T = ctype(d), U = uctype(d);
  const int bits = int(itemsize(d) * 8);
  const bool sgn = is_signed(d);
  const char* what = op == Op::Div ? "div" : op == Op::Rem ? "rem" : op == Op::Shl ? "shl" : "shr";
  const std::string tag = std::string(d == DType::U8 ? "u" : "i") + std::to_string(bits);
  const std::string name = std::string("kl_") + what + "_" + tag;
  if (!once(name)) return name;
  const std::string B = std::to_string(bits);
  // 64-bit division is a long software sequence on GPUs: operands that fit 31 bits take the
  // 32-bit unit (index arithmetic nearly always does), with the same result.
  const std::string fast = bits == 64
                               ? "  if (((a | b) >> 31) == 0) return (" + T + ")((unsigned)a " +
                                     (op == Op::Div ? "/" : "%") + " (unsigned)b);\n"
                               : "";
  std::string body;
  switch (op) {
    case Op::Div:
      body = "  if (b == 0) return (" + T + ")0;\n" + fast +
             (sgn ? "  if (b == (" + T + ")-1) return (" + T + ")(0u - (" + U + ")a);\n" : "") +
             "  return (" + T + ")(a / b);\n";
      break;
    case Op::Rem:
      body = "  if (b == 0) return a;\n" + fast +
             (sgn ? "  if (b == (" + T + ")-1) return (" + T + ")0;\n" : "") + "  return (" + T +
             ")(a % b);\n";
      break;
    case Op::Shl:
      body =
          "  return (b < 0 || b >= " + B + ") ? (" + T + ")0 : (" + T + ")((" + U + ")a << b);\n";
      break;
    default:
      body = "  return (b < 0 || b >= " + B + ") ? (" + T + ")(a < 0 ? -1 : 0) : (" + T +
             ")(a >> b);\n";
      break;
  }
  text_ += "static __device__ __forceinline__ " + T + " " + name + "(" + T + " a, " + T +
           " b) {\n" + body + "}\n";
  return name;
}

std::string Helpers::float_to_int(DType from, DType to) {
  // ember/detail/convert.h's rule, as the C++ renderer has it.
  const bool f32 = from == DType::F32;
  const bool wide = itemsize(to) == 8 || (to == DType::U8 && from == DType::F64);
  const std::string F = f32 ? "float" : "double", s = f32 ? "f" : "";
  const std::string name = std::string("kl_f2i") + (wide ? "64_" : "32_") + (f32 ? "f32" : "f64");
  if (!once(name)) return name;
  if (wide)
    text_ += "static __device__ __forceinline__ long long " + name + "(" + F +
             " x) {\n  return x >= -9223372036854775808.0" + s + " && x < 9223372036854775808.0" +
             s + " ? (long long)x : (-9223372036854775807LL - 1);\n}\n";
  else
    text_ += "static __device__ __forceinline__ int " + name + "(" + F +
             " x) {\n  return x > -2147483649.0" + s + " && x < 2147483648.0" + s +
             " ? (int)x : (-2147483647 - 1);\n}\n";
  return name;
}

std::string Helpers::math(Op op, DType d) {
  const bool f = d == DType::F32;
  auto n = [&](const char* base) { return std::string(base) + (f ? "f" : ""); };
  switch (op) {
    case Op::Exp:
      return n("exp");
    case Op::Exp2:
      return n("exp2");
    case Op::Expm1:
      return n("expm1");
    case Op::Log:
      return n("log");
    case Op::Log2:
      return n("log2");
    case Op::Log10:
      return n("log10");
    case Op::Log1p:
      return n("log1p");
    case Op::Sqrt:
      return n("sqrt");
    case Op::Sin:
      return n("sin");
    case Op::Cos:
      return n("cos");
    case Op::Tan:
      return n("tan");
    case Op::Asin:
      return n("asin");
    case Op::Acos:
      return n("acos");
    case Op::Atan:
      return n("atan");
    case Op::Sinh:
      return n("sinh");
    case Op::Cosh:
      return n("cosh");
    case Op::Tanh:
      return n("tanh");
    case Op::Asinh:
      return n("asinh");
    case Op::Acosh:
      return n("acosh");
    case Op::Atanh:
      return n("atanh");
    case Op::Erf:
      return n("erf");
    case Op::Floor:
      return n("floor");
    case Op::Ceil:
      return n("ceil");
    case Op::Trunc:
      return n("trunc");
    case Op::RoundEven:
      return n("rint");
    case Op::Pow:
      return n("pow");
    case Op::Atan2:
      return n("atan2");
    case Op::Fmod:
    case Op::Rem:
      return n("fmod");
    default:
      ember::detail::throw_value(
          "kl", std::string("CUDA renderer: no maths function for ") + op_name(op));
  }
}

}  // namespace ember::kl::cuda
