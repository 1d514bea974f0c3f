#pragma once
// A hand-written stand-in for one flush of generated kernels: header-free C++ with vector
// extensions, the shape the C++ renderer emits (an args struct per kernel, SSA-style temporaries,
// a vector body and a scalar tail, entry points `extern "C" void k(const void*, i64, i64)`).
// The tests compile it and check its results; the timing it gives is the "typical source" figure.
// Also a tiny one-kernel source, cheap to compile, for the tests that compile many.
#include <string>

namespace ember::test {

inline constexpr const char* kSampleKernels = R"KL(
typedef __INT64_TYPE__ i64;
typedef __INT32_TYPE__ i32;
typedef unsigned short u16;
typedef float f32x8 __attribute__((vector_size(32), aligned(4)));
typedef i32 i32x8 __attribute__((vector_size(32), aligned(4)));
struct ember_status { i32 code; i32 reserved; i64 detail; };
static inline void ember_fail(ember_status* s, i32 code, i64 detail) {
  i32 zero = 0;
  if (__atomic_compare_exchange_n(&s->code, &zero, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    s->detail = detail;
}
static inline f32x8 splat(float v) { return (f32x8){v, v, v, v, v, v, v, v}; }
static inline f32x8 vmax(f32x8 a, f32x8 b) { return a < b ? b : a; }
static inline f32x8 vmin(f32x8 a, f32x8 b) { return b < a ? b : a; }
static inline f32x8 vexp(f32x8 x) {
  f32x8 xc = vmin(vmax(x, splat(-104.0f)), splat(89.0f));
  f32x8 n = xc * splat(1.44269504088896341f);
  n = (n + splat(12582912.0f)) - splat(12582912.0f);  // round to nearest
  f32x8 r = xc - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  f32x8 p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r * r + r + splat(1.0f);
  i32x8 ni = __builtin_convertvector(n, i32x8);
  i32x8 h = ni / 2;
  f32x8 s1 = (f32x8)((h + 127) << 23);
  f32x8 s2 = (f32x8)((ni - h + 127) << 23);
  return p * s1 * s2;
}
static inline float sexp(float x) {
  f32x8 v = vexp(splat(x));
  return v[0];
}
static inline f32x8 vtanh(f32x8 x) {
  f32x8 e = vexp(splat(-2.0f) * vmin(vmax(x, splat(-15.0f)), splat(15.0f)));
  return (splat(1.0f) - e) / (splat(1.0f) + e);
}
static inline f32x8 load8(const float* p) { return *(const f32x8*)p; }
static inline void store8(float* p, f32x8 v) { *(f32x8*)p = v; }
static inline float hsum(f32x8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
static inline float hmax(f32x8 v) {
  float m = v[0];
  for (int i = 1; i < 8; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// k0: y = relu(x * 2 + 1) * x
struct k0_args { const float* x; float* y; };
extern "C" void k0_pointwise(const void* a_, i64 begin, i64 end) {
  const k0_args* a = (const k0_args*)a_;
  i64 i = begin;
  for (; i + 8 <= end; i += 8) {
    f32x8 v0 = load8(a->x + i);
    f32x8 v1 = v0 * splat(2.0f);
    f32x8 v2 = v1 + splat(1.0f);
    f32x8 v3 = v2 < splat(0.0f) ? splat(0.0f) : v2;
    f32x8 v4 = v3 * v0;
    store8(a->y + i, v4);
  }
  for (; i < end; ++i) {
    float v0 = a->x[i];
    float v2 = v0 * 2.0f + 1.0f;
    float v3 = v2 < 0.0f ? 0.0f : v2;
    a->y[i] = v3 * v0;
  }
}

// k1: y = gelu_tanh(x + b[col]) over rows of `cols`
struct k1_args { const float* x; const float* b; float* y; i64 cols; };
extern "C" void k1_bias_gelu(const void* a_, i64 begin, i64 end) {
  const k1_args* a = (const k1_args*)a_;
  for (i64 r = begin; r < end; ++r) {
    const float* xr = a->x + r * a->cols;
    float* yr = a->y + r * a->cols;
    i64 c = 0;
    for (; c + 8 <= a->cols; c += 8) {
      f32x8 v0 = load8(xr + c) + load8(a->b + c);
      f32x8 v1 = v0 * v0 * v0;
      f32x8 v2 = splat(0.79788456080286535588f) * (v0 + splat(0.044715f) * v1);
      f32x8 v3 = splat(0.5f) * v0 * (splat(1.0f) + vtanh(v2));
      store8(yr + c, v3);
    }
    for (; c < a->cols; ++c) {
      float v0 = xr[c] + a->b[c];
      f32x8 t = vtanh(splat(0.79788456080286535588f * (v0 + 0.044715f * v0 * v0 * v0)));
      yr[c] = 0.5f * v0 * (1.0f + t[0]);
    }
  }
}

// k2: softmax(scale * x + mask) per row
struct k2_args { const float* x; const float* mask; float* y; i64 cols; float scale; };
extern "C" void k2_softmax(const void* a_, i64 begin, i64 end) {
  const k2_args* a = (const k2_args*)a_;
  for (i64 r = begin; r < end; ++r) {
    const float* xr = a->x + r * a->cols;
    float* yr = a->y + r * a->cols;
    f32x8 m8 = splat(-__builtin_inff());
    i64 c = 0;
    for (; c + 8 <= a->cols; c += 8)
      m8 = vmax(m8, load8(xr + c) * splat(a->scale) + load8(a->mask + c));
    float m = hmax(m8);
    for (; c < a->cols; ++c) {
      float v = xr[c] * a->scale + a->mask[c];
      m = v > m ? v : m;
    }
    f32x8 s8 = splat(0.0f);
    for (c = 0; c + 8 <= a->cols; c += 8) {
      f32x8 e = vexp(load8(xr + c) * splat(a->scale) + load8(a->mask + c) - splat(m));
      store8(yr + c, e);
      s8 += e;
    }
    float s = hsum(s8);
    for (; c < a->cols; ++c) {
      float e = sexp(xr[c] * a->scale + a->mask[c] - m);
      yr[c] = e;
      s += e;
    }
    float inv = 1.0f / s;
    for (c = 0; c + 8 <= a->cols; c += 8) store8(yr + c, load8(yr + c) * splat(inv));
    for (; c < a->cols; ++c) yr[c] *= inv;
  }
}

// k3: residual add + layer norm per row
struct k3_args { const float* x; const float* res; const float* w; const float* b; float* y;
                 float* sum_out; i64 cols; float eps; };
extern "C" void k3_add_layer_norm(const void* a_, i64 begin, i64 end) {
  const k3_args* a = (const k3_args*)a_;
  for (i64 r = begin; r < end; ++r) {
    const float* xr = a->x + r * a->cols;
    const float* rr = a->res + r * a->cols;
    float* sr = a->sum_out + r * a->cols;
    float* yr = a->y + r * a->cols;
    f32x8 s8 = splat(0.0f), q8 = splat(0.0f);
    i64 c = 0;
    for (; c + 8 <= a->cols; c += 8) {
      f32x8 v = load8(xr + c) + load8(rr + c);
      store8(sr + c, v);
      s8 += v;
      q8 += v * v;
    }
    float s = hsum(s8), q = hsum(q8);
    for (; c < a->cols; ++c) {
      float v = xr[c] + rr[c];
      sr[c] = v;
      s += v;
      q += v * v;
    }
    float mean = s / (float)a->cols;
    float var = q / (float)a->cols - mean * mean;
    float rstd = 1.0f / __builtin_sqrtf(var + a->eps);
    for (c = 0; c + 8 <= a->cols; c += 8) {
      f32x8 v = (load8(sr + c) - splat(mean)) * splat(rstd);
      store8(yr + c, v * load8(a->w + c) + load8(a->b + c));
    }
    for (; c < a->cols; ++c) yr[c] = (sr[c] - mean) * rstd * a->w[c] + a->b[c];
  }
}

// k4: partial sums of x * x, one per range start block
struct k4_args { const float* x; float* partial; i64 block; };
extern "C" void k4_sum_squares(const void* a_, i64 begin, i64 end) {
  const k4_args* a = (const k4_args*)a_;
  for (i64 blk = begin; blk < end; ++blk) {
    const float* p = a->x + blk * a->block;
    f32x8 s0 = splat(0.0f), s1 = splat(0.0f);
    i64 i = 0;
    for (; i + 16 <= a->block; i += 16) {
      f32x8 u = load8(p + i), v = load8(p + i + 8);
      s0 += u * u;
      s1 += v * v;
    }
    float s = hsum(s0 + s1);
    for (; i < a->block; ++i) s += p[i] * p[i];
    a->partial[blk] = s;
  }
}

// k5: AdamW over a list of tensors (multi-tensor), one work item per 1024 elements
struct k5_tensor { float* p; const float* g; float* m; float* v; i64 n; };
struct k5_args { const k5_tensor* t; const i64* item_tensor; const i64* item_offset;
                 float lr, beta1, beta2, eps, wd, bc1, bc2; };
extern "C" void k5_adamw(const void* a_, i64 begin, i64 end) {
  const k5_args* a = (const k5_args*)a_;
  for (i64 it = begin; it < end; ++it) {
    const k5_tensor t = a->t[a->item_tensor[it]];
    i64 lo = a->item_offset[it], hi = lo + 1024 < t.n ? lo + 1024 : t.n;
    i64 i = lo;
    for (; i + 8 <= hi; i += 8) {
      f32x8 g = load8(t.g + i), p = load8(t.p + i);
      f32x8 m = splat(a->beta1) * load8(t.m + i) + splat(1.0f - a->beta1) * g;
      f32x8 v = splat(a->beta2) * load8(t.v + i) + splat(1.0f - a->beta2) * g * g;
      store8(t.m + i, m);
      store8(t.v + i, v);
      f32x8 vh = v / splat(a->bc2);
      f32x8 den;
      for (int k = 0; k < 8; ++k) den[k] = __builtin_sqrtf(vh[k]);
      p = p * splat(1.0f - a->lr * a->wd) - splat(a->lr / a->bc1) * m / (den + splat(a->eps));
      store8(t.p + i, p);
    }
    for (; i < hi; ++i) {
      float g = t.g[i];
      float m = a->beta1 * t.m[i] + (1.0f - a->beta1) * g;
      float v = a->beta2 * t.v[i] + (1.0f - a->beta2) * g * g;
      t.m[i] = m;
      t.v[i] = v;
      float den = __builtin_sqrtf(v / a->bc2) + a->eps;
      t.p[i] = t.p[i] * (1.0f - a->lr * a->wd) - a->lr / a->bc1 * m / den;
    }
  }
}

// k6: y[i] = table[idx[i]], index checked
struct k6_args { const float* table; const i64* idx; float* y; i64 rows; ember_status* status; };
extern "C" void k6_gather(const void* a_, i64 begin, i64 end) {
  const k6_args* a = (const k6_args*)a_;
  for (i64 i = begin; i < end; ++i) {
    i64 j = a->idx[i];
    if (j < 0 || j >= a->rows) {
      ember_fail(a->status, 1, j);
      a->y[i] = 0.0f;
      continue;
    }
    a->y[i] = a->table[j];
  }
}

// k7: cast f32 -> bf16 (round to nearest even)
struct k7_args { const float* x; u16* y; };
extern "C" void k7_cast_bf16(const void* a_, i64 begin, i64 end) {
  const k7_args* a = (const k7_args*)a_;
  for (i64 i = begin; i < end; ++i) {
    unsigned u = __builtin_bit_cast(unsigned, a->x[i]);
    unsigned r = ((u >> 16) & 1u) + 0x7fffu;
    a->y[i] = (u16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : (u + r) >> 16);
  }
}
)KL";

inline constexpr const char* kSampleSymbols[] = {
    "k0_pointwise",   "k1_bias_gelu", "k2_softmax", "k3_add_layer_norm",
    "k4_sum_squares", "k5_adamw",     "k6_gather",  "k7_cast_bf16"};

/// One entry point `axpb`: y[i] = x[i] * 2 + tag. Different tags give different objects.
inline std::string tiny_source(int tag) {
  return "typedef __INT64_TYPE__ i64;\n"
         "struct args { const float* x; float* y; };\n"
         "extern \"C\" void axpb(const void* p, i64 b, i64 e) {\n"
         "  const args* a = (const args*)p;\n"
         "  for (i64 i = b; i < e; ++i) a->y[i] = a->x[i] * 2.0f + " +
         std::to_string(tag) + ".0f;\n}\n";
}
struct TinyArgs {
  const float* x;
  float* y;
};

}  // namespace ember::test
