// Fused attention (attention_kernel.h), FlashAttention-2's scheme on mma.sync tensor cores.
// Forward: a block owns Br queries (each warp kM tiles of 16, so a K or V fragment read from
// shared memory feeds kM products) and walks the key blocks (64 keys) with an online softmax, K
// and V double-buffered in shared memory by cp.async; P never leaves the registers (its
// accumulator layout is the next product's A operand). It writes O and the rows' log-sum-exp.
// Backward: a block owns 16 keys a warp and walks the query blocks (64 queries), recomputing P
// from the saved log-sum-exp; dK and dV stay in registers, dQ is summed into f32 scratch with
// vector atomics and rounded by a last small kernel. Shared tiles are swizzled (16-byte chunk c
// of row r at c ^ (r & 7)) so ldmatrix reads them without bank conflicts. Tiles: head size 64
// forward 4 warps x 2 tiles (Br 128), backward 8 warps (128 keys); head size 128 4 warps each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/backends/cuda/attention_kernel.h"

namespace ember::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kBc = 64;  // keys per forward step; keys per backward block

template <bool kBf16>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <bool kBf16>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  if constexpr (kBf16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

template <bool kBf16>
__device__ __forceinline__ float2 unpack(uint32_t u) {
  if constexpr (kBf16) return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&u));
  else return __half22float2(*reinterpret_cast<__half2*>(&u));
}

