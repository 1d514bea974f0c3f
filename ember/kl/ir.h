#pragma once
// Kernel IR: a kernel is a flat list of instructions in SSA form with structured control flow
// (For/EndFor, If/Else/EndIf markers), so GLSL/WGSL can be emitted as well as C++ and CUDA.
// A value is named by the index of the instruction that defines it; it is visible after its
// definition until the end of the region it was defined in. Values carry their type at run time
// (a DType plus a lane count), never as a C++ template parameter.
//
// Semantics every renderer implements (the C++ renderer is the reference):
// - Integer Add/Sub/Mul/Neg/Shl wrap (two's complement), like PyTorch.
// - Integer Div truncates; Rem has the sign of the dividend (C's %). A zero divisor gives
//   a / 0 = 0 and a % 0 = a (so a == (a / b) * b + a % b still holds); INT_MIN / -1 = INT_MIN
//   and INT_MIN % -1 = 0.
// - Shl/Shr by a count outside [0, bits): Shl gives 0, Shr gives the sign fill (-1 or 0).
//   Shr is arithmetic on signed types.
// - Cast float -> integer: ember/detail/convert.h's rule (PyTorch's x86 results): truncation
//   toward zero; to int64 anything outside [-2^63, 2^63) (NaN, inf) is INT64_MIN; to the
//   narrower types the int32 result (INT32_MIN outside its range) wrapped to the width, except
//   f64 -> uint8, which wraps the int64 result.
//   Cast -> bool: x != 0. Cast of f64 to f16/bf16 rounds through f32 (as flex does).
// - Bool values are 0 or 1; And/Or/Xor/Not on bool are the logical operations.
// - Float Min/Max do not exist: select(a < b, b, a) is the form (its NaN behaviour is explicit).
// - A masked-off lane of a Load reads 0 and touches no memory; of a Store writes nothing.
// - Float Rem is fmod (the sign of the dividend).
// - Fence(x) is x, computed exactly as written: renderers must not contract (a*b+c into an FMA)
//   or reassociate across it. Traced registry ops end in one, so a fused chain rounds where
//   the eager ops do, while the inside of each op may contract as ember's own kernels do.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/dtype.h"

