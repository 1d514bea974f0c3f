#pragma once
// A fast 64-bit non-cryptographic hash (MurmurHash64A's mixing) for cache keys, file names and
// checksums that catch truncated or overwritten files. Not for anything an attacker controls the
// collisions of. Internal.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ember::detail {

inline uint64_t hash64(const void* data, size_t n, uint64_t seed = 0) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (n * m);
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (n > 0) {
    uint64_t k = 0;
    std::memcpy(&k, p, n);
    h ^= k;
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

inline uint64_t hash64(std::string_view s, uint64_t seed = 0) {
  return hash64(s.data(), s.size(), seed);
}

/// Sixteen lowercase hex digits.
inline std::string hex64(uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[size_t(i)] = digits[v & 15];
  return s;
}

/// A 128-bit digest of `s` as 32 hex digits (two seeds), for names that must not collide.
inline std::string hex128(std::string_view s) {
  return hex64(hash64(s, 0x9e3779b97f4a7c15ull)) + hex64(hash64(s, 0x2545f4914f6cdd1dull));
}

}  // namespace ember::detail
