// The C++ renderer: header-free source using GCC/Clang vector extensions. Every SSA value is a
// const local named v<id>; vector bool values are lane masks (-1/0) as wide as the values they
// were compared from, converted where a consumer needs another width.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include <cstdio>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/half.h"
#include "ember/kl/cpp/prelude.h"
#include "ember/kl/render.h"

namespace ember::kl {
namespace {

using cpp::dtype_tag;
using cpp::int_tag;
using cpp::Prelude;
using cpp::uint_tag;

std::string float_literal(double v, bool f32) {
  if (v != v) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (v == __builtin_inf()) return f32 ? "__builtin_inff()" : "__builtin_inf()";
  if (v == -__builtin_inf()) return f32 ? "(-__builtin_inff())" : "(-__builtin_inf())";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return "(" + std::string(buf) + (f32 ? "f" : "") + ")";
}

class KernelWriter {
 public:
  KernelWriter(const Kernel& k, Prelude& p) : k_(k), p_(p), mask_(k.body.size(), 0) {}

  std::string run() {
    line("extern \"C\" void " + k_.name + "(const void* kl_args, long long kl_begin, long long kl_end) {");
    ++depth_;
    line("const unsigned long long* kl_a = (const unsigned long long*)kl_args;");
    size_t slot = 0;
    for (size_t i = 0; i < k_.buffers.size(); ++i, ++slot) {
      const BufferParam& b = k_.buffers[i];
      const std::string e = mem_type(b.dtype), c = b.access == Access::Read ? "const " : "";
      if (b.list)
        line(c + e + "* const* b" + std::to_string(i) + " = (" + c + e + "* const*)kl_a[" + std::to_string(slot) + "];");
      else
        line(c + e + "* " + (b.restrict_ ? "__restrict " : "") + "b" + std::to_string(i) + " = (" + c + e +
             "*)kl_a[" + std::to_string(slot) + "];");
    }
    for (size_t i = 0; i < k_.scalars.size(); ++i, ++slot) {
      const std::string n = "s" + std::to_string(i), at = "&kl_a[" + std::to_string(slot) + "]";
      if (k_.scalars[i].dtype == DType::Bool) {
        line("unsigned char " + n + "_byte; __builtin_memcpy(&" + n + "_byte, " + at + ", 1);");
        line("const bool " + n + " = " + n + "_byte != 0;");
      } else {
        line(mem_type(k_.scalars[i].dtype) + " " + n + "; __builtin_memcpy(&" + n + ", " + at + ", sizeof " + n + ");");
      }
    }
    for (size_t i = 0; i < k_.indices.size(); ++i, ++slot)
      line("const long long n" + std::to_string(i) + " = (long long)kl_a[" + std::to_string(slot) + "];");
    for (size_t i = 0; i < k_.body.size(); ++i) inst(int32_t(i));
    --depth_;
    line("}");
    return out_;
  }

 private:
  void line(const std::string& s) { out_ += std::string(size_t(depth_) * 2, ' ') + s + "\n"; }
  std::string v(int32_t id) const { return "v" + std::to_string(id); }
  const Inst& at(int32_t id) const { return k_.body[size_t(id)]; }
  Type type(int32_t id) const { return at(id).type; }

  std::string mem_type(DType d) { return p_.type(dtype_tag(d), 1); }
  // The C type of a value of type t (bool vectors: masks of `bits`).
  std::string ctype(Type t, int bits = 0) {
    if (t.lanes == 1) return t.dtype == DType::Bool ? "bool" : mem_type(t.dtype);
    if (t.dtype == DType::Bool) return p_.type(int_tag(bits ? bits : 8), t.lanes);
    return p_.type(dtype_tag(t.dtype), t.lanes);
  }
  std::string vtype(int32_t id) { return ctype(type(id), mask_[size_t(id)]); }
  // Value `id` as a mask of `bits` (vector bools only).
  std::string mask(int32_t id, int bits) {
    if (mask_[size_t(id)] == bits) return v(id);
    return "__builtin_convertvector(" + v(id) + ", " + p_.type(int_tag(bits), type(id).lanes) + ")";
  }
  void def(int32_t id, const std::string& rhs, int bits = 0) {
    mask_[size_t(id)] = bits;
    line("const " + vtype(id) + " " + v(id) + " = " + rhs + ";");
  }
  std::string elem_cast(Type t) { return "(" + p_.type(dtype_tag(t.dtype), 1) + ")"; }
  // A vector of `t` with every lane `e` (e - 0 keeps -0.0 and NaN exact).
  std::string splat(Type t, const std::string& e) { return "(" + elem_cast(t) + e + " - " + ctype(t) + "{})"; }

