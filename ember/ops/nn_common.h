#pragma once
// Helpers shared by the nn op families and their flex kernels (private): loss reductions, spatial
// arguments and pooling/resampling geometry. Both inference and kernels derive sizes from here,
// so the two can never disagree.
#include <string>

#include "ember/ops/common.h"
#include "ember/ops/modes.h"

namespace ember::ops {

/// A loss's reduction (Attrs::mode), checked: BatchMean only where allowed.
Reduction reduction_of(const char* op, const Attrs& a, bool allow_batchmean = false);
/// mean / sum / none of an elementwise loss, as a.mode says.
Tensor apply_reduction(const Tensor& loss, const Attrs& a);
/// Throws DTypeError unless `d` is a floating dtype.
void require_float(const char* op, DType d, const char* what = "input");
/// Throws ShapeError unless t is undefined or 1-D of `n` elements.
void require_vector(const char* op, const Tensor& t, int64_t n, const char* what);

/// rms_norm's eps: f[0] when b[0] is set, else the machine epsilon of `d` (torch's default).
double rms_norm_eps(const Attrs& a, DType d);

/// One value per spatial dim: `v` repeated when it has one entry, `fallback` when empty.
Shape spatial_arg(const char* op, const char* what, const Shape& v, int nd, const Shape& fallback);

/// Pooling window geometry over (H, W); 1-d pooling uses H = 1 with a unit kernel.
struct PoolParams {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false;
};
/// Reads and validates max/avg pooling attrs (ints kernel, ints2 stride, ints3 padding, ints4
/// dilation, b[0] ceil_mode) for `nd` spatial dims; throws ValueError naming the op.
PoolParams pool_params(const char* op, const Attrs& a, int nd, bool dilation);
/// torch's pooling_output_shape.
int64_t pool_out_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t stride,
                      int64_t dil, bool ceil);

/// Window [start, end) of output `o` in adaptive pooling of `in` into `out`.
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

}  // namespace ember::ops
