#pragma once
// The kernel builder: Expr is a traced value; C++ operators and the kl:: maths overloads append
// IR to the Builder that is current on this thread. So the generic functions of kl/scalar.h
// (`template <class T> T gelu(T)`) build IR when instantiated with T = Expr.
//
// Rules (checked at compile time where C++ can, at trace time otherwise):
// - Expr has no conversion to bool: `if (x < y)` on a device value does not compile. Device
//   control flow is kl::select, kl::if_ and kl::for_range; plain C++ control flow runs while
//   tracing (loops unroll, ifs pick what gets traced).
// - `T(0.5)` is a weakly typed literal: it takes the dtype of the other operand. Mixing an Expr
//   with a bare number (`x * 0.5`) does not compile; write `x * T(0.5)` or kl::lit(x, 0.5).
// - Operands of one op must have the same dtype (cast explicitly); a scalar next to a vector is
//   broadcast to the vector's lanes.
#include <functional>
#include <string>
#include <type_traits>

#include "ember/kl/ir.h"
#include "ember/kl/scalar.h"

namespace ember::kl {

class Builder;

class Expr {
 public:
  /// No value: an absent optional operand (clamp without a minimum).
  Expr() = default;
  /// A weakly typed literal.
  template <class N>
    requires std::is_arithmetic_v<N>
  explicit Expr(N v) {
    if constexpr (std::is_integral_v<N>) {
      lit_ = Lit::Int;
      i_ = int64_t(v);
      f_ = double(v);
    } else {
      lit_ = Lit::Float;
      f_ = double(v);
    }
  }
  Expr(Builder* b, int32_t id, Type t) : b_(b), id_(id), type_(t) {}

  bool valid() const { return id_ >= 0 || lit_ != Lit::None; }
  /// A literal that has no dtype yet.
  bool weak() const { return id_ < 0 && lit_ != Lit::None; }
  bool weak_int() const { return lit_ == Lit::Int && id_ < 0; }
  double literal() const { return f_; }
  int64_t literal_int() const { return lit_ == Lit::Int ? i_ : int64_t(f_); }
  /// Type of a traced value (throws for a weak literal or no value).
  Type type() const;
  DType dtype() const { return type().dtype; }
  int lanes() const { return weak() ? 1 : type().lanes; }
  int32_t id() const { return id_; }
  Builder* builder() const { return b_; }

 private:
  enum class Lit : uint8_t { None, Int, Float };
  Builder* b_ = nullptr;
  int32_t id_ = -1;
  Type type_{};
  Lit lit_ = Lit::None;
  double f_ = 0;
  int64_t i_ = 0;
};

/// A mutable local (loop-carried values): declared in the region where it is created.
class Var {
 public:
  Var() = default;
  Var(Builder* b, int32_t decl, Type t) : b_(b), decl_(decl), type_(t) {}
  Expr get() const;
  void set(const Expr& v) const;
  operator Expr() const { return get(); }  // NOLINT: reads like a value
  Type type() const { return type_; }

 private:
  Builder* b_ = nullptr;
  int32_t decl_ = -1;
  Type type_{};
};

/// A local or shared array of scalars.
class Array {
 public:
  Array() = default;
  Array(Builder* b, int32_t decl, Type t) : b_(b), decl_(decl), type_(t) {}
  Expr load(const Expr& index, int lanes = 1) const;
  void store(const Expr& index, const Expr& value) const;

 private:
  Builder* b_ = nullptr;
  int32_t decl_ = -1;
  Type type_{};
};

/// Builds one kernel; while alive it is the current builder of its thread (nestable).
class Builder {
 public:
  explicit Builder(std::string name);
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;
  static Builder& current();