  std::string constant(const Inst& in) {
    const DType d = in.type.dtype;
    std::string e;
    if (d == DType::F32 || d == DType::F64) e = float_literal(const_as_double(d, in.imm), d == DType::F32);
    else if (d == DType::F16) e = std::to_string(Half(float(const_as_double(d, in.imm))).bits);
    else if (d == DType::BF16) e = std::to_string(BFloat16(float(const_as_double(d, in.imm))).bits);
    else if (d == DType::I64 && in.imm == INT64_MIN) e = "(-9223372036854775807LL - 1)";
    else if (d == DType::I64) e = std::to_string(in.imm) + "LL";
    else if (d == DType::Bool && in.type.lanes > 1) e = in.imm ? "-1" : "0";
    else if (d == DType::Bool) e = in.imm ? "true" : "false";
    else e = std::to_string(in.imm);
    if (in.type.lanes == 1) return d == DType::Bool ? e : elem_cast(in.type) + e;
    if (d == DType::Bool) return "(" + e + " - " + ctype(in.type, 32) + "{})";  // a mask of 32 bits
    return splat(in.type, e);
  }

  // Integer arithmetic wraps: computed in the unsigned type of the same width.
  std::string unsigned_type(Type t) {
    const int bits = int(itemsize(t.dtype) * 8);
    if (t.lanes == 1) return bits == 64 ? "unsigned long long" : "unsigned";
    return p_.type(uint_tag(bits), t.lanes);
  }
  std::string wrap(const char* op, int32_t a, int32_t b, Type t) {
    const std::string U = unsigned_type(t);
    const std::string back = t.lanes == 1 ? elem_cast(t) : "(" + ctype(t) + ")";
    return back + "((" + U + ")" + v(a) + " " + op + " (" + U + ")" + v(b) + ")";
  }
  // The amount of a shift by `b` when it is a constant (or a broadcast one) in [0, bits), else -1.
  int64_t const_shift(int32_t b, int bits) const {
    const Inst* c = &at(b);
    if (c->op == Op::Broadcast) c = &at(c->a);
    if (c->op != Op::Const) return -1;
    const int64_t s = const_as_int(c->type.dtype, c->imm);
    return s >= 0 && s < bits ? s : -1;
  }
  std::string wrap_neg(int32_t a, Type t) {
    const std::string back = t.lanes == 1 ? elem_cast(t) : "(" + ctype(t) + ")";
    return back + "(0 - (" + unsigned_type(t) + ")" + v(a) + ")";
  }

  std::string cast(int32_t a, Type to) {
    const Type from = type(a);
    const DType f = from.dtype, d = to.dtype;
    const int L = to.lanes;
    if (f == DType::F32 && (d == DType::F16 || d == DType::BF16)) return p_.to_half(d, L) + "(" + v(a) + ")";
    if ((f == DType::F16 || f == DType::BF16) && d == DType::F32) return p_.from_half(f, L) + "(" + v(a) + ")";
    if (f == DType::F16 || f == DType::BF16 || d == DType::F16 || d == DType::BF16)
      ember::detail::throw_value("kl", "C++ renderer: a cast " + type_name(from) + " -> " + type_name(to) + " was not legalised");
    if (d == DType::Bool) {
      if (f == DType::Bool) return v(a);
      return v(a) + " != 0";
    }
    if (L == 1) {
      if (is_floating(f) && !is_floating(d)) return elem_cast(to) + p_.float_to_int(f, d, 1) + "(" + v(a) + ")";
      return "(" + ctype(to) + ")" + v(a);
    }
    if (f == DType::Bool) {  // mask -> 1/0
      const int bits = int(itemsize(d) * 8);
      std::string one = "(-" + mask(a, bits) + ")";
      return "__builtin_convertvector(" + one + ", " + ctype(to) + ")";
    }
    if (is_floating(f) && !is_floating(d)) return p_.float_to_int(f, d, L) + "(" + v(a) + ")";
    return "__builtin_convertvector(" + v(a) + ", " + ctype(to) + ")";
  }

