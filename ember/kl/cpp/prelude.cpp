// The C++ renderer's helpers. Each f32 helper is written once as text with placeholders and
// expanded for scalars and for each vector width, so the vector and scalar forms compute the
// same bits (the vector form's loops are what GCC and Clang vectorise).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/cpp/prelude.h"

#include <cctype>
#include <map>

#include "ember/error.h"

namespace ember::kl::cpp {
namespace {

struct TagInfo {
  const char* tag;
  const char* ctype;
  int bytes;
};
constexpr TagInfo kTags[] = {
    {"f32", "float", 4}, {"f64", "double", 8},          {"i8", "signed char", 1},
    {"i16", "short", 2}, {"i32", "int", 4},             {"i64", "long long", 8},
    {"u8", "unsigned char", 1}, {"u16", "unsigned short", 2}, {"u32", "unsigned", 4},
    {"u64", "unsigned long long", 8}};

const TagInfo& info(const std::string& tag) {
  for (const TagInfo& t : kTags)
    if (tag == t.tag) return t;
  ember::detail::throw_value("kl", "C++ renderer: no type for '" + tag + "'");
}

// Expands @NAME and @NAME[argument] placeholders (arguments may nest).
std::string expand(const std::string& s, const std::map<std::string, std::string>& words,
                   const std::map<std::string, std::string>& fns) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '@') {
      out += s[i++];
      continue;
    }
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    std::string name = s.substr(i + 1, j - i - 1);
    if (j < s.size() && s[j] == '[') {
      int depth = 1;
      size_t k = j + 1;
      for (; k < s.size() && depth; ++k) depth += s[k] == '[' ? 1 : s[k] == ']' ? -1 : 0;
      std::string arg = expand(s.substr(j + 1, k - j - 2), words, fns);
      std::string f = fns.at(name);
      size_t at = f.find('$');
      out += f.substr(0, at) + arg + f.substr(at + 1);
      i = k;
    } else {
      out += words.at(name);
      i = j;
    }
  }
  return out;
}

// Placeholders for f32 helpers: lanes == 1 gives scalar code.
struct F32Ctx {
  std::map<std::string, std::string> words, fns;
};

const char* kExp = R"(static inline @F @NAME(@F x) {
  const @F xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const @F n = @RINT[xc * 1.44269504088896341f];
  @F r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  @F p = @SP[1.9875691500e-4f];
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const @I ni = @CI[n];
  const @I h = ni / 2;
  const @F s1 = @AF[(h + 127) << 23];
  const @F s2 = @AF[(ni - h + 127) << 23];
  @F res = p * s1 * s2;
  res = x > 88.7228391f ? __builtin_inff() : res;
  return x != x ? x : res;
}
)";

// Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), a degree-8 polynomial in m - 1.
const char* kLog = R"(static inline @F @NAME(@F x0) {
  const @F x = x0 < 1.17549435e-38f ? x0 * 8388608.0f : x0;
  const @I ix = @AI[x];
  @I e = ((ix >> 23) & 0xff) - 127;
  e = x0 < 1.17549435e-38f ? e - 23 : e;
  @F m = @AF[(ix & 0x007fffff) | 0x3f800000];
  e = m > 1.41421356f ? e + 1 : e;
  m = m > 1.41421356f ? m * 0.5f : m;
  const @F f = m - 1.0f;
  const @F fe = @CF[e];
  const @F z = f * f;
  @F y = @SP[7.0376836292e-2f];
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y = y + -2.12194440e-4f * fe;
  y = y + -0.5f * z;
  @F r = f + y;
  r = r + 0.693359375f * fe;
  r = x0 == 0.0f ? -__builtin_inff() : r;
  r = x0 < 0.0f ? __builtin_nanf("") : r;
  r = x0 == __builtin_inff() ? x0 : r;
  return x0 != x0 ? x0 : r;
}
)";

