// flex kernels of linear_int8 and linear_int4: products that read the quantized weight itself.
// A few input rows (decoding) take a GEMV split over the output channels that dequantizes in
// registers, so a step reads one (int8) or half a (int4) byte per weight instead of four. More
// rows run the blocked GEMM with a PackedSource that dequantizes each weight panel as the GEMM
// packs it: no float copy of the weight exists at any time. f16/bf16 inputs compute in f32.
#include <algorithm>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define EMBER_QUANT_X86 1
#endif

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/gemm.h"
#include "ember/backends/flex/gemm_kernel.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

// Below this many input rows the GEMV path wins: the GEMM's packing pays off over more rows.
constexpr int64_t kGemvRows = 8;
// Independent accumulators of the inner loops: one vector register of floats at AVX-512 width.
constexpr int kLanes = 16;

template <class T> const T* cptr(const Tensor& t) {
  return static_cast<const T*>(static_cast<const void*>(t.impl()->data()));
}

// One product: y[m, n] = x[m, k] @ dequant(w)[n, k]^T + bias[n]. Every array is contiguous.
struct Problem {
  const float* x;
  int64_t m, k, n;
  const void* q;        // int8: i8 [n, k]; int4: u8 [n, k / 2]
  const float* scale;   // int8: [n]; int4: [n, k / group]
  const uint8_t* zero;  // int4: [n, k / group]
  int64_t group;        // int4
  const float* bias;    // [n] or null
  float* y;
};

// Output channels per task: enough weight bytes (~64 KiB) that a task outweighs its dispatch.
int64_t channel_grain(int64_t k, double bytes_per_weight) {
  return std::max<int64_t>(1, int64_t(65536.0 / std::max(1.0, double(k) * bytes_per_weight)));
}

// Sums of kLanes independent lanes, written as plain loops over a lane index that the compiler
// vectorizes (GCC 12 turns __builtin_convertvector from bytes to floats into scalar code).
float lane_sum(const float* v) {
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// Output channels an int4 GEMV task computes together: each input vector loaded serves both.
constexpr int64_t kInt4Channels = 2;

void gemv_int8(const Problem& p) {
  parallel_for(p.n, channel_grain(p.k, 1.0), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int8_t* q = static_cast<const int8_t*>(p.q) + o * p.k;
      for (int64_t r = 0; r < p.m; ++r) {
        const float* x = p.x + r * p.k;
        float acc[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= p.k; i += kLanes)
          for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * float(q[i + l]);
        float s = lane_sum(acc);
        for (; i < p.k; ++i) s += x[i] * float(q[i]);
        p.y[r * p.n + o] = s * p.scale[o] + (p.bias ? p.bias[o] : 0.f);
      }
    }
  });
}

// int4 input rows prepared once per product: x split into its even and odd columns, so that the
// low and high nibbles of a byte meet contiguous inputs (xe[r, j] = x[r, 2j], xo[r, j] =
// x[r, 2j + 1]), and each group's sum of x, taken once:
// sum (v - zero) * scale * x = scale * (sum v * x) - scale * zero * sum x.
struct Int4Rows {
  const float *xe, *xo, *xsum;
};

// The weight, scale and zero-point rows of C output channels from `ob`, of which `nc` exist:
// the missing ones repeat the last (computed, never written).
template <int64_t C> struct Int4Block {
  const uint8_t* q[C];
  const float* sc[C];
  const uint8_t* zp[C];
  Int4Block(const Problem& p, int64_t ob, int64_t nc) {
    const int64_t ng = p.k / p.group;
    for (int64_t c = 0; c < C; ++c) {
      const int64_t o = ob + std::min(c, nc - 1);
      q[c] = static_cast<const uint8_t*>(p.q) + o * (p.k / 2);
      sc[c] = p.scale + o * ng;
      zp[c] = p.zero + o * ng;
    }
  }
};

#ifdef EMBER_QUANT_X86
// Output channels the AVX2 kernel computes together, each loaded input vector serving all.
constexpr int64_t kInt4Avx2Channels = 4;
static_assert(4 % kInt4Avx2Channels == 0);