  std::string abs_float(int32_t a, Type t) {
    if (t.lanes == 1) return std::string(t.dtype == DType::F32 ? "__builtin_fabsf(" : "__builtin_fabs(") + v(a) + ")";
    const bool f32 = t.dtype == DType::F32;
    return "(" + ctype(t) + ")((" + p_.type(f32 ? "i32" : "i64", t.lanes) + ")" + v(a) + " & " +
           (f32 ? "0x7fffffff" : "0x7fffffffffffffffLL") + ")";
  }

  std::string pointer(const Inst& in) {
    std::string b = "b" + std::to_string(in.imm);
    return in.d >= 0 ? b + "[" + v(in.d) + "]" : b;
  }

  void compare(int32_t id, const Inst& in) {
    static const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
    const char* op = ops[int(in.op) - int(Op::Eq)];
    const Type t = type(in.a);
    if (t.dtype == DType::Bool && t.lanes > 1) {  // masks: -1 is true, so order by logic
      const int bits = mask_[size_t(in.a)];
      const std::string a = v(in.a), b = mask(in.b, bits);
      std::string e;
      switch (in.op) {
        case Op::Eq: e = a + " == " + b; break;
        case Op::Ne: e = a + " != " + b; break;
        case Op::Lt: e = "~" + a + " & " + b; break;
        case Op::Le: e = "~" + a + " | " + b; break;
        case Op::Gt: e = a + " & ~" + b; break;
        default: e = a + " | ~" + b; break;
      }
      return def(id, e, bits);
    }
    def(id, v(in.a) + " " + op + " " + v(in.b), t.lanes > 1 ? int(itemsize(t.dtype) * 8) : 0);
  }

