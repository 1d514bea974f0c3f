#pragma once
// The flex backend's loop engine: N-ary strided iteration with broadcasting, dim coalescing and
// parallel chunks, plus dtype-dispatch helpers. Only the innermost loop is a template, which keeps
// instantiations (and compile time) small.
#include <array>
#include <cstdint>
#include <span>

#include "ember/backends/backend.h"
#include "ember/error.h"

namespace ember::flex {

inline constexpr int kMaxOperands = 5;

/// Innermost loop: ptrs[i] points at operand i's first element, strides[i] is its byte stride.
using InnerLoop = void (*)(char** ptrs, const int64_t* strides, int64_t n, const void* ctx);

/// Sizes or byte strides over at most kMaxDims dims, held inline: a plan is made for every
/// elementwise call, so building one must not allocate or clear kilobytes (tiny ops).
struct PlanDims {
  int64_t v[kMaxDims];
  size_t n = 0;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  int64_t& operator[](size_t i) { return v[i]; }
  int64_t operator[](size_t i) const { return v[i]; }
  int64_t& back() { return v[n - 1]; }
  void push_back(int64_t x) { v[n++] = x; }
};

/// Geometry of one elementwise launch: operand 0 is the output.
struct Plan {
  int nops = 0;
  PlanDims shape;                                // coalesced iteration shape
  std::array<PlanDims, kMaxOperands> strides;    // bytes, per operand, per dim
  std::array<char*, kMaxOperands> base{};
  int64_t numel = 0;
};

/// Builds a plan writing `out` from `ins`, broadcasting each input to out's shape.
Plan make_plan(const Tensor& out, std::span<const Tensor> ins);
/// Runs `loop` over the plan, splitting across threads above `grain` elements.
void run_plan(const Plan& p, InnerLoop loop, const void* ctx, int64_t grain = 32768);

/// Output `i` of a call: the tensor the caller placed (OpCall::out), else fresh contiguous
/// storage of the inferred shape and dtype.
Tensor new_output(const OpCall& c, int i = 0);

/// Compute type: f16/bf16 compute in float, everything else in itself.
template <class T> struct compute { using type = T; };
template <> struct compute<Half> { using type = float; };
template <> struct compute<BFloat16> { using type = float; };
template <class T> using compute_t = typename compute<T>::type;

}  // namespace ember::flex

// The dtypes flex's kernels are compiled for, as a DTypeMask: all ten unless the build asks for
// fewer (cmake/wasm.cmake passes EMBER_FLEX_DTYPES for the WebAssembly build, where every
// kernel instantiated for ten dtypes is what makes the module big). A kernel called with a dtype
// left out throws DTypeError naming the op, the dtype and the dtypes built; casts still convert
// between a built dtype and any other, so tensors of every dtype can be made, loaded and cast.
#ifndef EMBER_FLEX_DTYPES
#define EMBER_FLEX_DTYPES 0x3ff
#endif
#define EMBER_FLEX_HAS_(bit) ((EMBER_FLEX_DTYPES >> (bit)) & 1)

namespace ember::flex {
inline constexpr DTypeMask kBuiltDTypes = EMBER_FLEX_DTYPES;
inline constexpr bool is_built(DType d) { return (kBuiltDTypes & mask_of(d)) != 0; }
/// Throws DTypeError: "[op] not supported for dtype f64", plus, for a dtype this build left
/// out, the dtypes it has.
[[noreturn]] void throw_unsupported_dtype(const char* op, DType dt);
}  // namespace ember::flex

// Dtype dispatch: runs the body with `T` bound to the C++ type of `dt`. The _FLOAT, _INT and
// _NUMERIC forms cover subsets; other dtypes throw DTypeError naming `op`. Each form covers only
// the built dtypes (EMBER_FLEX_DTYPES); EMBER_DISPATCH_EVERY covers all ten whatever was built
// (the other side of a cast).
#define EMBER_CASE_(E, Ty, ...) \
  case ::ember::DType::E: {     \
    using T = Ty;               \
    __VA_ARGS__;                \
    break;                      \
  }
#define EMBER_DEFAULT_(op, dt) \
  default:                     \
    ::ember::flex::throw_unsupported_dtype(op, dt);
