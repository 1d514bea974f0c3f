#pragma once
// Fused (flash-style) attention for the cuda backend (attention_kernel.cu), behind plain structs so
// that the nvcc-compiled file includes no ember header. f16/bf16 operands on the tensor cores
// (mma.sync m16n8k16, f32 accumulation); head sizes up to 128 (multiples of 8; 64 and 128 are the
// tuned tiles, smaller ones run zero-padded to 64).
#include <cstdint>

namespace ember::cuda {

/// One attention problem: for each (b, h) of [B, H], softmax(q k^T * scale + mask) v over L
/// queries and S keys of head size E. Strides are in elements, the last dim contiguous; every
/// stride a multiple of 8 and every base 16-byte aligned. Causal: query i sees keys j <= i.
struct AttentionArgs {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  int64_t q_sb = 0, q_sh = 0, q_sl = 0;
  int64_t k_sb = 0, k_sh = 0, k_sl = 0;
  int64_t v_sb = 0, v_sh = 0, v_sl = 0;
  /// Additive f32 mask (-inf removes a key), or null; strides over (b, h, l, s), 0 broadcasts.
  const float* mask = nullptr;
  int64_t m_sb = 0, m_sh = 0, m_sl = 0, m_ss = 0;
  int B = 0, H = 0, L = 0, S = 0, E = 0;
  float scale = 1;
  bool causal = false;
  bool bf16 = true;  // else f16
};

/// Forward: o [B, H, L, E] contiguous in q's dtype, lse [B, H, L] f32 (natural log of each row's
/// softmax denominator, which the backward reads). Returns the cudaError_t of the launch.
int launch_attention_forward(const AttentionArgs& a, void* o, float* lse, void* stream);

/// Backward: from o and lse of the forward and dout (contiguous like o), dq [B, H, L, E],
/// dk and dv [B, H, S, E] (contiguous, q's dtype). `scratch` holds B*H*L*(E padded + 1) f32
/// (attention_backward_scratch bytes): dq's f32 sums and the rows' dot(dout, o).
struct AttentionGrads {
  const void* o = nullptr;
  const float* lse = nullptr;
  const void* dout = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  float* scratch = nullptr;
};
size_t attention_backward_scratch(const AttentionArgs& a);
int launch_attention_backward(const AttentionArgs& a, const AttentionGrads& g, void* stream);

}  // namespace ember::cuda