  void inst(int32_t id) {
    const Inst& in = at(id);
    const Type t = in.type;
    const int L = t.lanes;
    const bool vec = L > 1;
    switch (in.op) {
      case Op::Const: return def(id, constant(in), t.dtype == DType::Bool && vec ? 32 : 0);
      case Op::Param: return def(id, "s" + std::to_string(in.imm));
      case Op::Index: return def(id, "n" + std::to_string(in.imm));
      case Op::WorkBegin: return def(id, "kl_begin");
      case Op::WorkEnd: return def(id, "kl_end");
      case Op::LocalId: case Op::LaneId: return def(id, "0LL");
      case Op::PlaneSize: return def(id, "1LL");
      case Op::Iota: {
        std::string s = ctype(t) + "{";
        for (int l = 0; l < L; ++l) s += (l ? ", " : "") + elem_cast(t) + std::to_string(l);
        return def(id, s + "}");
      }
      case Op::Neg:
        if (is_floating(t.dtype)) return def(id, "-" + v(in.a));
        return def(id, wrap_neg(in.a, t));
      case Op::Not:
        if (t.dtype == DType::Bool && !vec) return def(id, "!" + v(in.a));
        return def(id, "~" + v(in.a), mask_[size_t(in.a)]);
      case Op::Abs:
        if (is_floating(t.dtype)) return def(id, abs_float(in.a, t));
        return def(id, v(in.a) + " < 0 ? " + wrap_neg(in.a, t) + " : " + v(in.a));
      case Op::IsNan:
        return def(id, v(in.a) + " != " + v(in.a), vec ? int(itemsize(type(in.a).dtype) * 8) : 0);
      case Op::IsInf: {
        const Type a = type(in.a);
        std::string inf = a.dtype == DType::F32 ? "__builtin_inff()" : "__builtin_inf()";
        return def(id, abs_float(in.a, a) + " == " + inf, vec ? int(itemsize(a.dtype) * 8) : 0);
      }
      case Op::Cast: {
        std::string e = cast(in.a, t);
        return def(id, e, t.dtype == DType::Bool && vec ? int(itemsize(type(in.a).dtype) * 8) : 0);
      }
      case Op::Fence:
        if (!is_floating(t.dtype) || t.dtype == DType::F16 || t.dtype == DType::BF16) return def(id, v(in.a));
        line(vtype(id) + " " + v(id) + " = " + v(in.a) + ";");
        return line("KL_FENCE(" + v(id) + ");");
      case Op::Bitcast:
        return def(id, vec ? "(" + ctype(t) + ")" + v(in.a) : "__builtin_bit_cast(" + ctype(t) + ", " + v(in.a) + ")");
      case Op::Broadcast:
        if (t.dtype == DType::Bool) return def(id, "(" + ctype(t, 32) + "{} - (int)" + v(in.a) + ")", 32);
        return def(id, splat(t, v(in.a)));
      case Op::Extract:
        if (t.dtype == DType::Bool) return def(id, v(in.a) + "[" + std::to_string(in.imm) + "] != 0");
        return def(id, v(in.a) + "[" + std::to_string(in.imm) + "]");
      case Op::Add: case Op::Sub: case Op::Mul: {
        const char* op = in.op == Op::Add ? "+" : in.op == Op::Sub ? "-" : "*";
        if (is_floating(t.dtype)) return def(id, v(in.a) + " " + op + " " + v(in.b));
        return def(id, wrap(op, in.a, in.b, t));
      }
      case Op::Div:
        if (is_floating(t.dtype)) return def(id, v(in.a) + " / " + v(in.b));
        return def(id, p_.int_op(Op::Div, t.dtype, L) + "(" + v(in.a) + ", " + v(in.b) + ")");
      case Op::Rem: case Op::Shl: case Op::Shr:
        if (is_floating(t.dtype)) return def(id, p_.math(Op::Fmod, t.dtype, L) + "(" + v(in.a) + ", " + v(in.b) + ")");
        if (in.op != Op::Rem) {
          // By a constant within [0, bits) the C++ shift is the IR's (arithmetic on signed
          // types) and stays a vector instruction, where the general form is a loop over lanes
          // checking the amount (Philox's word splits are such shifts).
          const int64_t s = const_shift(in.b, int(itemsize(t.dtype) * 8));
          const std::string back = t.lanes == 1 ? elem_cast(t) : "(" + ctype(t) + ")";
          if (s >= 0 && in.op == Op::Shr) return def(id, back + "(" + v(in.a) + " >> " + std::to_string(s) + ")");
          if (s >= 0)
            return def(id, back + "((" + unsigned_type(t) + ")" + v(in.a) + " << " + std::to_string(s) + ")");
        }
        return def(id, p_.int_op(in.op, t.dtype, L) + "(" + v(in.a) + ", " + v(in.b) + ")");
      case Op::Pow: case Op::Atan2: case Op::Fmod:
        return def(id, p_.math(in.op, t.dtype, L) + "(" + v(in.a) + ", " + v(in.b) + ")");
      case Op::And: case Op::Or: case Op::Xor: {
        const char* op = in.op == Op::And ? "&" : in.op == Op::Or ? "|" : "^";
        if (t.dtype == DType::Bool && vec) {
          const int bits = mask_[size_t(in.a)];
          return def(id, v(in.a) + " " + op + " " + mask(in.b, bits), bits);
        }
        if (t.dtype == DType::Bool) return def(id, "(bool)(" + v(in.a) + " " + op + " " + v(in.b) + ")");
        return def(id, v(in.a) + " " + op + " " + v(in.b));
      }
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: return compare(id, in);
      case Op::Select: {
        if (type(in.a).lanes == 1) {
          const int bits = t.dtype == DType::Bool && vec ? mask_[size_t(in.b)] : 0;
          return def(id, v(in.a) + " ? " + (bits ? v(in.b) + " : " + mask(in.c, bits) : v(in.b) + " : " + v(in.c)), bits);
        }
        const int bits = t.dtype == DType::Bool ? mask_[size_t(in.b)] : int(itemsize(t.dtype) * 8);
        const std::string b = v(in.b), c = t.dtype == DType::Bool ? mask(in.c, bits) : v(in.c);
        return def(id, mask(in.a, bits) + " ? " + b + " : " + c, t.dtype == DType::Bool ? bits : 0);
      }
      case Op::Load: return load(id, in);
      case Op::Store: return store(in);
      case Op::VarDecl: {
        const std::string init = in.a >= 0 ? (t.dtype == DType::Bool && vec ? mask(in.a, 8) : v(in.a)) : "{}";
        mask_[size_t(id)] = t.dtype == DType::Bool && vec ? 8 : 0;
        return line(ctype(t, 8) + " var" + std::to_string(id) + " = " + init + ";");
      }
      case Op::VarRead: return def(id, "var" + std::to_string(in.a), t.dtype == DType::Bool && vec ? 8 : 0);
      case Op::VarWrite: {
        const bool bvec = type(in.b).dtype == DType::Bool && type(in.b).lanes > 1;
        return line("var" + std::to_string(in.a) + " = " + (bvec ? mask(in.b, 8) : v(in.b)) + ";");
      }
      case Op::ArrayDecl:
        return line(mem_type(t.dtype) + " arr" + std::to_string(id) + "[" + std::to_string(in.imm) + "];");
      case Op::ArrayLoad: return array_load(id, in);
      case Op::ArrayStore: return array_store(in);
      case Op::PlaneReduce: case Op::PlaneBroadcast: case Op::PlaneShuffle: case Op::PlaneShuffleXor:
        return def(id, v(in.a), mask_[size_t(in.a)]);  // one lane per plane
      case Op::Barrier: return;
      case Op::For:
        line("for (long long " + v(id) + " = " + v(in.a) + "; " + v(id) + " < " + v(in.b) + "; " + v(id) +
             " += " + std::to_string(in.imm) + ") {");
        ++depth_;
        return;
      case Op::If:
        line("if (" + v(in.a) + ") {");
        ++depth_;
        return;
      case Op::Else:
        --depth_;
        line("} else {");
        ++depth_;
        return;
      case Op::EndFor: case Op::EndIf:
        --depth_;
        line("}");
        return;
      default:
        if (in.op >= Op::Exp && in.op <= Op::RoundEven) {
          if (!vec && (in.op == Op::Floor || in.op == Op::Ceil || in.op == Op::Trunc || in.op == Op::Sqrt ||
                       in.op == Op::RoundEven))
            return def(id, p_.math(in.op, t.dtype, 1) + "(" + v(in.a) + ")");
          return def(id, p_.math(in.op, t.dtype, L) + "(" + v(in.a) + ")");
        }
        ember::detail::throw_value("kl", std::string("C++ renderer: unexpected op ") + op_name(in.op));
    }
  }