// One EMBER_C<dtype>_ per dtype: its case when built, nothing when not.
#if EMBER_FLEX_HAS_(0)
#define EMBER_CBool_(...) EMBER_CASE_(Bool, bool, __VA_ARGS__)
#else
#define EMBER_CBool_(...)
#endif
#if EMBER_FLEX_HAS_(1)
#define EMBER_CU8_(...) EMBER_CASE_(U8, uint8_t, __VA_ARGS__)
#else
#define EMBER_CU8_(...)
#endif
#if EMBER_FLEX_HAS_(2)
#define EMBER_CI8_(...) EMBER_CASE_(I8, int8_t, __VA_ARGS__)
#else
#define EMBER_CI8_(...)
#endif
#if EMBER_FLEX_HAS_(3)
#define EMBER_CI16_(...) EMBER_CASE_(I16, int16_t, __VA_ARGS__)
#else
#define EMBER_CI16_(...)
#endif
#if EMBER_FLEX_HAS_(4)
#define EMBER_CI32_(...) EMBER_CASE_(I32, int32_t, __VA_ARGS__)
#else
#define EMBER_CI32_(...)
#endif
#if EMBER_FLEX_HAS_(5)
#define EMBER_CI64_(...) EMBER_CASE_(I64, int64_t, __VA_ARGS__)
#else
#define EMBER_CI64_(...)
#endif
#if EMBER_FLEX_HAS_(6)
#define EMBER_CF16_(...) EMBER_CASE_(F16, ::ember::Half, __VA_ARGS__)
#else
#define EMBER_CF16_(...)
#endif
#if EMBER_FLEX_HAS_(7)
#define EMBER_CBF16_(...) EMBER_CASE_(BF16, ::ember::BFloat16, __VA_ARGS__)
#else
#define EMBER_CBF16_(...)
#endif
#if EMBER_FLEX_HAS_(8)
#define EMBER_CF32_(...) EMBER_CASE_(F32, float, __VA_ARGS__)
#else
#define EMBER_CF32_(...)
#endif
#if EMBER_FLEX_HAS_(9)
#define EMBER_CF64_(...) EMBER_CASE_(F64, double, __VA_ARGS__)
#else
#define EMBER_CF64_(...)
#endif
#define EMBER_FLOAT_CASES_(...)                                                  \
  EMBER_CF32_(__VA_ARGS__) EMBER_CF64_(__VA_ARGS__) EMBER_CF16_(__VA_ARGS__) \
  EMBER_CBF16_(__VA_ARGS__)
#define EMBER_INT_CASES_(...)                                                    \
  EMBER_CU8_(__VA_ARGS__) EMBER_CI8_(__VA_ARGS__) EMBER_CI16_(__VA_ARGS__)       \
  EMBER_CI32_(__VA_ARGS__) EMBER_CI64_(__VA_ARGS__)
#define EMBER_DISPATCH_FLOAT(dt, op, ...)                          \
  switch (dt) { EMBER_FLOAT_CASES_(__VA_ARGS__) EMBER_DEFAULT_(op, dt) }
#define EMBER_DISPATCH_INT(dt, op, ...)                            \
  switch (dt) { EMBER_INT_CASES_(__VA_ARGS__) EMBER_DEFAULT_(op, dt) }
#define EMBER_DISPATCH_NUMERIC(dt, op, ...)                                              \
  switch (dt) {                                                                          \
    EMBER_INT_CASES_(__VA_ARGS__) EMBER_FLOAT_CASES_(__VA_ARGS__) EMBER_DEFAULT_(op, dt) \
  }
#define EMBER_DISPATCH_ALL(dt, op, ...)                                      \
  switch (dt) {                                                              \
    EMBER_CBool_(__VA_ARGS__) EMBER_INT_CASES_(__VA_ARGS__)                  \
    EMBER_FLOAT_CASES_(__VA_ARGS__) EMBER_DEFAULT_(op, dt)                   \
  }
#define EMBER_DISPATCH_INT_BOOL(dt, op, ...)                                          \
  switch (dt) { EMBER_CBool_(__VA_ARGS__) EMBER_INT_CASES_(__VA_ARGS__) EMBER_DEFAULT_(op, dt) }
#define EMBER_DISPATCH_EVERY(dt, op, ...)                                                     \
  switch (dt) {                                                                               \
    EMBER_CASE_(Bool, bool, __VA_ARGS__)                                                      \
    EMBER_CASE_(U8, uint8_t, __VA_ARGS__) EMBER_CASE_(I8, int8_t, __VA_ARGS__)                \
    EMBER_CASE_(I16, int16_t, __VA_ARGS__) EMBER_CASE_(I32, int32_t, __VA_ARGS__)             \
    EMBER_CASE_(I64, int64_t, __VA_ARGS__) EMBER_CASE_(F32, float, __VA_ARGS__)               \
    EMBER_CASE_(F64, double, __VA_ARGS__) EMBER_CASE_(F16, ::ember::Half, __VA_ARGS__)        \
    EMBER_CASE_(BF16, ::ember::BFloat16, __VA_ARGS__)                                         \
    EMBER_DEFAULT_(op, dt)                                                                    \
  }
