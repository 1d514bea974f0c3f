// Kernel IR: op tables, constant payloads and the listing printer.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/ir.h"

#include <bit>
#include <cmath>
#include <sstream>

#include "ember/detail/convert.h"
#include "ember/half.h"

namespace ember::kl {
namespace {

struct OpInfo {
  const char* name;
  int operands;
  char kind;
};
constexpr OpInfo kOps[] = {
#define EMBER_X(n, k, c) {#n, k, #c[0]},
    EMBER_KL_OPS(EMBER_X)
#undef EMBER_X
};

std::string lower(const char* s) {
  std::string r(s);
  for (char& ch : r) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return r;
}

}  // namespace

const char* op_name(Op op) { return kOps[int(op)].name; }
int op_operands(Op op) { return kOps[int(op)].operands; }
bool op_defines_value(Op op) { return kOps[int(op)].kind == 'V' || op == Op::For; }
const char* reduce_kind_name(ReduceKind k) {
  static const char* names[] = {"sum", "prod", "max", "min", "and", "or"};
  return names[int(k)];
}

int64_t const_bits_int(DType d, int64_t v) {
  switch (d) {
    case DType::Bool: return v != 0;
    case DType::U8: return int64_t(uint8_t(v));
    case DType::I8: return int64_t(int8_t(v));
    case DType::I16: return int64_t(int16_t(v));
    case DType::I32: return int64_t(int32_t(v));
    case DType::I64: return v;
    default: return const_bits(d, double(v));
  }
}

int64_t const_bits(DType d, double v) {
  if (!is_floating(d)) {
    if (d == DType::Bool) return v != 0;
    // As a Cast from f64 does (ember/detail/convert.h). A constant of any float dtype folds by
    // the f64 rule: for uint8 the int64 and int32 paths differ only on f64 values (every f32,
    // f16 or bf16 value outside int32's range is a multiple of 256).
    if (itemsize(d) == 8 || d == DType::U8) return const_bits_int(d, ember::detail::float_to_i64(v));
    return const_bits_int(d, ember::detail::float_to_i32(v));
  }
  double r = v;
  if (d == DType::F32) r = double(float(v));
  if (d == DType::F16) r = double(float(Half(float(v))));
  if (d == DType::BF16) r = double(float(BFloat16(float(v))));
  if (r != r) r = std::copysign(__builtin_nan(""), r);
  return std::bit_cast<int64_t>(r);
}

double const_as_double(DType d, int64_t bits) {
  return is_floating(d) ? std::bit_cast<double>(bits) : double(bits);
}
int64_t const_as_int(DType d, int64_t bits) {
  if (!is_floating(d)) return bits;
  return ember::detail::float_to_i64(std::bit_cast<double>(bits));
}

std::string type_name(Type t) {
  static const char* short_names[] = {"bool", "u8", "i8", "i16", "i32", "i64",
                                      "f16",  "bf16", "f32", "f64"};
  std::string s = short_names[int(t.dtype)];
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

std::string to_text(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << "(";
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const BufferParam& b = k.buffers[i];
    static const char* acc[] = {"in", "out", "inout"};
    os << (i ? ", " : "") << acc[int(b.access)] << " " << type_name({b.dtype, 1})
       << (b.list ? "[]*" : "*") << (b.restrict_ ? " restrict " : " ") << "b" << i;
    if (!b.name.empty()) os << ":" << b.name;
  }
  for (size_t i = 0; i < k.scalars.size(); ++i)
    os << ", " << type_name({k.scalars[i].dtype, 1}) << " s" << i
       << (k.scalars[i].name.empty() ? "" : ":" + k.scalars[i].name);
  for (size_t i = 0; i < k.indices.size(); ++i)
    os << ", i64 n" << i << (k.indices[i].name.empty() ? "" : ":" + k.indices[i].name);
  os << ")";
  if (!k.spec.empty()) os << "  // " << k.spec;
  os << "\n";
  int depth = 1;
  auto ref = [](int32_t v) { return "%" + std::to_string(v); };
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Inst& in = k.body[i];
    if (in.op == Op::EndFor || in.op == Op::EndIf || in.op == Op::Else) --depth;
    os << std::string(size_t(depth) * 2, ' ');
    if (op_defines_value(in.op)) os << ref(int32_t(i)) << " = ";
    os << lower(op_name(in.op));
    if (in.op == Op::PlaneReduce) os << "." << reduce_kind_name(ReduceKind(in.sub));
    if (in.op == Op::ArrayDecl) os << (Space(in.sub) == Space::Shared ? ".shared" : ".local");
    if (in.op == Op::Store && (in.sub & kAtomic)) os << ".atomic";
    if (op_defines_value(in.op) || in.op == Op::VarDecl || in.op == Op::ArrayDecl)
      os << " " << type_name(in.type);
    for (int32_t o : {in.a, in.b, in.c, in.d})
      if (o >= 0) os << " " << ref(o);
    switch (in.op) {
      case Op::Const:
        if (is_floating(in.type.dtype)) os << " " << const_as_double(in.type.dtype, in.imm);
        else os << " " << in.imm;
        break;
      case Op::Param: os << " s" << in.imm; break;
      case Op::Index: os << " n" << in.imm; break;
      case Op::Load: case Op::Store: os << " b" << in.imm; break;
      case Op::Extract: case Op::PlaneShuffleXor: case Op::ArrayDecl: os << " " << in.imm; break;
      case Op::For: if (in.imm != 1) os << " step " << in.imm; break;
      default: break;
    }
    for (const auto& [id, name] : k.value_names)
      if (id == int32_t(i)) os << "  // " << name;
    os << "\n";
    if (in.op == Op::For || in.op == Op::If || in.op == Op::Else) ++depth;
  }
  return os.str();
}

}  // namespace ember::kl