// Cephes tanhf: an odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) above.
const char* kTanh = R"(static inline @F @NAME(@F x) {
  const @F a = @ABS[x];
  const @F s = x * x;
  @F p = @SP[-5.70498872745e-3f];
  p = p * s + 2.06390887954e-2f;
  p = p * s - 5.37397155531e-2f;
  p = p * s + 1.33314422036e-1f;
  p = p * s - 3.33332819422e-1f;
  const @F small = p * s * x + x;
  const @F e = @EXP[a + a];
  @F big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0.0f ? -big : big;
  const @F r = a < 0.625f ? small : big;
  return x == 0.0f ? x : r;
}
)";

// erf: x P(x^2) up to |x| = 1 (Chebyshev fit, ~4e-11 relative), then 1 - e^-x^2 Q(x) with Q a
// degree-11 fit of erfc(x) e^x^2 on [1, 4] (erf is 1 in f32 beyond). Within 3 ulp of libm.
const char* kErf = R"(static inline @F @NAME(@F x) {
  const @F a = @ABS[x];
  const @F z = a * a;
  @F p = @SP[-9.673597055150192e-06f];
  p = p * z + 1.1268262693824008e-04f;
  p = p * z - 8.484398839280607e-04f;
  p = p * z + 5.221053661363907e-03f;
  p = p * z - 2.6865438442575492e-02f;
  p = p * z + 1.1283782625470927e-01f;
  p = p * z - 3.7612638476365745e-01f;
  p = p * z + 1.1283791670624772f;
  const @F ra = a * p;
  const @F ac = a < 4.0f ? a : 4.0f;
  const @F u = (ac - 2.5f) * 0.666666666666666667f;
  @F q = @SP[-3.692937448866952e-05f];
  q = q * u + 9.640629660071714e-05f;
  q = q * u - 1.4394697058831783e-04f;
  q = q * u + 3.678646643583715e-04f;
  q = q * u - 1.017119238893443e-03f;
  q = q * u + 2.425888218635088e-03f;
  q = q * u - 5.567332339959861e-03f;
  q = q * u + 1.2484034711552962e-02f;
  q = q * u - 2.7005725378736214e-02f;
  q = q * u + 5.611095851601118e-02f;
  q = q * u - 1.1152100469156763e-01f;
  q = q * u + 2.108063575265994e-01f;
  const @F rb = 1.0f - @EXP[-(ac * ac)] * q;
  const @F r = a <= 1.0f ? ra : rb;
  const @F signed_r = @AF[(@AI[r] & 0x7fffffff) | (@AI[x] & (-2147483647 - 1))];
  return x != x ? x : signed_r;
}
)";

// ember/half.h's conversions, branch-free: every case computed, the right one selected.
const char* kToF16 = R"(static inline @H @NAME(@F f) {
  const @U x = @AU[f];
  const @U sign = (x >> 16) & 0x8000u;
  const @U ax = x & 0x7fffffffu;
  const @U r_nan = 0x7c00u | ((~((ax - 0x7f800001u) >> 31) & 1u) << 9);
  const @F v = @AF[ax] + 0.5f;
  const @U r_sub = @AU[v] - 0x3f000000u;
  const @U r_norm = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;
  @U r = ax < 0x38800000u ? r_sub : r_norm;
  r = ax >= 0x477ff000u ? 0x7c00u : r;
  r = ax >= 0x7f800000u ? r_nan : r;
  return @NARROW[r | sign];
}
)";
const char* kFromF16 = R"(static inline @F @NAME(@H h16) {
  const @U h = @WIDEN[h16];
  const @U sign = (h & 0x8000u) << 16;
  const @U e = (h >> 10) & 0x1fu;
  const @U mant = h & 0x3ffu;
  const @U r_norm = sign | ((e + 112u) << 23) | (mant << 13);
  const @U r_inf = sign | 0x7f800000u | (mant << 13);
  const @U r_sub = @AU[@CFU[mant] * 5.9604644775390625e-08f] | sign;
  @U r = e == 0u ? r_sub : r_norm;
  r = e == 0x1fu ? r_inf : r;
  return @AF[r];
}
)";
const char* kToBF16 = R"(static inline @H @NAME(@F f) {
  const @U x = @AU[f];
  const @U r_nan = (x >> 16) | 0x40u;
  const @U r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return @NARROW[(x & 0x7fffffffu) > 0x7f800000u ? r_nan : r];
}
)";
const char* kFromBF16 = R"(static inline @F @NAME(@H b) { return @AF[@WIDEN[b] << 16]; }
)";