  void load(int32_t id, const Inst& in) {
    const Type t = in.type;
    const std::string ptr = pointer(in), idx = v(in.a);
    if (t.lanes == 1) {
      std::string e = ptr + "[" + idx + "]";
      if (t.dtype == DType::Bool) e += " != 0";
      if (in.b >= 0) e = v(in.b) + " ? " + (t.dtype == DType::Bool ? "(" + e + ")" : e) + " : " + (t.dtype == DType::Bool ? "false" : elem_cast(t) + "0");
      return def(id, e);
    }
    const std::string raw = p_.type(dtype_tag(t.dtype), t.lanes);
    const std::string r = "r" + std::to_string(id);
    line(raw + " " + r + " = {};");
    if (in.b >= 0)
      line("for (int l = 0; l < " + std::to_string(t.lanes) + "; ++l) if (" + v(in.b) + (type(in.b).lanes > 1 ? "[l]" : "") +
           ") " + r + "[l] = " + ptr + "[" + idx + " + l];");
    else
      line("__builtin_memcpy(&" + r + ", " + ptr + " + " + idx + ", sizeof " + r + ");");
    if (t.dtype == DType::Bool) return def(id, r + " != 0", 8);
    def(id, r);
  }

  void store(const Inst& in) {
    const Type t = type(in.b);
    const std::string ptr = pointer(in), idx = v(in.a);
    if (t.lanes == 1) {
      std::string s = (in.sub & kAtomic) ? "__atomic_store_n(&" + ptr + "[" + idx + "], " + v(in.b) + ", __ATOMIC_RELAXED);"
                                          : ptr + "[" + idx + "] = " + v(in.b) + ";";
      return line(in.c >= 0 ? "if (" + v(in.c) + ") " + s : s);
    }
    std::string val = v(in.b);
    if (t.dtype == DType::Bool)
      val = "((" + p_.type("u8", t.lanes) + ")" + mask(in.b, 8) + " & 1)";
    const std::string w = "w" + std::to_string(in.b) + "_" + std::to_string(store_count_++);
    line("const " + p_.type(dtype_tag(t.dtype), t.lanes) + " " + w + " = " + val + ";");
    if (in.c >= 0)
      line("for (int l = 0; l < " + std::to_string(t.lanes) + "; ++l) if (" + v(in.c) + (type(in.c).lanes > 1 ? "[l]" : "") +
           ") " + ptr + "[" + idx + " + l] = " + w + "[l];");
    else
      line("__builtin_memcpy(" + ptr + " + " + idx + ", &" + w + ", sizeof " + w + ");");
  }