// Channels [o0, o1) of the int4 GEMV with AVX2: eight bytes of a row widen to eight 32-bit lanes
// at once (one shuffle for sixteen weights), whose low and high nibbles meet the even and odd
// inputs. Needs a group of a multiple of 16 weights (32 and 128 are the usual ones).
__attribute__((target("avx2,fma"))) void gemv_int4_avx2(const Problem& p, const Int4Rows& x,
                                                        int64_t o0, int64_t o1) {
  constexpr int64_t C = kInt4Avx2Channels;
  const int64_t half = p.k / 2, hg = p.group / 2, ng = p.k / p.group;
  const __m256i low = _mm256_set1_epi32(15);
  for (int64_t ob = o0; ob < o1; ob += C) {
    const int64_t nc = std::min(C, o1 - ob);
    const Int4Block<C> blk(p, ob, nc);
    const auto& q = blk.q;
    const auto& sc = blk.sc;
    const auto& zp = blk.zp;
    for (int64_t r = 0; r < p.m; ++r) {
      const float *e = x.xe + r * half, *od = x.xo + r * half, *xs = x.xsum + r * ng;
      __m256 acc[C];
      float tail[C] = {};
      for (int64_t c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
      for (int64_t g = 0; g < ng; ++g) {
        __m256 pe[C], po[C];
        for (int64_t c = 0; c < C; ++c) pe[c] = po[c] = _mm256_setzero_ps();
        for (int64_t j = g * hg; j < (g + 1) * hg; j += 8) {
          const __m256 ve = _mm256_loadu_ps(e + j), vo = _mm256_loadu_ps(od + j);
          for (int64_t c = 0; c < C; ++c) {
            const __m256i b = _mm256_cvtepu8_epi32(
                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q[c] + j)));
            pe[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b, low)), ve, pe[c]);
            po[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4)), vo, po[c]);
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          acc[c] = _mm256_fmadd_ps(_mm256_add_ps(pe[c], po[c]), _mm256_set1_ps(sc[c][g]), acc[c]);
          tail[c] -= sc[c][g] * float(zp[c][g]) * xs[g];
        }
      }
      for (int64_t c = 0; c < nc; ++c) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[c]), _mm256_extractf128_ps(acc[c], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        p.y[r * p.n + ob + c] = _mm_cvtss_f32(h) + tail[c] + (p.bias ? p.bias[ob + c] : 0.f);
      }
    }
  }
}
#endif

// Whether the AVX2 kernel serves `p`: the CPU runs it (and the GEMM's instruction set, which
// tests lower to reach the portable loops, allows it), and its groups fit.
bool int4_avx2(const Problem& p) {
#ifdef EMBER_QUANT_X86
  return gemm_isa() != GemmIsa::Baseline && (p.group / 2) % 8 == 0;
#else
  return false;
#endif
}