  // --- signature (the argument pack's order: buffers, scalars, index params) ---
  int buffer(DType dtype, Access access, std::string name = {}, bool restrict_ = true,
             bool list = false);
  Expr scalar(DType dtype, std::string name = {});
  Expr index(std::string name = {});
  void set_workgroup_size(int64_t n) { k_.workgroup_size = n; }
  void set_spec(std::string spec) { k_.spec = std::move(spec); }
  int num_buffers() const { return int(k_.buffers.size()); }
  const BufferParam& buffer_param(int i) const { return k_.buffers[size_t(i)]; }

  /// The work-item range [begin, end) this invocation covers.
  Expr work_begin();
  Expr work_end();

  // --- memory: `index` in elements; lanes > 1 reads/writes consecutive elements ---
  Expr load(int buf, const Expr& index, int lanes = 1, const Expr& mask = {}, const Expr& item = {});
  void store(int buf, const Expr& index, const Expr& value, const Expr& mask = {},
             const Expr& item = {}, bool atomic = false);
  /// A variable initialised with `init` (a traced value: its type is the variable's).
  Var var(const Expr& init);
  /// A variable of type t, initialised with `init` (a literal is fine) or zero.
  Var var(Type t, const Expr& init = {});
  Array array(Type elem, int64_t size, Space space = Space::Local);

  Expr constant(Type t, double v);
  Expr constant_int(Type t, int64_t v);
  void name(const Expr& v, std::string name);

  /// Verifies, drops dead values and returns the kernel; the builder is spent afterwards.
  Kernel finish();

  // --- used by the free functions below ---
  Expr emit(Inst in);
  const Inst& inst(int32_t id) const { return k_.body[size_t(id)]; }
  /// Emits a For/If/Else and opens its region (a For's induction variable lives inside).
  Expr emit_region(Inst in);
  void close_region();
  /// The Const instruction behind `e`, or nullptr.
  const Inst* as_const(const Expr& e) const;
  /// `e` as a traced value: a weak literal becomes a constant of type `t`.
  Expr typed(const Expr& e, Type t);
  Expr constant_bits(Type t, int64_t bits);