const char* libm_name(Op op) {
  switch (op) {
    case Op::Exp: return "exp";
    case Op::Exp2: return "exp2";
    case Op::Expm1: return "expm1";
    case Op::Log: return "log";
    case Op::Log2: return "log2";
    case Op::Log10: return "log10";
    case Op::Log1p: return "log1p";
    case Op::Sqrt: return "sqrt";
    case Op::Sin: return "sin";
    case Op::Cos: return "cos";
    case Op::Tan: return "tan";
    case Op::Asin: return "asin";
    case Op::Acos: return "acos";
    case Op::Atan: return "atan";
    case Op::Sinh: return "sinh";
    case Op::Cosh: return "cosh";
    case Op::Tanh: return "tanh";
    case Op::Asinh: return "asinh";
    case Op::Acosh: return "acosh";
    case Op::Atanh: return "atanh";
    case Op::Erf: return "erf";
    case Op::Floor: return "floor";
    case Op::Ceil: return "ceil";
    case Op::Trunc: return "trunc";
    case Op::RoundEven: return "nearbyint";
    case Op::Pow: return "pow";
    case Op::Atan2: return "atan2";
    case Op::Fmod: case Op::Rem: return "fmod";
    default: ember::detail::throw_value("kl", std::string("C++ renderer: no maths helper for ") + op_name(op));
  }
}

}  // namespace

const char* tag_ctype(const std::string& tag) { return info(tag).ctype; }

std::string dtype_tag(DType d) {
  switch (d) {
    case DType::Bool: case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: case DType::BF16: return "u16";
    case DType::F32: return "f32";
    default: return "f64";
  }
}
std::string int_tag(int bits) { return "i" + std::to_string(bits); }
std::string uint_tag(int bits) { return "u" + std::to_string(bits); }

bool Prelude::once(const std::string& name) { return have_.insert(name).second; }

std::string Prelude::type(const std::string& tag, int lanes) {
  const TagInfo& t = info(tag);
  if (lanes == 1) return t.ctype;
  std::string name = "kl_" + tag + "x" + std::to_string(lanes);
  if (once(name))
    types_ += "typedef " + std::string(t.ctype) + " " + name + " __attribute__((vector_size(" +
              std::to_string(t.bytes * lanes) + ")));\n";
  return name;
}

std::string Prelude::own_math(Op op, int lanes) {
  const bool vec = lanes > 1;
  const std::string sfx = vec ? "x" + std::to_string(lanes) : "";
  const std::string name = std::string("kl_") + libm_name(op) + "_f32" + sfx;
  if (!once(name)) return name;
  const std::string F = type("f32", lanes), I = type("i32", lanes);
  std::map<std::string, std::string> words = {{"F", F}, {"I", I}, {"NAME", name}};
  std::map<std::string, std::string> fns = {
      {"CI", vec ? "__builtin_convertvector($, " + I + ")" : "(int)($)"},
      {"CF", vec ? "__builtin_convertvector($, " + F + ")" : "(float)($)"},
      {"AF", vec ? "(" + F + ")($)" : "__builtin_bit_cast(float, $)"},
      {"AI", vec ? "(" + I + ")($)" : "__builtin_bit_cast(int, $)"},
      {"SP", vec ? F + "{} + ($)" : "($)"},
      {"ABS", vec ? "(" + F + ")((" + I + ")($) & 0x7fffffff)" : "__builtin_fabsf($)"},
      {"RINT", vec ? math(Op::RoundEven, DType::F32, lanes) + "($)" : "__builtin_nearbyintf($)"},
      {"EXP", (op == Op::Exp ? name : own_math(Op::Exp, lanes)) + "($)"}};
  const char* text = op == Op::Exp ? kExp : op == Op::Log ? kLog : op == Op::Tanh ? kTanh : kErf;
  funcs_ += expand(text, words, fns);
  return name;
}

