// The CUDA renderer: CUDA C for NVRTC, no #include. Every SSA value is a local; a vector value
// of L lanes is L scalar locals (vN_0 .. vN_{L-1}) and each vector op is written out per lane,
// so nothing lives in addressable arrays and everything stays in registers. Loads and stores
// of several lanes are one 4/8/16-byte access when the address is aligned at run time, else
// per-lane accesses.
//
// Work mapping (docs/kernels.md): a kernel of workgroup size 1 (the CPU forms of the templates)
// runs one workgroup per thread, 128 threads a block; a kernel of workgroup size W > 1 runs one
// workgroup per block of W threads. Workgroup g of a launch over [begin, end) with grain G covers
// items [begin + g*G, min(begin + (g+1)*G, end)): WorkBegin/WorkEnd. LocalId is the thread
// within the workgroup; planes are warps of 32 lanes with native shuffles.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/render.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/half.h"
#include "ember/kl/cuda/helpers.h"

namespace ember::kl {
namespace {

int cuda_min_blocks() {
  static const int v = [] {
    const char* e = std::getenv("EMBER_CUDA_MIN_BLOCKS");
    const int n = e ? std::atoi(e) : 0;
    return n >= 0 && n <= 32 ? n : 0;
  }();
  return v;
}

using cuda::ctype;
using cuda::Helpers;
using cuda::mem_ctype;
using cuda::uctype;

constexpr int kThreadsPerBlockOfOnes = 128;

std::string float_literal(double v, bool f32) {
  if (v != v || v == __builtin_inf() || v == -__builtin_inf() || (v == 0 && std::signbit(v))) {
    char buf[64];
    if (f32) {
      std::snprintf(buf, sizeof buf, "__uint_as_float(0x%08xu)", std::bit_cast<uint32_t>(float(v)));
    } else {
      std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016llxLL)",
                    (unsigned long long)std::bit_cast<uint64_t>(v));
    }
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return "(" + std::string(buf) + (f32 ? "f" : "") + ")";
}

class KernelWriter {
 public:
  KernelWriter(const Kernel& k, const Target& t, Helpers& h)
      : k_(k), t_(t), h_(h), fenced_(k.body.size(), 0) {
    for (const Inst& in : k.body)
      if (in.op == Op::Fence && in.a >= 0) fenced_[size_t(in.a)] = 1;
  }

