#pragma once
// What the GEMM-based kernels (matmul family, convolution) share (private to flex): the dtype
// dispatch for the types gemm() computes natively, and the f16/bf16 route through f32.
#include <string>

#include "ember/backends/flex/flex.h"
#include "ember/error.h"

namespace ember::flex {

/// Runs f(T{}) for the dtypes gemm() computes natively; others throw DTypeError naming `op`.
template <class F>
void dispatch_gemm(DType dt, const char* op, const F& f) {
  switch (dt) {
    case DType::F32: f(float{}); break;
    case DType::F64: f(double{}); break;
    case DType::U8: f(uint8_t{}); break;
    case DType::I8: f(int8_t{}); break;
    case DType::I16: f(int16_t{}); break;
    case DType::I32: f(int32_t{}); break;
    case DType::I64: f(int64_t{}); break;
    default:
      ember::detail::throw_dtype(op, "not supported for dtype " + std::string(dtype_name(dt)));
  }
}

inline bool is_half(DType d) { return d == DType::F16 || d == DType::BF16; }

/// Runs the call again with f16/bf16 inputs cast to f32 and casts the result back.
TensorList via_f32(const OpCall& c);

}  // namespace ember::flex