std::string Prelude::math(Op op, DType d, int lanes) {
  const bool f32 = d == DType::F32;
  if (f32 && (op == Op::Exp || op == Op::Log || op == Op::Tanh || op == Op::Erf))
    return own_math(op, lanes);
  const std::string fn = std::string("__builtin_") + libm_name(op) + (f32 ? "f" : "");
  const bool binary = op == Op::Pow || op == Op::Atan2 || op == Op::Fmod || op == Op::Rem;
  if (lanes == 1) return fn;
  const std::string tag = f32 ? "f32" : "f64";
  const std::string name = std::string("kl_") + libm_name(op) + "_" + tag + "x" + std::to_string(lanes);
  if (!once(name)) return name;
  const std::string V = type(tag, lanes), n = std::to_string(lanes);
  std::string body;
  if (op == Op::Floor || op == Op::Ceil || op == Op::Trunc) {
    // Through round-to-nearest (vectorises everywhere); exact, signs of zero included.
    const std::string rint = math(Op::RoundEven, d, lanes);
    const std::string one = f32 ? "1.0f" : "1.0";
    const std::string fl = "const " + V + " t = " + rint + "(x);\n  const " + V + " fl = t > x ? t - " + one + " : t;\n";
    const std::string ce = "const " + V + " u = " + rint + "(x);\n  const " + V + " ce = u < x ? u + " + one + " : u;\n";
    if (op == Op::Floor) body = "  " + fl + "  return fl;\n";
    else if (op == Op::Ceil) body = "  " + ce + "  return ce;\n";
    else body = "  " + fl + "  " + ce + "  return x < 0 ? ce : fl;\n";
    funcs_ += "static inline " + V + " " + name + "(" + V + " x) {\n" + body + "}\n";
    return name;
  }
  if (binary)
    funcs_ += "static inline " + V + " " + name + "(" + V + " a, " + V + " b) {\n  " + V +
              " r;\n  for (int l = 0; l < " + n + "; ++l) r[l] = " + fn + "(a[l], b[l]);\n  return r;\n}\n";
  else
    funcs_ += "static inline " + V + " " + name + "(" + V + " a) {\n  " + V + " r;\n  for (int l = 0; l < " +
              n + "; ++l) r[l] = " + fn + "(a[l]);\n  return r;\n}\n";
  return name;
}

std::string Prelude::int_op(Op op, DType d, int lanes) {
  const std::string tag = dtype_tag(d), T = type(tag, 1);
  const int bits = int(itemsize(d) * 8);
  const bool sgn = is_signed(d);
  const char* what = op == Op::Div ? "div" : op == Op::Rem ? "rem" : op == Op::Shl ? "shl" : "shr";
  const std::string sname = std::string("kl_") + what + "_" + tag;
  if (once(sname)) {
    const std::string U = bits == 64 ? "unsigned long long" : "unsigned";
    const std::string B = std::to_string(bits);
    std::string e;
    switch (op) {
      case Op::Div:
        e = sgn ? "b == 0 ? (" + T + ")0 : b == (" + T + ")-1 ? (" + T + ")(0u - (" + U + ")a) : (" + T + ")(a / b)"
                : "b == 0 ? (" + T + ")0 : (" + T + ")(a / b)";
        break;
      case Op::Rem:
        e = sgn ? "b == 0 ? a : b == (" + T + ")-1 ? (" + T + ")0 : (" + T + ")(a % b)"
                : "b == 0 ? a : (" + T + ")(a % b)";
        break;
      case Op::Shl:
        e = "(b < 0 || b >= " + B + ") ? (" + T + ")0 : (" + T + ")((" + U + ")(" + type(uint_tag(bits), 1) + ")a << b)";
        break;
      default:
        e = "(b < 0 || b >= " + B + ") ? (" + T + ")(a < 0 ? -1 : 0) : (" + T + ")(a >> b)";
        break;
    }
    funcs_ += "static inline " + T + " " + sname + "(" + T + " a, " + T + " b) { return " + e + "; }\n";
  }
  if (lanes == 1) return sname;
  const std::string name = sname + "x" + std::to_string(lanes);
  if (once(name)) {
    const std::string V = type(tag, lanes);
    funcs_ += "static inline " + V + " " + name + "(" + V + " a, " + V + " b) {\n  " + V +
              " r;\n  for (int l = 0; l < " + std::to_string(lanes) + "; ++l) r[l] = " + sname +
              "(a[l], b[l]);\n  return r;\n}\n";
  }
  return name;
}