  std::string run() {
    const int64_t slots = int64_t(k_.buffers.size() + k_.scalars.size() + k_.indices.size());
    const std::string args = "kl_args_" + k_.name;
    line("struct " + args + " { unsigned long long a[" + std::to_string(slots ? slots : 1) +
         "]; };");
    const int64_t threads = cuda_block_threads(k_);
    // A kernel of one-thread workgroups (pointwise, column reductions) may ask for a minimum
    // of resident blocks an SM, which caps its registers (EMBER_CUDA_MIN_BLOCKS; 0: no cap).
    const int mb = k_.workgroup_size == 1 ? cuda_min_blocks() : 0;
    line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) +
         (mb > 0 ? ", " + std::to_string(mb) : std::string()) + ") " +
         k_.name + "(const " + args +
         " kl_p, long long kl_begin, long long kl_end, long long kl_grain) {");
    ++depth_;
    const bool ones = k_.workgroup_size <= 1;
    line(std::string("const long long kl_group = ") +
         (ones ? "(long long)blockIdx.x * blockDim.x + threadIdx.x;" : "(long long)blockIdx.x;"));
    line("const long long kl_wb = kl_begin + kl_group * kl_grain;");
    line("const long long kl_we = kl_wb + kl_grain < kl_end ? kl_wb + kl_grain : kl_end;");
    size_t slot = 0;
    for (size_t i = 0; i < k_.buffers.size(); ++i, ++slot) {
      const BufferParam& b = k_.buffers[i];
      const std::string e = mem_ctype(b.dtype), c = b.access == Access::Read ? "const " : "";
      const std::string s = "kl_p.a[" + std::to_string(slot) + "]";
      if (b.list)
        line(c + e + "* const* b" + std::to_string(i) + " = (" + c + e + "* const*)" + s + ";");
      else
        line(c + e + "* " + (b.restrict_ ? "__restrict__ " : "") + "b" + std::to_string(i) +
             " = (" + c + e + "*)" + s + ";");
    }
    for (size_t i = 0; i < k_.scalars.size(); ++i, ++slot) {
      const DType d = k_.scalars[i].dtype;
      const std::string s = "kl_p.a[" + std::to_string(slot) + "]", n = "s" + std::to_string(i);
      std::string e;
      if (d == DType::F32)
        e = "__uint_as_float((unsigned)" + s + ")";
      else if (d == DType::F64)
        e = "__longlong_as_double((long long)" + s + ")";
      else if (d == DType::Bool)
        e = "(" + s + " & 0xffu) != 0";
      else
        e = "(" + std::string(ctype(d)) + ")" + s;
      line("const " + std::string(ctype(d)) + " " + n + " = " + e + ";");
    }
    for (size_t i = 0; i < k_.indices.size(); ++i, ++slot)
      line("const long long n" + std::to_string(i) + " = (long long)kl_p.a[" +
           std::to_string(slot) + "];");
    for (size_t i = 0; i < k_.body.size(); ++i) inst(int32_t(i));
    --depth_;
    line("}");
    return out_;
  }

 private:
  void line(const std::string& s) { out_ += std::string(size_t(depth_) * 2, ' ') + s + "\n"; }
  const Inst& at(int32_t id) const { return k_.body[size_t(id)]; }
  Type type(int32_t id) const { return at(id).type; }
  // Lane l of value id (a scalar serves every lane).
  std::string r(int32_t id, int l) const {
    if (type(id).lanes == 1) return "v" + std::to_string(id);
    return "v" + std::to_string(id) + "_" + std::to_string(l);
  }
  std::string name(int32_t id, int l, int lanes) const {
    return lanes == 1 ? "v" + std::to_string(id)
                      : "v" + std::to_string(id) + "_" + std::to_string(l);
  }
  // Defines value id lane by lane.
  template <class F>
  void def(int32_t id, F&& lane_expr) {
    const Type t = type(id);
    for (int l = 0; l < t.lanes; ++l)
      line("const " + std::string(ctype(t.dtype)) + " " + name(id, l, t.lanes) + " = " +
           lane_expr(l) + ";");
  }
  // Declares value id's lanes without a value (filled by the following lines).
  void declare(int32_t id) {
    const Type t = type(id);
    std::string s = std::string(ctype(t.dtype)) + " ";
    for (int l = 0; l < t.lanes; ++l) s += (l ? ", " : "") + name(id, l, t.lanes);
    line(s + ";");
  }
  std::string cast_t(DType d) const { return std::string("(") + ctype(d) + ")"; }

  std::string constant(const Inst& in) {
    const DType d = in.type.dtype;
    if (d == DType::F32 || d == DType::F64)
      return float_literal(const_as_double(d, in.imm), d == DType::F32);
    if (d == DType::F16)
      return "(unsigned short)" + std::to_string(Half(float(const_as_double(d, in.imm))).bits);
    if (d == DType::BF16)
      return "(unsigned short)" + std::to_string(BFloat16(float(const_as_double(d, in.imm))).bits);
    if (d == DType::Bool) return in.imm ? "true" : "false";
    if (d == DType::I64)
      return in.imm == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(in.imm) + "LL";
    return cast_t(d) + "(" + std::to_string(in.imm) + ")";
  }

  std::string cast(int32_t a, int l, DType to) {
    const DType f = type(a).dtype;
    const std::string x = r(a, l);
    if (f == to) return x;
    if (f == DType::F32 && (to == DType::F16 || to == DType::BF16))
      return h_.to_half(to) + "(" + x + ")";
    if ((f == DType::F16 || f == DType::BF16) && to == DType::F32)
      return h_.from_half(f) + "(" + x + ")";
    if (f == DType::F16 || f == DType::BF16 || to == DType::F16 || to == DType::BF16)
      ember::detail::throw_value("kl", "CUDA renderer: a cast " + type_name(type(a)) + " -> " +
                                           type_name({to, 1}) + " was not legalised");
    if (to == DType::Bool) return "(" + x + " != 0)";
    if (is_floating(f) && !is_floating(to))
      return cast_t(to) + h_.float_to_int(f, to) + "(" + x + ")";
    return cast_t(to) + x;
  }

  // Integer arithmetic wraps: computed in the unsigned type of the same width.
  std::string wrap(const char* op, int32_t a, int32_t b, int l, DType d) {
    const std::string U = uctype(d);
    return cast_t(d) + "((" + U + ")" + r(a, l) + " " + op + " (" + U + ")" + r(b, l) + ")";
  }

  std::string fabs_of(const std::string& x, DType d) {
    return (d == DType::F32 ? "fabsf(" : "fabs(") + x + ")";
  }

  // NaN-propagating max/min and the other plane combinations, on two scalars of dtype d.
  std::string combine(ReduceKind k, const std::string& a, const std::string& b, DType d) {
    switch (k) {
      case ReduceKind::Sum:
        return is_floating(d) ? a + " + " + b
                              : "(" + std::string(ctype(d)) + ")((" + uctype(d) + ")" + a + " + (" +
                                    uctype(d) + ")" + b + ")";
      case ReduceKind::Prod:
        return is_floating(d) ? a + " * " + b
                              : "(" + std::string(ctype(d)) + ")((" + uctype(d) + ")" + a + " * (" +
                                    uctype(d) + ")" + b + ")";
      case ReduceKind::And:
        return d == DType::Bool ? a + " && " + b : a + " & " + b;
      case ReduceKind::Or:
        return d == DType::Bool ? a + " || " + b : a + " | " + b;
      default: {
        const bool mx = k == ReduceKind::Max;
        std::string e = "(" + (mx ? a + " < " + b : b + " < " + a) + " ? " + b + " : " + a + ")";
        if (!is_floating(d)) return e;
        return "(" + a + " != " + a + " ? " + a + " : " + b + " != " + b + " ? " + b + " : " + e +
               ")";
      }
    }
  }
  // A warp shuffle of a scalar of dtype d (narrow types and bool travel as int).
  std::string shfl(const char* fn, const std::string& x, const std::string& arg, DType d) {
    const bool narrow = itemsize(d) < 4 || d == DType::Bool;
    if (!narrow) return std::string(fn) + "(0xffffffffu, " + x + ", " + arg + ")";
    return cast_t(d) + fn + "(0xffffffffu, (int)" + x + ", " + arg + ")";
  }

  void plane(int32_t id, const Inst& in) {
    const Type t = in.type;
    const DType d = t.dtype;
    if (in.op == Op::PlaneReduce) {
      const ReduceKind k = ReduceKind(in.sub);
      for (int l = 0; l < t.lanes; ++l) {
        const std::string acc = "p" + std::to_string(id) + "_" + std::to_string(l);
        line(std::string(ctype(d)) + " " + acc + " = " + r(in.a, l) + ";");
        for (int off = t_.plane_size / 2; off >= 1; off /= 2) {
          const std::string o = acc + "o";
          line("{ const " + std::string(ctype(d)) + " " + o + " = " +
               shfl("__shfl_xor_sync", acc, std::to_string(off), d) + "; " + acc + " = " +
               combine(k, acc, o, d) + "; }");
        }
        // Max/Min may differ between lanes in the sign of a zero or a NaN's payload: lane 0's.
        if (is_floating(d) && (k == ReduceKind::Max || k == ReduceKind::Min))
          line(acc + " = " + shfl("__shfl_sync", acc, "0", d) + ";");
      }
      return def(id, [&](int l) { return "p" + std::to_string(id) + "_" + std::to_string(l); });
    }
    if (in.op == Op::PlaneShuffleXor)
      return def(id, [&](int l) {
        return shfl("__shfl_xor_sync", r(in.a, l), std::to_string(in.imm), d);
      });
    return def(id, [&](int l) { return shfl("__shfl_sync", r(in.a, l), "(int)" + r(in.b, 0), d); });
  }

  void inst(int32_t id) {
    const Inst& in = at(id);
    const Type t = in.type;
    const DType d = t.dtype;
    switch (in.op) {
      case Op::Const: {
        const std::string c = constant(in);
        return def(id, [&](int) { return c; });
      }
      case Op::Param:
        return def(id, [&](int) { return "s" + std::to_string(in.imm); });
      case Op::Index:
        return def(id, [&](int) { return "n" + std::to_string(in.imm); });
      case Op::WorkBegin:
        return def(id, [](int) { return std::string("kl_wb"); });
      case Op::WorkEnd:
        return def(id, [](int) { return std::string("kl_we"); });
      case Op::LocalId:
        return def(id, [&](int) {
          return std::string(k_.workgroup_size <= 1 ? "0LL" : "(long long)threadIdx.x");
        });
      case Op::LaneId:
        return def(id, [&](int) {
          return "(long long)(threadIdx.x & " + std::to_string(t_.plane_size - 1) + ")";
        });
      case Op::PlaneSize:
        return def(id, [&](int) { return std::to_string(t_.plane_size) + "LL"; });
      case Op::Iota:
        return def(id, [&](int l) { return cast_t(d) + std::to_string(l); });
      case Op::Neg:
        if (is_floating(d)) return def(id, [&](int l) { return "-" + r(in.a, l); });
        return def(
            id, [&](int l) { return cast_t(d) + "(0u - (" + uctype(d) + ")" + r(in.a, l) + ")"; });
      case Op::Not:
        if (d == DType::Bool) return def(id, [&](int l) { return "!" + r(in.a, l); });
        return def(id, [&](int l) { return cast_t(d) + "~" + r(in.a, l); });
      case Op::Abs:
        if (is_floating(d)) return def(id, [&](int l) { return fabs_of(r(in.a, l), d); });
        return def(id, [&](int l) {
          return r(in.a, l) + " < 0 ? " + cast_t(d) + "(0u - (" + uctype(d) + ")" + r(in.a, l) +
                 ") : " + r(in.a, l);
        });
      case Op::IsNan:
        return def(id, [&](int l) { return "(" + r(in.a, l) + " != " + r(in.a, l) + ")"; });
      case Op::IsInf: {
        const DType a = type(in.a).dtype;
        const std::string inf = a == DType::F32 ? "__uint_as_float(0x7f800000u)"
                                                : "__longlong_as_double(0x7ff0000000000000LL)";
        return def(id, [&](int l) { return "(" + fabs_of(r(in.a, l), a) + " == " + inf + ")"; });
      }
      case Op::Cast:
        return def(id, [&](int l) { return cast(in.a, l, d); });
      case Op::Fence:
        if (!is_floating(d) || d == DType::F16 || d == DType::BF16)
          return def(id, [&](int l) { return r(in.a, l); });
        // An opaque move: nothing is contracted or reassociated through it (the multiply that
        // makes the value is rounded on its own: see Mul).
        for (int l = 0; l < t.lanes; ++l) {
          line(std::string(ctype(d)) + " " + name(id, l, t.lanes) + " = " + r(in.a, l) + ";");
          line(std::string("asm volatile(\"\" : \"+") + (d == DType::F32 ? "f" : "d") + "\"(" +
               name(id, l, t.lanes) + "));");
        }
        return;
      case Op::Bitcast: {
        const std::string bc = h_.bitcast();
        return def(id, [&](int l) { return bc + "<" + ctype(d) + ">(" + r(in.a, l) + ")"; });
      }
      case Op::Broadcast:
        return def(id, [&](int) { return r(in.a, 0); });
      case Op::Extract:
        return def(id,
                   [&](int) { return "v" + std::to_string(in.a) + "_" + std::to_string(in.imm); });
      case Op::Add:
      case Op::Sub:
      case Op::Mul: {
        const char* op = in.op == Op::Add ? "+" : in.op == Op::Sub ? "-" : "*";
        if (!is_floating(d)) return def(id, [&](int l) { return wrap(op, in.a, in.b, l, d); });
        if (in.op == Op::Mul && (fenced_[size_t(id)] || !t_.fp_contract)) {
          const char* fn = d == DType::F32 ? "__fmul_rn(" : "__dmul_rn(";
          return def(id, [&](int l) { return fn + r(in.a, l) + ", " + r(in.b, l) + ")"; });
        }
        if (!t_.fp_contract) {
          const char* fn = in.op == Op::Add ? (d == DType::F32 ? "__fadd_rn(" : "__dadd_rn(")
                                            : (d == DType::F32 ? "__fsub_rn(" : "__dsub_rn(");
          return def(id, [&](int l) { return fn + r(in.a, l) + ", " + r(in.b, l) + ")"; });
        }
        return def(id, [&](int l) { return r(in.a, l) + " " + op + " " + r(in.b, l); });
      }
      case Op::Div:
        if (is_floating(d)) return def(id, [&](int l) { return r(in.a, l) + " / " + r(in.b, l); });
        [[fallthrough]];
      case Op::Shl:
      case Op::Shr: {
        const std::string fn = h_.int_op(in.op, d);
        return def(id, [&](int l) { return fn + "(" + r(in.a, l) + ", " + r(in.b, l) + ")"; });
      }
      case Op::Rem:
      case Op::Pow:
      case Op::Atan2:
      case Op::Fmod: {
        const std::string fn = is_floating(d) ? Helpers::math(in.op, d) : h_.int_op(Op::Rem, d);
        return def(id, [&](int l) { return fn + "(" + r(in.a, l) + ", " + r(in.b, l) + ")"; });
      }
      case Op::And:
      case Op::Or:
      case Op::Xor: {
        const char* op = in.op == Op::And ? "&" : in.op == Op::Or ? "|" : "^";
        if (d == DType::Bool)
          return def(id, [&](int l) {
            return "(bool)(" + r(in.a, l) + " " + op + " " + r(in.b, l) + ")";
          });
        return def(id, [&](int l) {
          return cast_t(d) + "(" + r(in.a, l) + " " + op + " " + r(in.b, l) + ")";
        });
      }
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge: {
        static const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
        const char* op = ops[int(in.op) - int(Op::Eq)];
        return def(id, [&](int l) { return "(" + r(in.a, l) + " " + op + " " + r(in.b, l) + ")"; });
      }
      case Op::Select:
        return def(id, [&](int l) { return r(in.a, l) + " ? " + r(in.b, l) + " : " + r(in.c, l); });
      case Op::Load:
        return load(id, in);
      case Op::Store:
        return store(in);
      case Op::VarDecl:
        for (int l = 0; l < t.lanes; ++l)
          line(std::string(ctype(d)) + " var" + std::to_string(id) +
               (t.lanes > 1 ? "_" + std::to_string(l) : "") + " = " +
               (in.a >= 0 ? r(in.a, l) : cast_t(d) + "0") + ";");
        return;
      case Op::VarRead:
        return def(id, [&](int l) {
          return "var" + std::to_string(in.a) + (t.lanes > 1 ? "_" + std::to_string(l) : "");
        });
      case Op::VarWrite:
        for (int l = 0; l < type(in.b).lanes; ++l)
          line("var" + std::to_string(in.a) +
               (type(in.b).lanes > 1 ? "_" + std::to_string(l) : "") + " = " + r(in.b, l) + ";");
        return;
      case Op::ArrayDecl:
        return line(std::string(Space(in.sub) == Space::Shared ? "__shared__ " : "") + ctype(d) +
                    " arr" + std::to_string(id) + "[" + std::to_string(in.imm) + "];");
      case Op::ArrayLoad:
        return def(id, [&](int l) {
          return "arr" + std::to_string(in.a) + "[" + r(in.b, 0) +
                 (l ? " + " + std::to_string(l) : "") + "]";
        });
      case Op::ArrayStore:
        for (int l = 0; l < type(in.c).lanes; ++l)
          line("arr" + std::to_string(in.a) + "[" + r(in.b, 0) +
               (l ? " + " + std::to_string(l) : "") + "] = " + r(in.c, l) + ";");
        return;
      case Op::PlaneReduce:
      case Op::PlaneBroadcast:
      case Op::PlaneShuffle:
      case Op::PlaneShuffleXor:
        return plane(id, in);
      case Op::Barrier:
        return line("__syncthreads();");
      case Op::For: {
        const std::string v = "v" + std::to_string(id);
        line("for (long long " + v + " = " + r(in.a, 0) + "; " + v + " < " + r(in.b, 0) + "; " + v +
             " += " + std::to_string(in.imm) + ") {");
        ++depth_;
        return;
      }
      case Op::If:
        line("if (" + r(in.a, 0) + ") {");
        ++depth_;
        return;
      case Op::Else:
        --depth_;
        line("} else {");
        ++depth_;
        return;
      case Op::EndFor:
      case Op::EndIf:
        --depth_;
        line("}");
        return;
      default:
        if (in.op >= Op::Exp && in.op <= Op::RoundEven) {
          const std::string fn = Helpers::math(in.op, d);
          return def(id, [&](int l) { return fn + "(" + r(in.a, l) + ")"; });
        }
        ember::detail::throw_value("kl",
                                   std::string("CUDA renderer: unexpected op ") + op_name(in.op));
    }
  }

  std::string pointer(const Inst& in) const {
    const std::string b = "b" + std::to_string(in.imm);
    return in.d >= 0 ? b + "[" + r(in.d, 0) + "]" : b;
  }
  // The access type of `bytes` (a power of two up to 16) and whether one exists.
  // One generic-address PTX store of kl_u.w at kl_q (kl_q is aligned to `bytes`).
  static std::string wide_store(int bytes) {
    switch (bytes) {
      case 2:
        return "asm volatile(\"st.b16 [%0], %1;\" :: \"l\"(kl_q), \"h\"(kl_u.w) : \"memory\");";
      case 4:
        return "asm volatile(\"st.b32 [%0], %1;\" :: \"l\"(kl_q), \"r\"(kl_u.w) : \"memory\");";
      case 8:
        return "asm volatile(\"st.b64 [%0], %1;\" :: \"l\"(kl_q), \"l\"(kl_u.w) : \"memory\");";
      default:
        return "asm volatile(\"st.v2.b64 [%0], {%1, %2};\" :: \"l\"(kl_q), \"l\"(kl_u.w.lo), "
               "\"l\"(kl_u.w.hi) : \"memory\");";
    }
  }

  static std::string wide_type(int bytes) {
    switch (bytes) {
      case 2:
        return "unsigned short";
      case 4:
        return "unsigned";
      case 8:
        return "unsigned long long";
      case 16:
        return "kl_b16";
      default:
        return "";
    }
  }

  void load(int32_t id, const Inst& in) {
    const Type t = in.type;
    const DType d = t.dtype;
    const std::string p = pointer(in), idx = r(in.a, 0);
    auto elem = [&](const std::string& e) { return d == DType::Bool ? "(" + e + " != 0)" : e; };
    auto zero = [&] { return d == DType::Bool ? std::string("false") : cast_t(d) + "0"; };
    if (t.lanes == 1) {
      const std::string e = elem(p + "[" + idx + "]");
      return def(id, [&](int) { return in.b >= 0 ? r(in.b, 0) + " ? " + e + " : " + zero() : e; });
    }
    declare(id);
    const std::string u = "union { " + wide_type(int(itemsize(d)) * t.lanes) + " w; " +
                          mem_ctype(d) + " e[" + std::to_string(t.lanes) + "]; } kl_u;";
    access(
        "const " + std::string(mem_ctype(d)) + "* kl_q = " + p + " + " + idx + ";",
        int(itemsize(d)) * t.lanes, in.b < 0,
        [&] {
          line(u);
          line("kl_u.w = *(const " + wide_type(int(itemsize(d)) * t.lanes) + "*)kl_q;");
          for (int l = 0; l < t.lanes; ++l)
            line(name(id, l, t.lanes) + " = " + elem("kl_u.e[" + std::to_string(l) + "]") + ";");
        },
        [&] {
          for (int l = 0; l < t.lanes; ++l) {
            const std::string e = elem("kl_q[" + std::to_string(l) + "]");
            line(name(id, l, t.lanes) + " = " +
                 (in.b >= 0 ? r(in.b, l) + " ? " + e + " : " + zero() : e) + ";");
          }
        });
  }

  // A block that declares kl_q (`decl`) and accesses `bytes` there: `wide` when the access has a
  // wide type, `whole` says it may (no mask) and kl_q is aligned at run time, else `per_lane`.
  template <class Wide, class PerLane>
  void access(const std::string& decl, int bytes, bool whole, Wide&& wide, PerLane&& per_lane) {
    line("{");
    ++depth_;
    line(decl);
    if (wide_type(bytes).empty() || !whole) {
      per_lane();
    } else {
      line("if (((unsigned long long)kl_q & " + std::to_string(bytes - 1) + "u) == 0) {");
      ++depth_;
      wide();
      --depth_;
      line("} else {");
      ++depth_;
      per_lane();
      --depth_;
      line("}");
    }
    --depth_;
    line("}");
  }

  void store(const Inst& in) {
    const Type t = type(in.b);
    const DType d = t.dtype;
    const std::string p = pointer(in), idx = r(in.a, 0), E = mem_ctype(d);
    auto val = [&](int l) { return d == DType::Bool ? "(" + E + ")" + r(in.b, l) : r(in.b, l); };
    if (t.lanes == 1) {
      std::string s = (in.sub & kAtomic)
                          ? "*(volatile " + E + "*)&" + p + "[" + idx + "] = " + val(0) + ";"
                          : p + "[" + idx + "] = " + val(0) + ";";
      return line(in.c >= 0 ? "if (" + r(in.c, 0) + ") " + s : s);
    }
    const int bytes = int(itemsize(d)) * t.lanes;
    const std::string w = wide_type(bytes);
    access(
        E + "* kl_q = " + p + " + " + idx + ";", bytes, in.c < 0,
        [&] {
          line("union { " + w + " w; " + E + " e[" + std::to_string(t.lanes) + "]; } kl_u;");
          for (int l = 0; l < t.lanes; ++l)
            line("kl_u.e[" + std::to_string(l) + "] = " + val(l) + ";");
          // The wide store is inline PTX: written as C++ (`*(W*)kl_q = ...`) beside the
          // per-lane branch, NVRTC merged both into one vector store without the alignment
          // test (a misaligned-address fault on rows of odd length).
          line(wide_store(bytes));
        },
        [&] {
          for (int l = 0; l < t.lanes; ++l) {
            const std::string st = "kl_q[" + std::to_string(l) + "] = " + val(l) + ";";
            line(in.c >= 0 ? "if (" + r(in.c, l) + ") " + st : st);
          }
        });
  }

  const Kernel& k_;
  const Target& t_;
  Helpers& h_;
  std::vector<char> fenced_;  // per value: a Fence reads it
  std::string out_;
  int depth_ = 0;
};