__device__ __forceinline__ void ldsm(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_t(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Byte offset of element (r, c) of a swizzled tile with W columns (W >= 64).
template <int W>
__device__ __forceinline__ uint32_t swz(int r, int c) {
  return uint32_t(r * W + ((((c >> 3) ^ (r & 7)) << 3) | (c & 7))) * 2;
}

// Rows [0, rows) of a tile of R rows from `g` (row stride `ld`); columns past E and rows past
// `valid` are zero-filled (their source is `base`, never read).
template <int W, int R, int NT>
__device__ __forceinline__ void load_tile(uint32_t dst, const uint16_t* g, int64_t ld, int valid,
                                          int E, const uint16_t* base) {
  constexpr int CH = W / 8;
  for (int i = threadIdx.x; i < R * CH; i += NT) {
    const int r = i / CH, c = i % CH;
    const bool ok = r < valid && c * 8 < E;
    cp_async16(dst + swz<W>(r, c * 8), ok ? g + r * ld + c * 8 : base, ok);
  }
}

// A fragments (16 x 16) of rows r0.. of a swizzled tile at columns c0.. (row-major operand).
template <int W>
__device__ __forceinline__ void frag_a(uint32_t (&r)[4], uint32_t tile, int r0, int c0,
                                       int lane) {
  ldsm(r, tile + swz<W>(r0 + (lane & 15), c0 + (lane >> 4) * 8));
}
// B fragments of two n8 tiles (rows n0.. of a [n][k] tile, columns k0..): r[0..1] for rows
// n0..n0+7, r[2..3] for n0+8..n0+15.
template <int W>
__device__ __forceinline__ void frag_b(uint32_t (&r)[4], uint32_t tile, int n0, int k0,
                                       int lane) {
  ldsm(r, tile + swz<W>(n0 + (lane & 7) + ((lane >> 4) << 3), k0 + ((lane >> 3) & 1) * 8));
}
// B fragments of a [k][n] tile (rows k0..k0+15, columns n0..): r[0..1] for columns n0..n0+7,
// r[2..3] for n0+8..n0+15.
template <int W>
__device__ __forceinline__ void frag_bt(uint32_t (&r)[4], uint32_t tile, int k0, int n0,
                                        int lane) {
  ldsm_t(r, tile + swz<W>(k0 + (lane & 7) + ((lane >> 3) & 1) * 8, n0 + (lane >> 4) * 8));
}

template <bool kBf16>
__device__ __forceinline__ void as_a(uint32_t (&pa)[4], const float (&x0)[4],
                                     const float (&x1)[4]) {
  pa[0] = pack<kBf16>(x0[0], x0[1]);
  pa[1] = pack<kBf16>(x0[2], x0[3]);
  pa[2] = pack<kBf16>(x1[0], x1[1]);
  pa[3] = pack<kBf16>(x1[2], x1[3]);
}

__device__ __forceinline__ float mask_at(const AttentionArgs& a, int b, int h, int i, int j) {
  return a.mask[b * a.m_sb + h * a.m_sh + int64_t(i) * a.m_sl + int64_t(j) * a.m_ss];
}

// 2^x on the special-function unit (-inf gives 0; the rounding is far under bf16's).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Each warp owns kM tiles of 16 queries, so every K and V fragment read from shared memory
// feeds kM products.
template <int D, int kWarps, int kM, bool kBf16>
__global__ void __launch_bounds__(kWarps * 32)
    attention_forward(const AttentionArgs a, uint16_t* __restrict__ o, float* __restrict__ lse) {
  constexpr int Br = 16 * kM * kWarps, NT = kWarps * 32;
  extern __shared__ __align__(128) uint16_t smem[];
  const uint32_t sq = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t sk = sq + Br * D * 2, sv = sk + 2 * kBc * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int mb = gridDim.x - 1 - blockIdx.x;  // the longest (causal) blocks first
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
  const int q0 = mb * Br, w0 = q0 + warp * 16 * kM;  // w0: this warp's first query
  const auto* Q = static_cast<const uint16_t*>(a.q) + b * a.q_sb + h * a.q_sh;
  const auto* K = static_cast<const uint16_t*>(a.k) + b * a.k_sb + h * a.k_sh;
  const auto* V = static_cast<const uint16_t*>(a.v) + b * a.v_sb + h * a.v_sh;
  const int n_end = a.causal ? min(a.S, q0 + Br) : a.S;
  const int nblocks = (n_end + kBc - 1) / kBc;

  load_tile<D, Br, NT>(sq, Q + int64_t(q0) * a.q_sl, a.q_sl, a.L - q0, a.E, Q);
  auto load_kv = [&](int n, int buf) {
    const int k0 = n * kBc;
    load_tile<D, kBc, NT>(sk + buf * kBc * D * 2, K + int64_t(k0) * a.k_sl, a.k_sl, a.S - k0, a.E, K);
    load_tile<D, kBc, NT>(sv + buf * kBc * D * 2, V + int64_t(k0) * a.v_sl, a.v_sl, a.S - k0, a.E, V);
  };
  if (nblocks > 0) load_kv(0, 0);
  cp_commit();

  uint32_t qf[kM][D / 16][4];
  float acc[kM][D / 8][4];
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i) acc[mi][i][0] = acc[mi][i][1] = acc[mi][i][2] = acc[mi][i][3] = 0;
    m[mi][0] = m[mi][1] = -INFINITY;
    l[mi][0] = l[mi][1] = 0;
  }
  const float sc = a.scale * kLog2e;

  for (int n = 0; n < nblocks; ++n) {
    if (n + 1 < nblocks) {
      load_kv(n + 1, (n + 1) & 1);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    if (n == 0) {
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
          frag_a<D>(qf[mi][kk], sq, warp * 16 * kM + mi * 16, kk * 16, lane);
    }
    const uint32_t kb = sk + (n & 1) * kBc * D * 2, vb = sv + (n & 1) * kBc * D * 2;
    float s[kM][kBc / 8][4];
#pragma unroll
    for (int mi = 0; mi < kM; ++mi)
#pragma unroll
      for (int i = 0; i < kBc / 8; ++i) s[mi][i][0] = s[mi][i][1] = s[mi][i][2] = s[mi][i][3] = 0;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kBc / 16; ++np) {
        uint32_t r[4];
        frag_b<D>(r, kb, np * 16, kk * 16, lane);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma<kBf16>(s[mi][2 * np], qf[mi][kk], r[0], r[1]);
          mma<kBf16>(s[mi][2 * np + 1], qf[mi][kk], r[2], r[3]);
        }
      }
    }
    const int k0 = n * kBc;
    const bool edge = k0 + kBc > a.S || (a.causal && k0 + kBc - 1 > w0);
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      const int row0 = w0 + mi * 16 + (lane >> 2);
      if (a.mask || edge) {
#pragma unroll
        for (int nt = 0; nt < kBc / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int j = k0 + nt * 8 + 2 * (lane & 3) + (e & 1), i = row0 + (e >> 1) * 8;
            float x = s[mi][nt][e] * sc;
            if (a.mask && i < a.L && j < a.S) x += mask_at(a, b, h, i, j) * kLog2e;
            if (j >= a.S || (a.causal && j > i)) x = -INFINITY;
            s[mi][nt][e] = x;
          }
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < kBc / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mi][nt][e] *= sc;
      }
      float mx[2] = {m[mi][0], m[mi][1]};
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt) {
        mx[0] = fmaxf(mx[0], fmaxf(s[mi][nt][0], s[mi][nt][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[mi][nt][2], s[mi][nt][3]));
      }
      float mu[2], corr[2], rs[2] = {0, 0};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        mu[r] = mx[r] == -INFINITY ? 0.f : mx[r];  // a row with no key yet stays at zero
        corr[r] = ex2(m[mi][r] - mu[r]);
        m[mi][r] = mx[r];
      }
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[mi][nt][e] = ex2(s[mi][nt][e] - mu[e >> 1]);
          rs[e >> 1] += s[mi][nt][e];
        }
      }
      l[mi][0] = l[mi][0] * corr[0] + rs[0];
      l[mi][1] = l[mi][1] * corr[1] + rs[1];
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        acc[mi][dt][0] *= corr[0], acc[mi][dt][1] *= corr[0];
        acc[mi][dt][2] *= corr[1], acc[mi][dt][3] *= corr[1];
      }
    }
