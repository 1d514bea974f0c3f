#pragma once
// Where each padded position reads from, shared by the pad decomposition and backend kernels
// (private).
#include <algorithm>
#include <cstdint>

#include "ember/ops/modes.h"

namespace ember::ops {

/// The input position that output position q of a padded dim (input size n, pads l and r) copies;
/// -1 for the fill value (constant mode). Negative pads crop. Inside the kept range it is q - l.
inline int64_t pad_source(PadMode mode, int64_t q, int64_t n, int64_t l, int64_t r) {
  const int64_t i = q - l;
  switch (mode) {
    case PadMode::Constant: return i >= 0 && i < n ? i : -1;
    case PadMode::Replicate: return std::clamp<int64_t>(i, 0, n - 1);
    case PadMode::Reflect: return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
    case PadMode::Circular: {  // like torch: crop the negative pads, then wrap in what is left
      const int64_t a0 = std::max<int64_t>(-l, 0), m = n - a0 - std::max<int64_t>(-r, 0);
      const int64_t k = (q - std::max<int64_t>(l, 0)) % m;
      return a0 + (k < 0 ? k + m : k);
    }
  }
  return -1;
}

}  // namespace ember::ops
