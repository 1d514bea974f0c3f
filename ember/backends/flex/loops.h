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

// Dtype dispatch: runs the body with `T` bound to the C++ type of `dt`. The _FLOAT, _INT and
// _NUMERIC forms cover subsets; other dtypes throw DTypeError naming `op`.
#define EMBER_CASE_(E, Ty, ...) \
  case ::ember::DType::E: {     \
    using T = Ty;               \
    __VA_ARGS__;                \
    break;                      \
  }
#define EMBER_DEFAULT_(op, dt)                                                              \
  default:                                                                                  \
    ::ember::detail::throw_dtype(op, std::string("not supported for dtype ") +              \
                                         std::string(::ember::dtype_name(dt)));
#define EMBER_DISPATCH_FLOAT(dt, op, ...)                                          \
  switch (dt) {                                                                    \
    EMBER_CASE_(F32, float, __VA_ARGS__) EMBER_CASE_(F64, double, __VA_ARGS__)     \
    EMBER_CASE_(F16, ::ember::Half, __VA_ARGS__)                                   \
    EMBER_CASE_(BF16, ::ember::BFloat16, __VA_ARGS__)                              \
    EMBER_DEFAULT_(op, dt)                                                         \
  }
#define EMBER_DISPATCH_INT(dt, op, ...)                                                       \
  switch (dt) {                                                                               \
    EMBER_CASE_(U8, uint8_t, __VA_ARGS__) EMBER_CASE_(I8, int8_t, __VA_ARGS__)                \
    EMBER_CASE_(I16, int16_t, __VA_ARGS__) EMBER_CASE_(I32, int32_t, __VA_ARGS__)             \
    EMBER_CASE_(I64, int64_t, __VA_ARGS__)                                                    \
    EMBER_DEFAULT_(op, dt)                                                                    \
  }
#define EMBER_DISPATCH_NUMERIC(dt, op, ...)                                                   \
  switch (dt) {                                                                               \
    EMBER_CASE_(U8, uint8_t, __VA_ARGS__) EMBER_CASE_(I8, int8_t, __VA_ARGS__)                \
    EMBER_CASE_(I16, int16_t, __VA_ARGS__) EMBER_CASE_(I32, int32_t, __VA_ARGS__)             \
    EMBER_CASE_(I64, int64_t, __VA_ARGS__) EMBER_CASE_(F32, float, __VA_ARGS__)               \
    EMBER_CASE_(F64, double, __VA_ARGS__) EMBER_CASE_(F16, ::ember::Half, __VA_ARGS__)        \
    EMBER_CASE_(BF16, ::ember::BFloat16, __VA_ARGS__)                                         \
    EMBER_DEFAULT_(op, dt)                                                                    \
  }
#define EMBER_DISPATCH_ALL(dt, op, ...)                                                       \
  switch (dt) {                                                                               \
    EMBER_CASE_(Bool, bool, __VA_ARGS__)                                                      \
    EMBER_CASE_(U8, uint8_t, __VA_ARGS__) EMBER_CASE_(I8, int8_t, __VA_ARGS__)                \
    EMBER_CASE_(I16, int16_t, __VA_ARGS__) EMBER_CASE_(I32, int32_t, __VA_ARGS__)             \
    EMBER_CASE_(I64, int64_t, __VA_ARGS__) EMBER_CASE_(F32, float, __VA_ARGS__)               \
    EMBER_CASE_(F64, double, __VA_ARGS__) EMBER_CASE_(F16, ::ember::Half, __VA_ARGS__)        \
    EMBER_CASE_(BF16, ::ember::BFloat16, __VA_ARGS__)                                         \
    EMBER_DEFAULT_(op, dt)                                                                    \
  }
#define EMBER_DISPATCH_INT_BOOL(dt, op, ...)                                                  \
  switch (dt) {                                                                               \
    EMBER_CASE_(Bool, bool, __VA_ARGS__)                                                      \
    EMBER_CASE_(U8, uint8_t, __VA_ARGS__) EMBER_CASE_(I8, int8_t, __VA_ARGS__)                \
    EMBER_CASE_(I16, int16_t, __VA_ARGS__) EMBER_CASE_(I32, int32_t, __VA_ARGS__)             \
    EMBER_CASE_(I64, int64_t, __VA_ARGS__)                                                    \
    EMBER_DEFAULT_(op, dt)                                                                    \
  }