std::string Prelude::float_to_int(DType from, DType to, int lanes) {
  // ember/detail/convert.h's rule: int64 from [-2^63, 2^63), the narrower types from the int32
  // result (INT32_MIN outside its range) wrapped, except f64 -> uint8 from the int64 result;
  // anything else (NaN, inf) the minimum.
  const bool f32 = from == DType::F32;
  const bool wide = itemsize(to) == 8 || (to == DType::U8 && from == DType::F64);
  const std::string F = f32 ? "float" : "double", s = f32 ? "f" : "";
  const std::string sname = std::string("kl_f2i") + (wide ? "64_" : "32_") + (f32 ? "f32" : "f64");
  if (once(sname)) {
    if (wide)
      funcs_ += "static inline long long " + sname + "(" + F + " x) {\n  return x >= -9223372036854775808.0" + s +
                " && x < 9223372036854775808.0" + s + " ? (long long)x : (-9223372036854775807LL - 1);\n}\n";
    else
      funcs_ += "static inline int " + sname + "(" + F + " x) {\n  return x > -2147483649.0" + s +
                " && x < 2147483648.0" + s + " ? (int)x : (-2147483647 - 1);\n}\n";
  }
  if (lanes == 1) return sname;
  const std::string totag = dtype_tag(to);
  const std::string name = sname + "x" + std::to_string(lanes) + "_" + totag;
  if (once(name)) {
    const std::string VF = type(f32 ? "f32" : "f64", lanes), VT = type(totag, lanes);
    funcs_ += "static inline " + VT + " " + name + "(" + VF + " x) {\n  " + VT + " r;\n  for (int l = 0; l < " +
              std::to_string(lanes) + "; ++l) r[l] = (" + tag_ctype(totag) + ")" + sname +
              "(x[l]);\n  return r;\n}\n";
  }
  return name;
}

namespace {
std::map<std::string, std::string> half_words(Prelude& p, const std::string& name, int lanes) {
  return {{"F", p.type("f32", lanes)}, {"U", p.type("u32", lanes)}, {"H", p.type("u16", lanes)}, {"NAME", name}};
}
std::map<std::string, std::string> half_fns(Prelude& p, int lanes) {
  const bool vec = lanes > 1;
  const std::string F = p.type("f32", lanes), U = p.type("u32", lanes), H = p.type("u16", lanes);
  return {{"AU", vec ? "(" + U + ")($)" : "__builtin_bit_cast(unsigned, $)"},
          {"AF", vec ? "(" + F + ")($)" : "__builtin_bit_cast(float, $)"},
          {"CFU", vec ? "__builtin_convertvector($, " + F + ")" : "(float)($)"},
          {"NARROW", vec ? "__builtin_convertvector($, " + H + ")" : "(unsigned short)($)"},
          {"WIDEN", vec ? "__builtin_convertvector($, " + U + ")" : "(unsigned)($)"}};
}
}  // namespace

std::string Prelude::to_half(DType half, int lanes) {
  const std::string name = std::string(half == DType::F16 ? "kl_f32_to_f16" : "kl_f32_to_bf16") +
                           (lanes > 1 ? "x" + std::to_string(lanes) : "");
  if (once(name))
    funcs_ += expand(half == DType::F16 ? kToF16 : kToBF16, half_words(*this, name, lanes), half_fns(*this, lanes));
  return name;
}

std::string Prelude::from_half(DType half, int lanes) {
  const std::string name = std::string(half == DType::F16 ? "kl_f16_to_f32" : "kl_bf16_to_f32") +
                           (lanes > 1 ? "x" + std::to_string(lanes) : "");
  if (once(name))
    funcs_ += expand(half == DType::F16 ? kFromF16 : kFromBF16, half_words(*this, name, lanes), half_fns(*this, lanes));
  return name;
}

}  // namespace ember::kl::cpp