#pragma unroll
    for (int j = 0; j < kBc / 16; ++j) {
      uint32_t pa[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) as_a<kBf16>(pa[mi], s[mi][2 * j], s[mi][2 * j + 1]);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t r[4];
        frag_bt<D>(r, vb, j * 16, dp * 16, lane);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma<kBf16>(acc[mi][2 * dp], pa[mi], r[0], r[1]);
          mma<kBf16>(acc[mi][2 * dp + 1], pa[mi], r[2], r[3]);
        }
      }
    }
    __syncthreads();
  }

  uint16_t* O = o + int64_t(bh) * a.L * a.E;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    const int row0 = w0 + mi * 16 + (lane >> 2);
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[mi][r] += __shfl_xor_sync(0xffffffffu, l[mi][r], 1);
      l[mi][r] += __shfl_xor_sync(0xffffffffu, l[mi][r], 2);
      inv[r] = 1.f / l[mi][r];  // a row with every key masked: 0/0, NaN as in the unfused softmax
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const int col = dt * 8 + 2 * (lane & 3);
      if (col >= a.E) continue;
      if (row0 < a.L)
        *reinterpret_cast<uint32_t*>(O + int64_t(row0) * a.E + col) =
            pack<kBf16>(acc[mi][dt][0] * inv[0], acc[mi][dt][1] * inv[0]);
      if (row0 + 8 < a.L)
        *reinterpret_cast<uint32_t*>(O + int64_t(row0 + 8) * a.E + col) =
            pack<kBf16>(acc[mi][dt][2] * inv[1], acc[mi][dt][3] * inv[1]);
    }
    if ((lane & 3) == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int i = row0 + r * 8;
        const float mf = m[mi][r] == -INFINITY ? 0.f : m[mi][r];
        if (i < a.L) lse[int64_t(bh) * a.L + i] = (mf + log2f(l[mi][r])) * kLn2;
      }
    }
  }
}

// delta[row] = dot(dout[row], o[row]) over E, one warp a row.
template <bool kBf16>
__global__ void attention_delta(const uint16_t* __restrict__ o, const uint16_t* __restrict__ dout,
                                float* __restrict__ delta, int64_t rows, int E) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0;
  for (int c = lane; c < E / 8; c += 32) {
    const uint4 x = *reinterpret_cast<const uint4*>(o + row * E + c * 8);
    const uint4 y = *reinterpret_cast<const uint4*>(dout + row * E + c * 8);
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = unpack<kBf16>(xs[i]), q = unpack<kBf16>(ys[i]);
      s += p.x * q.x + p.y * q.y;
    }
  }
#pragma unroll
  for (int w = 16; w > 0; w /= 2) s += __shfl_xor_sync(0xffffffffu, s, w);
  if (lane == 0) delta[row] = s;
}

template <bool kBf16>
__global__ void attention_dq(const float* __restrict__ acc, uint16_t* __restrict__ dq, int64_t n,
                             float scale) {
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 2; i < n;
       i += int64_t(gridDim.x) * blockDim.x * 2) {
    const float2 v = *reinterpret_cast<const float2*>(acc + i);
    *reinterpret_cast<uint32_t*>(dq + i) = pack<kBf16>(v.x * scale, v.y * scale);
  }
}