// Bumped whenever the rendered source changes (its meaning or its speed).
constexpr int kRevision = 4;  // 4 wide stores as inline PTX (NVRTC dropped their alignment test)

const char* kPrelude =
    "// generated by ember's kernel language (CUDA target %s)\n"
    "struct alignas(16) kl_b16 { unsigned long long lo, hi; };\n";

class CudaRenderer : public Renderer {
 public:
  explicit CudaRenderer(Target t) : t_(std::move(t)) {}
  const Target& target() const override { return t_; }
  std::string cache_id() const override {
    const int mb = cuda_min_blocks();
    return t_.name + "/cuda-r" + std::to_string(kRevision) + (mb > 0 ? "-mb" + std::to_string(mb) : "");
  }
  std::string render(std::span<const Kernel> kernels) const override {
    Helpers h;
    std::string bodies;
    for (const Kernel& k : kernels) {
      // Threads of a kernel of workgroup size 1 are independent workgroups: planes of one lane.
      Target kt = t_;
      if (k.workgroup_size <= 1)
        kt.plane_size = 1, kt.plane_ops = false;
      else if (k.workgroup_size % t_.plane_size != 0 || k.workgroup_size > 1024)
        ember::detail::throw_value("kl",
                                   "CUDA renderer: kernel '" + k.name + "' has workgroup size " +
                                       std::to_string(k.workgroup_size) + " (a multiple of " +
                                       std::to_string(t_.plane_size) + " up to 1024 expected)");
      Kernel l = legalize(k, kt);
      bodies += "\n" + KernelWriter(l, kt, h).run();
    }
    char head[256];
    std::snprintf(head, sizeof head, kPrelude, t_.name.c_str());
    return head + h.text() + bodies;
  }

