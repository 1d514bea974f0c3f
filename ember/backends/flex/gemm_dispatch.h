#pragma once
// What the GEMM-based kernels (matmul family, convolution) share (private to flex): the dtype
// dispatch for the types gemm() computes natively, and the f16/bf16 route through f32.
#include <string>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"

namespace ember::flex {

/// Runs f(T{}) for the dtypes gemm() computes natively; others throw DTypeError naming `op`.
template <class F>
void dispatch_gemm(DType dt, const char* op, const F& f) {
  switch (dt) {  // the built ones (loops.h's EMBER_FLEX_DTYPES)
#if EMBER_FLEX_HAS_(8)
    case DType::F32: f(float{}); break;
#endif
#if EMBER_FLEX_HAS_(9)
    case DType::F64: f(double{}); break;
#endif
#if EMBER_FLEX_HAS_(1)
    case DType::U8: f(uint8_t{}); break;
#endif
#if EMBER_FLEX_HAS_(2)
    case DType::I8: f(int8_t{}); break;
#endif
#if EMBER_FLEX_HAS_(3)
    case DType::I16: f(int16_t{}); break;
#endif
#if EMBER_FLEX_HAS_(4)
    case DType::I32: f(int32_t{}); break;
#endif
#if EMBER_FLEX_HAS_(5)
    case DType::I64: f(int64_t{}); break;
#endif
    default: throw_unsupported_dtype(op, dt);
  }
}

inline bool is_half(DType d) { return d == DType::F16 || d == DType::BF16; }

/// Runs the call again with f16/bf16 inputs cast to f32 and casts the result back.
TensorList via_f32(const OpCall& c);

}  // namespace ember::flex