// Each warp owns 16 keys (Bk = 16 * kWarps a block); for dQ the warps split the block's 64
// queries into tiles of 16 and, past 4 warps, the head dims.
template <int D, int kWarps, bool kBf16>
__global__ void __launch_bounds__(kWarps * 32)
    attention_backward(const AttentionArgs a, const AttentionGrads g, const float* __restrict__ delta,
                       float* __restrict__ dqa) {
  constexpr int Br = 64, NT = kWarps * 32, Bk = 16 * kWarps;
  extern __shared__ __align__(128) uint16_t smem[];
  const uint32_t sk = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t sv = sk + Bk * D * 2, sq = sv + Bk * D * 2, sdo = sq + 2 * Br * D * 2;
  const uint32_t sds = sdo + 2 * Br * D * 2;
  float* sl = reinterpret_cast<float*>(smem + 2 * Bk * D + 4 * Br * D + Bk * Br);  // [2][Br]
  float* sdel = sl + 2 * Br;                                                          // [2][Br]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int nb = blockIdx.x, bh = blockIdx.y, b = bh / a.H, h = bh % a.H;
  const int k0 = nb * Bk, kw0 = k0 + warp * 16;  // kw0: this warp's first key
  const auto* Q = static_cast<const uint16_t*>(a.q) + b * a.q_sb + h * a.q_sh;
  const auto* K = static_cast<const uint16_t*>(a.k) + b * a.k_sb + h * a.k_sh;
  const auto* V = static_cast<const uint16_t*>(a.v) + b * a.v_sb + h * a.v_sh;
  const auto* dO = static_cast<const uint16_t*>(g.dout) + int64_t(bh) * a.L * a.E;
  const float* lse = g.lse + int64_t(bh) * a.L;
  const float* del = delta + int64_t(bh) * a.L;
  const int m_begin = a.causal ? k0 / Br : 0, m_end = (a.L + Br - 1) / Br;

  auto load_q = [&](int m, int buf) {
    const int q0 = m * Br;
    load_tile<D, Br, NT>(sq + buf * Br * D * 2, Q + int64_t(q0) * a.q_sl, a.q_sl, a.L - q0, a.E, Q);
    load_tile<D, Br, NT>(sdo + buf * Br * D * 2, dO + int64_t(q0) * a.E, a.E, a.L - q0, a.E, dO);
    for (int i = threadIdx.x; i < Br; i += NT) {
      const int row = q0 + i;
      sl[buf * Br + i] = row < a.L ? lse[row] * kLog2e : INFINITY;
      sdel[buf * Br + i] = row < a.L ? del[row] : 0.f;
    }
  };
  load_tile<D, Bk, NT>(sk, K + int64_t(k0) * a.k_sl, a.k_sl, a.S - k0, a.E, K);
  load_tile<D, Bk, NT>(sv, V + int64_t(k0) * a.v_sl, a.v_sl, a.S - k0, a.E, V);
  if (m_begin < m_end) load_q(m_begin, 0);
  cp_commit();

  float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[i][e] = dv[i][e] = 0;
  const float sc = a.scale * kLog2e;
  const int key0 = kw0 + (lane >> 2);  // this thread's keys: key0, key0 + 8

  for (int m = m_begin; m < m_end; ++m) {
    const int buf = (m - m_begin) & 1;
    if (m + 1 < m_end) {
      load_q(m + 1, buf ^ 1);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const uint32_t qb = sq + buf * Br * D * 2, dob = sdo + buf * Br * D * 2;
    const float* lb = sl + buf * Br;
    const float* db = sdel + buf * Br;
    const int q0 = m * Br;
    // S^T and dP^T (this warp's 16 keys x Br queries).
    float s[Br / 8][4], dp[Br / 8][4];
#pragma unroll
    for (int i = 0; i < Br / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[i][e] = dp[i][e] = 0;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ka[4], va[4];
      frag_a<D>(ka, sk, warp * 16, kk * 16, lane);
      frag_a<D>(va, sv, warp * 16, kk * 16, lane);
#pragma unroll
      for (int np = 0; np < Br / 16; ++np) {
        uint32_t r[4];
        frag_b<D>(r, qb, np * 16, kk * 16, lane);
        mma<kBf16>(s[2 * np], ka, r[0], r[1]);
        mma<kBf16>(s[2 * np + 1], ka, r[2], r[3]);
        frag_b<D>(r, dob, np * 16, kk * 16, lane);
        mma<kBf16>(dp[2 * np], va, r[0], r[1]);
        mma<kBf16>(dp[2 * np + 1], va, r[2], r[3]);
      }
    }
    const bool edge = kw0 + 16 > a.S || q0 + Br > a.L || (a.causal && kw0 + 15 > q0);
#pragma unroll
    for (int nt = 0; nt < Br / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = nt * 8 + 2 * (lane & 3) + (e & 1);
        const int i = q0 + c, j = key0 + (e >> 1) * 8;
        float x = s[nt][e] * sc;
        if (a.mask && i < a.L && j < a.S) x += mask_at(a, b, h, i, j) * kLog2e;
        float p = ex2(x - lb[c]);
        if (edge && (j >= a.S || i >= a.L || (a.causal && j > i))) p = 0;
        s[nt][e] = p;
      }
    }
    // dV += P^T dO.
#pragma unroll
    for (int j = 0; j < Br / 16; ++j) {
      uint32_t pa[4];
      as_a<kBf16>(pa, s[2 * j], s[2 * j + 1]);
#pragma unroll
      for (int dd = 0; dd < D / 16; ++dd) {
        uint32_t r[4];
        frag_bt<D>(r, dob, j * 16, dd * 16, lane);
        mma<kBf16>(dv[2 * dd], pa, r[0], r[1]);
        mma<kBf16>(dv[2 * dd + 1], pa, r[2], r[3]);
      }
    }
    // dS^T = P^T (dP^T - delta), then dK += dS^T Q; dS^T also goes to shared memory for dQ.
#pragma unroll
    for (int nt = 0; nt < Br / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] *= dp[nt][e] - db[nt * 8 + 2 * (lane & 3) + (e & 1)];
    }
#pragma unroll
    for (int j = 0; j < Br / 16; ++j) {
      uint32_t pa[4];
      as_a<kBf16>(pa, s[2 * j], s[2 * j + 1]);
      const int r = warp * 16 + (lane >> 2), c = j * 16 + 2 * (lane & 3);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<Br>(r, c)), "r"(pa[0]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<Br>(r + 8, c)), "r"(pa[1]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<Br>(r, c + 8)), "r"(pa[2]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<Br>(r + 8, c + 8)), "r"(pa[3]));