  void array_load(int32_t id, const Inst& in) {
    const Type t = in.type;
    const std::string arr = "arr" + std::to_string(in.a), idx = v(in.b);
    if (t.lanes == 1) return def(id, arr + "[" + idx + "]" + (t.dtype == DType::Bool ? " != 0" : ""));
    const std::string r = "r" + std::to_string(id);
    line(p_.type(dtype_tag(t.dtype), t.lanes) + " " + r + ";");
    line("__builtin_memcpy(&" + r + ", " + arr + " + " + idx + ", sizeof " + r + ");");
    if (t.dtype == DType::Bool) return def(id, r + " != 0", 8);
    def(id, r);
  }

  void array_store(const Inst& in) {
    const Type t = type(in.c);
    const std::string arr = "arr" + std::to_string(in.a), idx = v(in.b);
    if (t.lanes == 1) return line(arr + "[" + idx + "] = " + v(in.c) + ";");
    std::string val = t.dtype == DType::Bool ? "((" + p_.type("u8", t.lanes) + ")" + mask(in.c, 8) + " & 1)" : v(in.c);
    const std::string w = "w" + std::to_string(in.c) + "_" + std::to_string(store_count_++);
    line("const " + p_.type(dtype_tag(t.dtype), t.lanes) + " " + w + " = " + val + ";");
    line("__builtin_memcpy(" + arr + " + " + idx + ", &" + w + ", sizeof " + w + ");");
  }

  const Kernel& k_;
  Prelude& p_;
  std::vector<int> mask_;  // per value: mask width of a vector bool (0 otherwise)
  std::string out_;
  int depth_ = 0;
  int store_count_ = 0;
};

// Keeps the compiler from contracting or reassociating across a value (IR Fence).
const char* kFence = R"(#if defined(__x86_64__) || defined(__i386__)
#define KL_FENCE(v) __asm__("" : "+v"(v))
#elif defined(__aarch64__)
#define KL_FENCE(v) __asm__("" : "+w"(v))
#else
#define KL_FENCE(v) __asm__("" : "+m"(v))
#endif
)";

// FP contraction inside ops as in ember's own kernels (GCC contracts a*b+c in C++ by default;
// a toolchain may pass -ffp-contract=off): the pragmas override the command line.
std::string contraction(bool on) {
  const std::string m = on ? "fast" : "off";
  return "#if defined(__clang__)\n#pragma clang fp contract(" + m + ")\n#elif defined(__GNUC__)\n"
         "#pragma GCC optimize(\"fp-contract=" + m + "\")\n#endif\n";
}

// Bumped whenever the rendered source changes (its meaning or its speed), so cached objects of
// an older renderer are not reused.
constexpr int kRevision = 1;

class CppRenderer : public Renderer {
 public:
  explicit CppRenderer(Target t) : t_(std::move(t)) {}
  const Target& target() const override { return t_; }
  std::string cache_id() const override { return t_.name + "/cpp-r" + std::to_string(kRevision); }
  std::string render(std::span<const Kernel> kernels) const override {
    Prelude p;
    std::string bodies;
    for (const Kernel& k : kernels) {
      Kernel l = legalize(k, t_);
      bodies += "\n" + KernelWriter(l, p).run();
    }
    return "// generated by ember's kernel language (C++ target " + t_.name + ")\n" + contraction(t_.fp_contract) +
           kFence + p.text() + bodies;
  }

 private:
  Target t_;
};

}  // namespace

std::unique_ptr<Renderer> cpp_renderer(Target t) { return std::make_unique<CppRenderer>(std::move(t)); }

}  // namespace ember::kl
