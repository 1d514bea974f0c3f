#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
// generator, so element i of a random op is a pure function of (seed, op offset, i) and results
// do not depend on threads or chunking. Shared by every backend.
#include <array>
#include <cstdint>

namespace ember::detail {

inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(M0) * ctr[0], p1 = uint64_t(M1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1],
           uint32_t(p0)};
    key[0] += W0;
    key[1] += W1;
  }
  return ctr;
}

/// Four random words for element `i` of the op drawn at `offset` under `seed`.
inline std::array<uint32_t, 4> philox_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox4x32({uint32_t(i), uint32_t(i >> 32), uint32_t(offset), uint32_t(offset >> 32)},
                    {uint32_t(seed), uint32_t(seed >> 32)});
}
/// Uniform [0, 1) from 24 (float) or 53 (double) random bits.
inline float u01f(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double u01d(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 32) | b) >> 11) * (1.0 / 9007199254740992.0);
}

/// The (seed, offset) a random op on `d` should use; advances that device's generator.
struct PhiloxState {
  uint64_t seed, offset;
};

}  // namespace ember::detail
