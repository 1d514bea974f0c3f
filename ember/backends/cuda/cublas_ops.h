#pragma once
// cuBLASLt's matrix products with fused epilogues (private), for the cuda backend's kernels and
// the fusion layer's planner; the same shape of interface as the cpu backend's dnnl_ops.h, with
// its Epilogue. `can_*` says whether cuBLASLt serves a call (dtypes f32/f16/bf16 alike on both
// operands, an epilogue it has, a layout it reads, a heuristic that found an algorithm); the
// matching function runs it and must only be called after `can_*` said yes. No CUDA header here.
//
// Epilogues served: scale, bias (a vector along the last dim, of the output's dtype), ReLU,
// GELU with the tanh approximation (cuBLASLt has no erf GELU), and a residual of any broadcast
// shape: y = act(scale * (a @ b) + bias + residual) (so with an activation only residual_first).
// f32 products use TF32 tensor cores only after set_allow_tf32(true).
#include <cstdint>

#include "ember/backends/backend.h"
#include "ember/backends/cpu/dnnl_ops.h"

namespace ember::cuda {

using cpu::Activation;
using cpu::Epilogue;

/// torch.matmul(a, b) with an epilogue (mm and bmm are its 2-D and 3-D cases). `out`, when
/// given, is a contiguous tensor of the result's shape and dtype overlapping no input.
bool can_matmul(const Tensor& a, const Tensor& b, const Epilogue& ep = {});
Tensor matmul(const Tensor& a, const Tensor& b, const Epilogue& ep = {}, const Tensor& out = {});
/// linear(x, w, bias) = x @ w^T + bias, then the epilogue.
bool can_linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep = {});
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep = {},
              const Tensor& out = {});

/// Counts for tests and benchmarks.
struct CublasStats {
  int64_t plans = 0;        // distinct problems planned (descriptors + heuristic query)
  int64_t plan_hits = 0;    // calls that found their plan cached
  int64_t served = 0;       // products cuBLASLt ran
  int64_t operand_copies = 0;  // operands copied because cuBLASLt could not read them in place
};
CublasStats cublas_stats();

}  // namespace ember::cuda
