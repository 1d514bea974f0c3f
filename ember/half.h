#pragma once
// 16-bit floating point storage types. Arithmetic goes through float (f16/bf16 compute in f32).
#include <cstdint>
#include <cstring>

namespace ember {

namespace detail {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (ax < 0x38800000u) {                                   // subnormal or zero in f16
    // add a magic number so the FPU does the round-to-nearest-even shift for us
    float v = bits_f32(ax) + 0.5f;
    return uint16_t(sign | (f32_bits(v) - 0x3f000000u));
  }
  uint32_t mant_odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (ax >> 13));
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    float v = float(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}
inline float bf16_to_f32(uint16_t b) { return bits_f32(uint32_t(b) << 16); }
}  // namespace detail

/// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(detail::f32_to_f16(f)) {}  // NOLINT: implicit like a built-in float
  operator float() const { return detail::f16_to_f32(bits); }
  static Half from_bits(uint16_t b) { Half h; h.bits = b; return h; }
};

/// bfloat16: the top half of an f32.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(detail::f32_to_bf16(f)) {}  // NOLINT
  operator float() const { return detail::bf16_to_f32(bits); }
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
};

}  // namespace ember