#pragma unroll
      for (int dd = 0; dd < D / 16; ++dd) {
        uint32_t rr[4];
        frag_bt<D>(rr, qb, j * 16, dd * 16, lane);
        mma<kBf16>(dk[2 * dd], pa, rr[0], rr[1]);
        mma<kBf16>(dk[2 * dd + 1], pa, rr[2], rr[3]);
      }
    }
    __syncthreads();
    // dQ (this warp's 16 queries) += dS K, summed into the f32 scratch.
    constexpr int kSplit = kWarps / 4, kDd = D / 16 / kSplit;
    const int qt = warp % 4, dd0 = (warp / 4) * kDd;
    uint32_t qa[Bk / 16][4];
#pragma unroll
    for (int kk = 0; kk < Bk / 16; ++kk)
      ldsm_t(qa[kk], sds + swz<Br>(kk * 16 + (lane & 7) + ((lane >> 4) << 3),
                                   qt * 16 + ((lane >> 3) & 1) * 8));
    const int qrow = q0 + qt * 16 + (lane >> 2);
#pragma unroll
    for (int di = 0; di < kDd; ++di) {
      const int dd = dd0 + di;
      float c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
      for (int kk = 0; kk < Bk / 16; ++kk) {
        uint32_t r[4];
        frag_bt<D>(r, sk, kk * 16, dd * 16, lane);
        mma<kBf16>(c[0], qa[kk], r[0], r[1]);
        mma<kBf16>(c[1], qa[kk], r[2], r[3]);
      }
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int col = dd * 16 + hf * 8 + 2 * (lane & 3);
        if (col >= a.E) continue;
        float* base = dqa + (int64_t(bh) * a.L + qrow) * a.E + col;
        if (qrow < a.L) atomicAdd(reinterpret_cast<float2*>(base), make_float2(c[hf][0], c[hf][1]));
        if (qrow + 8 < a.L)
          atomicAdd(reinterpret_cast<float2*>(base + 8 * a.E), make_float2(c[hf][2], c[hf][3]));
      }
    }
    __syncthreads();
  }

  auto* dK = static_cast<uint16_t*>(g.dk) + int64_t(bh) * a.S * a.E;
  auto* dV = static_cast<uint16_t*>(g.dv) + int64_t(bh) * a.S * a.E;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int col = dt * 8 + 2 * (lane & 3);
    if (col >= a.E) continue;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = key0 + r * 8;
      if (j >= a.S) continue;
      *reinterpret_cast<uint32_t*>(dK + int64_t(j) * a.E + col) =
          pack<kBf16>(dk[dt][2 * r] * a.scale, dk[dt][2 * r + 1] * a.scale);
      *reinterpret_cast<uint32_t*>(dV + int64_t(j) * a.E + col) =
          pack<kBf16>(dv[dt][2 * r], dv[dt][2 * r + 1]);
    }
  }
}