namespace ember::kl {

/// A value's type: element dtype and lane count (1 = scalar). Lanes are 1..64.
struct Type {
  DType dtype = DType::F32;
  uint8_t lanes = 1;
  bool operator==(const Type&) const = default;
  Type with_lanes(int n) const { return {dtype, uint8_t(n)}; }
  Type scalar() const { return {dtype, 1}; }
};
inline constexpr int kMaxLanes = 64;

// X(name, operand count, kind): kind V = defines a value, S = statement, R = region marker.
#define EMBER_KL_OPS(X)                                                                        \
  /* leaves */                                                                                 \
  X(Const, 0, V) X(Param, 0, V) X(Index, 0, V) X(WorkBegin, 0, V) X(WorkEnd, 0, V)             \
  X(LocalId, 0, V) X(LaneId, 0, V) X(PlaneSize, 0, V) X(Iota, 0, V)                             \
  /* unary */                                                                                  \
  X(Neg, 1, V) X(Not, 1, V) X(Abs, 1, V) X(Exp, 1, V) X(Exp2, 1, V) X(Expm1, 1, V)              \
  X(Log, 1, V) X(Log2, 1, V) X(Log10, 1, V) X(Log1p, 1, V) X(Sqrt, 1, V) X(Sin, 1, V)           \
  X(Cos, 1, V) X(Tan, 1, V) X(Asin, 1, V) X(Acos, 1, V) X(Atan, 1, V) X(Sinh, 1, V)             \
  X(Cosh, 1, V) X(Tanh, 1, V) X(Asinh, 1, V) X(Acosh, 1, V) X(Atanh, 1, V) X(Erf, 1, V)         \
  X(Floor, 1, V) X(Ceil, 1, V) X(Trunc, 1, V) X(RoundEven, 1, V) X(IsNan, 1, V)                 \
  X(IsInf, 1, V) X(Cast, 1, V) X(Bitcast, 1, V) X(Broadcast, 1, V) X(Extract, 1, V)             \
  X(Fence, 1, V)                                                                               \
  /* binary */                                                                                 \
  X(Add, 2, V) X(Sub, 2, V) X(Mul, 2, V) X(Div, 2, V) X(Rem, 2, V) X(Pow, 2, V)                 \
  X(Atan2, 2, V) X(Fmod, 2, V) X(And, 2, V) X(Or, 2, V) X(Xor, 2, V) X(Shl, 2, V)               \
  X(Shr, 2, V) X(Eq, 2, V) X(Ne, 2, V) X(Lt, 2, V) X(Le, 2, V) X(Gt, 2, V) X(Ge, 2, V)          \
  X(Select, 3, V)                                                                              \
  /* memory: a = element index (i64); Load b = mask; Store b = value, c = mask; d = list item */ \
  X(Load, 2, V) X(Store, 3, S)                                                                 \
  /* mutable locals: VarDecl a = initial value (or -1); VarRead/VarWrite a = the VarDecl */     \
  X(VarDecl, 1, S) X(VarRead, 1, V) X(VarWrite, 2, S)                                          \
  /* arrays: ArrayDecl imm = elements, sub = space; ArrayLoad a = decl, b = index */            \
  X(ArrayDecl, 0, S) X(ArrayLoad, 2, V) X(ArrayStore, 3, S)                                    \
  /* plane (warp/subgroup) collectives, lowered by lower_collectives() where missing */         \
  X(PlaneReduce, 1, V) X(PlaneBroadcast, 2, V) X(PlaneShuffle, 2, V) X(PlaneShuffleXor, 1, V)  \
  X(Barrier, 0, S)                                                                             \
  /* structured control flow: For a = begin, b = end, imm = step (> 0); If a = bool cond */     \
  X(For, 2, R) X(EndFor, 0, R) X(If, 1, R) X(Else, 0, R) X(EndIf, 0, R)

enum class Op : uint8_t {
#define EMBER_X(n, k, c) n,
  EMBER_KL_OPS(EMBER_X)
#undef EMBER_X
};
inline constexpr int kNumKlOps = 0
#define EMBER_X(n, k, c) +1
    EMBER_KL_OPS(EMBER_X)
#undef EMBER_X
    ;

/// Combination used by PlaneReduce (and by templates' combiners): Max/Min propagate NaN.
enum class ReduceKind : uint8_t { Sum, Prod, Max, Min, And, Or };
/// Where an ArrayDecl lives: per work item (registers/stack) or shared by a workgroup.
enum class Space : uint8_t { Local, Shared };
/// Flags of Load/Store in Inst::sub.
inline constexpr uint8_t kAtomic = 1;  // Store: relaxed atomic (error flags written by many items)

struct Inst {
  Op op = Op::Const;
  uint8_t sub = 0;  // ReduceKind, Space or memory flags
  Type type;        // result type (value ops), element type (VarDecl, ArrayDecl)
  int32_t a = -1, b = -1, c = -1, d = -1;  // operands: defining instruction indices
  int64_t imm = 0;  // Const bits, param/buffer index, lane, array size, loop step
  bool operator==(const Inst&) const = default;
};

enum class Access : uint8_t { Read, Write, ReadWrite };
/// A buffer parameter. A list buffer is an array of pointers (one per tensor of a tensor list,
/// all of `dtype`); its Load/Store name the element in operand d.
struct BufferParam {
  DType dtype = DType::F32;
  Access access = Access::Read;
  bool restrict_ = true;  // does not alias any other buffer of the kernel
  bool list = false;
  std::string name;
};
struct ScalarParam {
  DType dtype = DType::F32;
  std::string name;
};
struct IndexParam {  // always int64: an extent, a stride, an offset
  std::string name;
};

/// One kernel: its signature (the argument pack's layout, see abi.h), its body and a note of
/// what was specialised (templates fill it; informative, not part of the IR hash).
struct Kernel {
  std::string name;
  std::vector<BufferParam> buffers;
  std::vector<ScalarParam> scalars;
  std::vector<IndexParam> indices;
  std::vector<Inst> body;
  int64_t workgroup_size = 1;  // threads sharing Shared arrays and barriers (1 on the C++ target)
  std::string spec;
  std::vector<std::pair<int32_t, std::string>> value_names;  // debug names, not hashed
};

const char* op_name(Op op);
int op_operands(Op op);
bool op_defines_value(Op op);
const char* reduce_kind_name(ReduceKind k);

/// Const payloads: integers and bools as int64, floats as the bits of the double holding the
/// value already rounded to the dtype (so equal constants have equal bits).
int64_t const_bits(DType d, double v);
int64_t const_bits_int(DType d, int64_t v);
double const_as_double(DType d, int64_t bits);
int64_t const_as_int(DType d, int64_t bits);

/// Checks types, operand scopes, region nesting and parameter references; throws ValueError
/// "[kl] kernel 'name', instruction 12 (add): ..." on the first problem.
void verify(const Kernel& k);
/// Human-readable listing ("%5 = add f32x8 %3, %4"), for debugging and EMBER_FUSION_DEBUG.
std::string to_text(const Kernel& k);
std::string type_name(Type t);

}  // namespace ember::kl