// Channels [o0, o1) of the int4 GEMV in portable loops (any even group).
void gemv_int4_portable(const Problem& p, const Int4Rows& x, int64_t o0, int64_t o1) {
  const int64_t half = p.k / 2, hg = p.group / 2, ng = p.k / p.group;
  const bool vector_groups = hg % kLanes == 0;
  for (int64_t ob = o0; ob < o1; ob += kInt4Channels) {
    const int64_t nc = std::min(kInt4Channels, o1 - ob);
    const Int4Block<kInt4Channels> blk(p, ob, nc);
    const auto& q = blk.q;
    const auto& sc = blk.sc;
    const auto& zp = blk.zp;
    for (int64_t r = 0; r < p.m; ++r) {
      const float *e = x.xe + r * half, *od = x.xo + r * half, *xs = x.xsum + r * ng;
      float acc[kInt4Channels][kLanes] = {};
      float tail[kInt4Channels] = {};
      for (int64_t g = 0; g < ng; ++g) {
        const int64_t j0 = g * hg, j1 = j0 + hg;
        for (int64_t c = 0; c < kInt4Channels; ++c) tail[c] -= sc[c][g] * float(zp[c][g]) * xs[g];
        if (vector_groups) {
          float part[kInt4Channels][kLanes] = {};
          for (int64_t j = j0; j < j1; j += kLanes)
            for (int64_t c = 0; c < kInt4Channels; ++c)
              for (int l = 0; l < kLanes; ++l) {
                const uint8_t v = q[c][j + l];
                part[c][l] += e[j + l] * float(v & 15) + od[j + l] * float(v >> 4);
              }
          for (int64_t c = 0; c < kInt4Channels; ++c)
            for (int l = 0; l < kLanes; ++l) acc[c][l] += part[c][l] * sc[c][g];
        } else {
          for (int64_t c = 0; c < kInt4Channels; ++c) {
            float s = 0.f;
            for (int64_t j = j0; j < j1; ++j)
              s += e[j] * float(q[c][j] & 15) + od[j] * float(q[c][j] >> 4);
            tail[c] += s * sc[c][g];
          }
        }
      }
      for (int64_t c = 0; c < nc; ++c)
        p.y[r * p.n + ob + c] = lane_sum(acc[c]) + tail[c] + (p.bias ? p.bias[ob + c] : 0.f);
    }
  }
}

void gemv_int4(const Problem& p) {
  const int64_t half = p.k / 2, ng = p.k / p.group;
  std::vector<float> split(size_t(2 * p.m * half + p.m * ng));
  float *xe = split.data(), *xo = xe + p.m * half, *xsum = xo + p.m * half;
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t j = 0; j < half; ++j) {
      xe[r * half + j] = p.x[r * p.k + 2 * j];
      xo[r * half + j] = p.x[r * p.k + 2 * j + 1];
    }
    for (int64_t g = 0; g < ng; ++g) {
      float s = 0.f;
      for (int64_t i = g * p.group; i < (g + 1) * p.group; ++i) s += p.x[r * p.k + i];
      xsum[r * ng + g] = s;
    }
  }
  const Int4Rows x{xe, xo, xsum};
  [[maybe_unused]] const bool avx2 = int4_avx2(p);
  // Blocks of channels (a multiple of either kernel's), split like int8's: half the bytes per
  // weight would halve the work per task and the threads' share of a small projection.
  constexpr int64_t block = 4;
  static_assert(block % kInt4Channels == 0);
  const int64_t grain = std::max<int64_t>(1, channel_grain(p.k, 1.0) / block);
  parallel_for((p.n + block - 1) / block, grain, [&](int64_t b0, int64_t b1) {
    const int64_t o0 = b0 * block, o1 = std::min(p.n, b1 * block);
#ifdef EMBER_QUANT_X86
    if (avx2) return gemv_int4_avx2(p, x, o0, o1);
#endif
    gemv_int4_portable(p, x, o0, o1);
  });
}

// The GEMM's B = dequant(w)^T [k, n], written a panel at a time: dst[(i - i0) * ld + (j - j0)]
// for depth rows i in [i0, i0 + kc) and columns (output channels) j in [j0, j0 + nr).
void pack_int8(const void* ctx, int64_t i0, int64_t kc, int64_t j0, int64_t nr, float* dst,
               int64_t ld) {
  const Problem& p = *static_cast<const Problem*>(ctx);
  for (int64_t j = 0; j < nr; ++j) {
    const int8_t* q = static_cast<const int8_t*>(p.q) + (j0 + j) * p.k + i0;
    const float s = p.scale[j0 + j];
    for (int64_t i = 0; i < kc; ++i) dst[i * ld + j] = float(q[i]) * s;
  }
}

