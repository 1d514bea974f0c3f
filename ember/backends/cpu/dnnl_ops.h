#pragma once
// The cpu backend's oneDNN operations (private): matrix products and convolutions with fused
// epilogues, each one oneDNN primitive, for this backend's kernels and for the fusion layer's
// planner. `can_*` says whether oneDNN serves a call (checks of dtypes, ranks, strides and
// attributes, then the primitive cache, which remembers what oneDNN refused); the matching
// function runs it, and must only be called after `can_*` said yes. No oneDNN header here.
#include <cstdint>

#include "ember/backends/backend.h"

namespace ember::cpu {

/// Activations a oneDNN epilogue applies (as ember's ops of the same names compute them).
enum class Activation : uint8_t {
  None,
  Relu,
  LeakyRelu,  // alpha: the negative slope
  Elu,        // alpha
  GeluErf,    // gelu(x, "none")
  GeluTanh,   // gelu(x, "tanh")
  Silu,
  Sigmoid,
  Tanh,
  Mish,
  Hardswish,
  Softplus,  // beta 1 (threshold 20: equal to x up to rounding above it)
  Clamp,     // alpha <= x <= beta (hardtanh, relu6)
  Square,
  Abs,
  Exp,
};

/// What follows the product or convolution, in this order:
///   y = act(scale * (a @ b) + bias) + residual       (residual_first: act(... + residual))
/// `residual` has the output's shape, or broadcasts to it; any strides.
struct Epilogue {
  float scale = 1.f;
  Activation act = Activation::None;
  float alpha = 0.f, beta = 0.f;  // the activation's parameters
  Tensor residual;
  bool residual_first = false;
};

/// The runs take an optional `out`: an output placed by the planner (contiguous f32 of the
/// result's shape, overlapping no input), written in place and returned.
///
/// torch.matmul(a, b) with an epilogue (mm and bmm are its 2-D and 3-D cases).
bool can_matmul(const Tensor& a, const Tensor& b, const Epilogue& ep = {});
Tensor matmul(const Tensor& a, const Tensor& b, const Epilogue& ep = {}, const Tensor& out = {});
/// linear(x, w, bias) = x @ w^T + bias, then the epilogue (its bias goes where `bias` does).
bool can_linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep = {});
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep = {},
              const Tensor& out = {});
/// conv1d/2d/3d and conv_transpose1d/2d (`op`, with the op's attrs: ember/ops/conv.cpp) with an
/// epilogue; its scale must be 1. A convolution's placed `out` may also be channels-last (NHWC
/// strides, ops::channels_last): from and into that layout oneDNN needs no reorder.
bool can_conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
              const Epilogue& ep = {}, const Tensor& out = {});
Tensor conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
            const Epilogue& ep = {}, const Tensor& out = {});
/// conv, or an undefined tensor (nothing written) where can_conv says no: one call where the
/// pair would each work out the call's geometry and find its primitive (a fused queue's runs).
Tensor try_conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
                const Epilogue& ep = {}, const Tensor& out = {});

/// Products whose result has at most skinny_rows() rows (all dims but the last; default 32) run
/// flex's skinny kernels in the cpu backend's own matmul/linear kernels: measured faster than
/// oneDNN for small-batch inference (an MLP at batch 16: 0.24 ms against 0.36 ms). The can_*
/// queries and runs here still serve them. Tests of oneDNN's paths set it to 0.
bool skinny_product(const Shape& out);
int64_t skinny_rows();
void set_skinny_rows(int64_t rows);

/// True when this build has oneDNN (without it every can_* is false).
bool dnnl_available();

/// Counts for tests and benchmarks: the primitive cache, and operands copied because oneDNN
/// could not read them in place (a matrix with no unit stride).
struct DnnlStats {
  int64_t primitives_created = 0;  // oneDNN primitives (and reorders) made so far
  int64_t hits = 0, misses = 0, evictions = 0, size = 0, capacity = 0;
  int64_t operand_copies = 0;
  int64_t served = 0;  // calls oneDNN ran (the others fell back to flex's kernels)
  // A convolution's input or output copied between ember's layout and the primitive's (none
  // when both are channels-last, the layout of oneDNN's direct kernels).
  int64_t activation_reorders = 0;
};
DnnlStats dnnl_stats();
/// The cache of convolution weights reordered into oneDNN's layouts, for frozen storages (a
/// loaded ONNX model's weights: Storage::frozen).
struct WeightCacheStats {
  int64_t hits = 0, misses = 0, entries = 0, bytes = 0, budget = 0;
};
WeightCacheStats dnnl_weight_cache_stats();
/// Bytes of reordered weights the cache keeps (EMBER_DNNL_WEIGHT_CACHE_MB, default 512 MiB;
/// least recently used are dropped first); 0 turns it off.
void set_dnnl_weight_cache_bytes(int64_t bytes);
/// Entries the primitive cache keeps (least recently used are evicted first); 0 empties it.
void set_dnnl_cache_capacity(int64_t entries);
/// Threads a oneDNN call splits its work over: ember's pool size, or 1 inside a parallel region
/// (oneDNN itself runs single-threaded on each of them; 0 without oneDNN).
int dnnl_threads();

}  // namespace ember::cpu
