#pragma once
// Morphology's border modes (private): Attrs::mode of erode and dilate, and where an index
// outside [0, n) reads from, shared by the front end (parsing) and the flex kernel.
#include <cstdint>

namespace ember::vision::detail {

enum class MorphBorder : uint8_t { Constant, Replicate, Reflect, Reflect101, Wrap };

/// The source index that index `i` of an axis of size `n` reads, or -1 for the constant.
inline int64_t border_index(int64_t i, int64_t n, MorphBorder b) {
  if (i >= 0 && i < n) return i;
  switch (b) {
    case MorphBorder::Constant:
      return -1;
    case MorphBorder::Replicate:
      return i < 0 ? 0 : n - 1;
    case MorphBorder::Wrap:
      return ((i % n) + n) % n;
    case MorphBorder::Reflect:
    case MorphBorder::Reflect101: {
      if (n == 1) return 0;
      const int64_t d = b == MorphBorder::Reflect ? 0 : 1;  // reflect_101 skips the edge pixel
      const int64_t period = 2 * n - 2 * d;
      int64_t m = ((i % period) + period) % period;
      if (m >= n) m = period - m - (1 - d);
      return m;
    }
  }
  return -1;
}

}  // namespace ember::vision::detail