void pack_int4(const void* ctx, int64_t i0, int64_t kc, int64_t j0, int64_t nr, float* dst,
               int64_t ld) {
  const Problem& p = *static_cast<const Problem*>(ctx);
  const int64_t ng = p.k / p.group;
  // A group at a time (its scale and zero point loaded once), a byte's two values at a time
  // where the panel holds both: a division and a branch per weight cost more than the GEMM.
  for (int64_t j = 0; j < nr; ++j) {
    const uint8_t* q = static_cast<const uint8_t*>(p.q) + (j0 + j) * (p.k / 2);
    const float* sc = p.scale + (j0 + j) * ng;
    const uint8_t* zp = p.zero + (j0 + j) * ng;
    float* out = dst + j;  // out[(i - i0) * ld] is depth row i's value
    for (int64_t i = i0; i < i0 + kc;) {
      const int64_t g = i / p.group, end = std::min(i0 + kc, (g + 1) * p.group);
      const float s = sc[g], z = float(zp[g]);
      if (i & 1) {
        out[(i - i0) * ld] = (float(q[i / 2] >> 4) - z) * s;
        ++i;
      }
      for (; i + 1 < end; i += 2) {
        const uint8_t v = q[i / 2];
        out[(i - i0) * ld] = (float(v & 15) - z) * s;
        out[(i + 1 - i0) * ld] = (float(v >> 4) - z) * s;
      }
      if (i < end) {
        out[(i - i0) * ld] = (float(q[i / 2] & 15) - z) * s;
        ++i;
      }
    }
  }
}

void gemm_quant(const Problem& p, bool int4) {
  if (p.bias)
    for (int64_t r = 0; r < p.m; ++r) std::copy(p.bias, p.bias + p.n, p.y + r * p.n);
  const PackedSource<float> src{int4 ? pack_int4 : pack_int8, &p};
  gemm<float>(p.m, p.n, p.k, MatRef<float>{p.x, p.k, 1}, src, p.y, p.n, p.bias != nullptr);
}

Tensor as_f32(const Tensor& t) {
  return t.defined() ? (t.dtype() == DType::F32 ? t : cast(t, DType::F32)).contiguous() : t;
}

// linear_int8 {x, values, scale, bias} and linear_int4 {x, values, scale, zero, bias}; the
// inference checked dtypes and shapes.
TensorList k_linear_quant(const OpCall& c) {
  const bool int4 = c.op == OpId::linear_int4;
  const Tensor& x0 = c.inputs[0];
  const Tensor& bias0 = c.inputs[int4 ? 4 : 3];
  if (x0.dtype() != DType::F32) {  // f16/bf16: the same product on f32 copies of x and bias
    std::vector<Tensor> in(c.inputs.begin(), c.inputs.end());
    in[0] = cast(x0, DType::F32);
    if (bias0.defined()) in.back() = cast(bias0, DType::F32);
    Tensor r = dispatch1(c.op, c.attrs, std::span<const Tensor>(in));
    Tensor out = new_output(c);
    out.copy_(r);
    return {out};
  }
  Tensor out = new_output(c);
  const Tensor& qt = c.inputs[1];
  const int64_t n = qt.size(0), k = int4 ? 2 * qt.size(1) : qt.size(1);
  if (out.numel() == 0) return {out};
  const Tensor x = x0.contiguous(), q = qt.contiguous(), scale = as_f32(c.inputs[2]);
  const Tensor zero = int4 ? c.inputs[3].contiguous() : Tensor(), bias = as_f32(bias0);
  Problem p{cptr<float>(x), out.numel() / n, k, n, q.impl()->data(), cptr<float>(scale),
            int4 ? cptr<uint8_t>(zero) : nullptr, int4 ? c.attrs.i[0] : 0,
            bias.defined() ? cptr<float>(bias) : nullptr,
            static_cast<float*>(static_cast<void*>(out.impl()->data()))};
  if (p.m < kGemvRows || k == 0)
    int4 ? gemv_int4(p) : gemv_int8(p);
  else
    gemm_quant(p, int4);
  return {out};
}

}  // namespace

void register_flex_quant(BackendImpl& b) {
  const DTypeMask inputs = mask_of(DType::F32) | mask_of(DType::F16) | mask_of(DType::BF16);
  b.set_kernel(OpId::linear_int8, k_linear_quant, inputs);
  b.set_kernel(OpId::linear_int4, k_linear_quant, inputs);
}

}  // namespace ember::flex