 private:
  Target t_;
};

}  // namespace

Target cuda_target(int sm_major, int sm_minor, int64_t shared_bytes) {
  Target t;
  t.name = "cuda-sm" + std::to_string(sm_major) + std::to_string(sm_minor);
  t.vector_bytes = 16;
  t.max_lanes = 64;  // (its own kernels use at most 16; others' render lane by lane)
  t.plane_size = 32;
  t.plane_ops = true;
  t.shared_bytes = shared_bytes;
  t.native_dtypes = ~0u & ~(1u << int(DType::F16)) & ~(1u << int(DType::BF16));
  t.fp_contract = true;
  return t;
}

int64_t cuda_block_threads(const Kernel& k) {
  return k.workgroup_size <= 1 ? kThreadsPerBlockOfOnes : k.workgroup_size;
}

int64_t cuda_grid_blocks(const Kernel& k, int64_t items, int64_t grain) {
  if (items <= 0) return 0;
  const int64_t groups = (items + grain - 1) / grain;
  if (k.workgroup_size > 1) return groups;
  return (groups + kThreadsPerBlockOfOnes - 1) / kThreadsPerBlockOfOnes;
}

std::unique_ptr<Renderer> cuda_renderer(Target t) {
  return std::make_unique<CudaRenderer>(std::move(t));
}

}  // namespace ember::kl