 private:
  Kernel k_;
  Builder* prev_ = nullptr;
  std::vector<int32_t> region_stack_;      // the region id each open region has
  std::vector<int32_t> region_of_;         // region id of each instruction
  std::vector<int32_t> region_parent_;
  std::vector<int32_t> consts_;  // Const instructions, for reuse while visible
  bool done_ = false;
  void check_scope(int32_t id, const char* what) const;
  bool visible(int32_t id) const;
};

// --- operators: arithmetic wraps on integers; see ir.h for the defined edge cases ---
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator%(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator^(const Expr& a, const Expr& b);
Expr operator~(const Expr& a);
Expr operator<<(const Expr& a, const Expr& b);
Expr operator>>(const Expr& a, const Expr& b);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
/// Element-wise logical operations on bool values (both sides are always evaluated).
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);
Expr operator!(const Expr& a);

// Bare numbers next to an Expr do not compile: write T(0.5) (weakly typed) instead.
#define EMBER_KL_NO_BARE(op)                                                              \
  template <class N> requires std::is_arithmetic_v<N> Expr operator op(const Expr&, N) = delete; \
  template <class N> requires std::is_arithmetic_v<N> Expr operator op(N, const Expr&) = delete;
EMBER_KL_NO_BARE(+) EMBER_KL_NO_BARE(-) EMBER_KL_NO_BARE(*) EMBER_KL_NO_BARE(/)
EMBER_KL_NO_BARE(%) EMBER_KL_NO_BARE(&) EMBER_KL_NO_BARE(|) EMBER_KL_NO_BARE(^)
EMBER_KL_NO_BARE(<<) EMBER_KL_NO_BARE(>>) EMBER_KL_NO_BARE(==) EMBER_KL_NO_BARE(!=)
EMBER_KL_NO_BARE(<) EMBER_KL_NO_BARE(<=) EMBER_KL_NO_BARE(>) EMBER_KL_NO_BARE(>=)
EMBER_KL_NO_BARE(&&) EMBER_KL_NO_BARE(||)
#undef EMBER_KL_NO_BARE

// --- maths (the kl:: overload set of scalar.h, for Expr) ---
#define EMBER_KL_EXPR_FN1(name) Expr name(const Expr& x);
EMBER_KL_EXPR_FN1(exp) EMBER_KL_EXPR_FN1(exp2) EMBER_KL_EXPR_FN1(expm1) EMBER_KL_EXPR_FN1(log)
EMBER_KL_EXPR_FN1(log2) EMBER_KL_EXPR_FN1(log10) EMBER_KL_EXPR_FN1(log1p) EMBER_KL_EXPR_FN1(sqrt)
EMBER_KL_EXPR_FN1(sin) EMBER_KL_EXPR_FN1(cos) EMBER_KL_EXPR_FN1(tan) EMBER_KL_EXPR_FN1(asin)
EMBER_KL_EXPR_FN1(acos) EMBER_KL_EXPR_FN1(atan) EMBER_KL_EXPR_FN1(sinh) EMBER_KL_EXPR_FN1(cosh)
EMBER_KL_EXPR_FN1(tanh) EMBER_KL_EXPR_FN1(asinh) EMBER_KL_EXPR_FN1(acosh) EMBER_KL_EXPR_FN1(atanh)
EMBER_KL_EXPR_FN1(erf) EMBER_KL_EXPR_FN1(floor) EMBER_KL_EXPR_FN1(ceil) EMBER_KL_EXPR_FN1(trunc)
EMBER_KL_EXPR_FN1(round_even) EMBER_KL_EXPR_FN1(fabs) EMBER_KL_EXPR_FN1(isnan)
EMBER_KL_EXPR_FN1(isinf)
#undef EMBER_KL_EXPR_FN1
Expr atan2(const Expr& a, const Expr& b);
Expr pow(const Expr& a, const Expr& b);
Expr fmod(const Expr& a, const Expr& b);
/// |a| with the sign of b (through the bits, so it also fixes the sign of zeros and NaNs).
Expr copysign(const Expr& a, const Expr& b);
/// cond ? a : b per lane (cond: bool, scalar or with the lanes of a and b).
Expr select(const Expr& cond, const Expr& a, const Expr& b);
/// A constant with the dtype and lanes of `like` (a typed literal: select(c, lit(x, 1), lit(x, 0))).
Expr lit(const Expr& like, double v);

// --- conversions and vectors ---
Expr cast(const Expr& x, DType to);
Expr bitcast(const Expr& x, DType to);
Expr broadcast(const Expr& x, int lanes);
Expr extract(const Expr& x, int lane);
/// x, with no FP contraction or reassociation across this point (see ir.h).
Expr fence(const Expr& x);
/// [0, 1, ..., lanes-1] of `dtype`.
Expr iota(DType dtype, int lanes);

// --- device control flow ---
/// for (i = begin; i < end; i += step) body(i); i is int64.
void for_range(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body,
               int64_t step = 1);
/// if (cond) then_(); else else_(); on a scalar bool. A constant condition traces one side.
void if_(const Expr& cond, const std::function<void()>& then_,
         const std::function<void()>& else_ = {});

// --- plane (warp/subgroup) collectives; the C++ target has a plane of one lane ---
Expr plane_reduce(const Expr& x, ReduceKind kind);
Expr plane_broadcast(const Expr& x, const Expr& lane);
Expr plane_shuffle(const Expr& x, const Expr& src_lane);
Expr plane_shuffle_xor(const Expr& x, int64_t mask);
Expr lane_id();
Expr local_id();
Expr plane_size();
void barrier();

// scalar.h's NaN/infinity for Expr: weak literals that take the other operand's dtype.
template <> struct num_traits<Expr> {
  static constexpr bool has_nan = true;  // decided per dtype while tracing (isnan(int) folds)
  static Expr nan() { return Expr(__builtin_nan("")); }
  static Expr inf() { return Expr(__builtin_inf()); }
};

}  // namespace ember::kl