template <int D, int kWarps, int kM, bool kBf16>
int forward(const AttentionArgs& a, void* o, float* lse, cudaStream_t st) {
  constexpr int Br = 16 * kM * kWarps;
  const size_t bytes = size_t(Br * D + 4 * kBc * D) * 2;
  auto* k = attention_forward<D, kWarps, kM, kBf16>;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (e != cudaSuccess) return e;
  const dim3 grid((a.L + Br - 1) / Br, a.B * a.H);
  k<<<grid, kWarps * 32, bytes, st>>>(a, static_cast<uint16_t*>(o), lse);
  return cudaGetLastError();
}

template <int D, int kWarps, bool kBf16>
int backward(const AttentionArgs& a, const AttentionGrads& g, cudaStream_t st) {
  constexpr int Br = 64, Bk = 16 * kWarps;
  const int64_t rows = int64_t(a.B) * a.H * a.L;
  float* dqa = g.scratch;
  float* delta = g.scratch + rows * a.E;
  cudaError_t e = cudaMemsetAsync(dqa, 0, size_t(rows) * a.E * sizeof(float), st);
  if (e != cudaSuccess) return e;
  const int wpb = 8;
  attention_delta<kBf16><<<unsigned((rows + wpb - 1) / wpb), wpb * 32, 0, st>>>(
      static_cast<const uint16_t*>(g.o), static_cast<const uint16_t*>(g.dout), delta, rows, a.E);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  const size_t bytes = size_t(2 * Bk * D + 4 * Br * D + Bk * Br) * 2 + 4 * Br * sizeof(float);
  auto* k = attention_backward<D, kWarps, kBf16>;
  if ((e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes))) !=
      cudaSuccess)
    return e;
  const dim3 grid((a.S + Bk - 1) / Bk, a.B * a.H);
  k<<<grid, kWarps * 32, bytes, st>>>(a, g, delta, dqa);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  const int64_t n = rows * a.E;
  const unsigned blocks = unsigned(std::min<int64_t>((n / 2 + 255) / 256, 132 * 16));
  attention_dq<kBf16><<<blocks, 256, 0, st>>>(dqa, static_cast<uint16_t*>(g.dq), n, a.scale);
  return cudaGetLastError();
}

}  // namespace

int launch_attention_forward(const AttentionArgs& a, void* o, float* lse, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (a.E <= 64)
    return a.bf16 ? forward<64, 4, 2, true>(a, o, lse, st) : forward<64, 4, 2, false>(a, o, lse, st);
  return a.bf16 ? forward<128, 4, 1, true>(a, o, lse, st) : forward<128, 4, 1, false>(a, o, lse, st);
}

size_t attention_backward_scratch(const AttentionArgs& a) {
  return size_t(a.B) * a.H * a.L * (a.E + 1) * sizeof(float);
}

int launch_attention_backward(const AttentionArgs& a, const AttentionGrads& g, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (a.E <= 64) return a.bf16 ? backward<64, 8, true>(a, g, st) : backward<64, 8, false>(a, g, st);
  return a.bf16 ? backward<128, 4, true>(a, g, st) : backward<128, 4, false>(a, g, st);
}

}  // namespace ember::cuda
