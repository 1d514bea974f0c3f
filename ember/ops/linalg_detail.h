#pragma once
// Private helpers of the linalg kernels (flex's and the cpu backend's LAPACK ones): the errors
// for singular and non-positive-definite input, worded like torch's and naming the batch element.
#include <cstdint>
#include <span>
#include <string>

#include "ember/ops/registry.h"

namespace ember::linalg_detail {

/// What a nonzero LAPACK-style info means for an op.
enum class Failure : uint8_t {
  Singular,  // inv, solve: a zero pivot
  LuZero,    // lu_factor: U[k,k] is zero
  NotPd,     // cholesky: a leading minor is not positive-definite
};

/// Throws ValueError for the first nonzero info (1-based, as LAPACK returns) in `infos`, one
/// per matrix of the batch; `batched` adds "(batch element b)" as torch does.
void check_infos(const char* op, std::span<const int64_t> infos, bool batched, Failure kind);

/// Matrices in a [..., rows, cols] tensor (1 for a single matrix; 0 for an empty batch).
inline int64_t batch_count(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) n *= t.size(d);
  return n;
}

}  // namespace ember::linalg_detail
