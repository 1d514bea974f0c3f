#pragma once
// Stable LSD radix sort of one lane by order-preserving unsigned keys (private to sort.cpp).
// Long lanes sort in a few linear passes instead of n log n comparisons, and because each pass is
// stable, equal values keep their original order — exactly the order sort promises.
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/backends/flex/loops.h"

namespace ember::flex {

template <class T> struct RadixKey { using type = std::make_unsigned_t<T>; };
template <> struct RadixKey<bool> { using type = uint8_t; };
template <> struct RadixKey<Half> { using type = uint16_t; };
template <> struct RadixKey<BFloat16> { using type = uint16_t; };
template <> struct RadixKey<float> { using type = uint32_t; };
template <> struct RadixKey<double> { using type = uint64_t; };

/// A key whose unsigned order is the value order, with every NaN last and -0.0 equal to 0.0.
template <class T> typename RadixKey<T>::type radix_key(T v) {
  using U = typename RadixKey<T>::type;
  constexpr U kSign = U(U(1) << (sizeof(U) * 8 - 1));
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    return U(v);
  } else if constexpr (std::is_integral_v<T>) {
    return U(U(v) ^ kSign);
  } else {
    const compute_t<T> c = compute_t<T>(v);
    if (c != c) return U(~U(0));
    if (c == compute_t<T>(0)) return kSign;  // +0 and -0 share +0's key
    U bits;
    static_assert(sizeof(T) == sizeof(U));
    std::memcpy(&bits, &v, sizeof(U));
    return (bits & kSign) ? U(~bits) : U(bits | kSign);
  }
}

/// Scratch buffers one thread reuses across lanes.
template <class U> struct RadixScratch {
  std::vector<U> keys, keys2;
  std::vector<uint32_t> idx, idx2;
};

/// Positions 0..n-1 of the lane at p (n elements, `stride` apart) in stable sorted order, left
/// in s.idx. Descending sorts by the complemented key, which keeps ties in their original order
/// and puts NaN first. Requires n < 2^32.
template <class T>
void radix_sort_lane(const T* p, int64_t n, int64_t stride, bool descending,
                     RadixScratch<typename RadixKey<T>::type>& s) {
  using U = typename RadixKey<T>::type;
  const size_t m = size_t(n);
  s.keys.resize(m);
  s.keys2.resize(m);
  s.idx.resize(m);
  s.idx2.resize(m);
  for (size_t i = 0; i < m; ++i) {
    const U k = radix_key(p[int64_t(i) * stride]);
    s.keys[i] = descending ? U(~k) : k;
    s.idx[i] = uint32_t(i);
  }
  for (unsigned shift = 0; shift < sizeof(U) * 8; shift += 8) {
    size_t count[256] = {};
    for (size_t i = 0; i < m; ++i) ++count[(s.keys[i] >> shift) & 0xff];
    bool one_bucket = false;
    for (size_t c : count) one_bucket |= c == m;
    if (one_bucket) continue;  // every key shares this digit: the pass would move nothing
    size_t offset[256];
    size_t total = 0;
    for (int d = 0; d < 256; ++d) {
      offset[d] = total;
      total += count[d];
    }
    for (size_t i = 0; i < m; ++i) {
      const size_t at = offset[(s.keys[i] >> shift) & 0xff]++;
      s.keys2[at] = s.keys[i];
      s.idx2[at] = s.idx[i];
    }
    s.keys.swap(s.keys2);
    s.idx.swap(s.idx2);
  }
}

}  // namespace ember::flex
