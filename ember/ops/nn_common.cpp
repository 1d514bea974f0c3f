#include "ember/ops/nn_common.h"

#include <limits>

#include "ember/backends/backend.h"
#include "ember/ops/reduce.h"

namespace ember::ops {

Reduction reduction_of(const char* op, const Attrs& a, bool allow_batchmean) {
  return mode_of(op, a.mode, allow_batchmean ? Reduction::BatchMean : Reduction::None);
}

Tensor apply_reduction(const Tensor& loss, const Attrs& a) {
  switch (Reduction(a.mode)) {
    case Reduction::Mean: return mean(loss);
    case Reduction::Sum: return sum(loss);
    default: return loss;
  }
}

void require_float(const char* op, DType d, const char* what) {
  if (!is_floating(d))
    detail::throw_dtype(op, std::string("expected a floating ") + what + ", found " +
                                std::string(dtype_name(d)));
}

void require_vector(const char* op, const Tensor& t, int64_t n, const char* what) {
  if (t.defined() && (t.dim() != 1 || t.size(0) != n))
    detail::throw_shape(op, std::string("expected ") + what + " of shape [" + std::to_string(n) +
                                "], found " + shape_str(t.shape()));
}

double rms_norm_eps(const Attrs& a, DType d) {
  if (a.b[0]) return a.f[0];
  switch (d) {
    case DType::F16: return 0.0009765625;  // 2^-10
    case DType::BF16: return 0.0078125;    // 2^-7
    case DType::F64: return std::numeric_limits<double>::epsilon();
    default: return double(std::numeric_limits<float>::epsilon());
  }
}

Shape spatial_arg(const char* op, const char* what, const Shape& v, int nd, const Shape& fallback) {
  const Shape& src = v.empty() ? fallback : v;
  if (src.size() == 1) return Shape(size_t(nd), src[0]);
  if (int(src.size()) != nd)
    detail::throw_value(op, std::string(what) + " must have 1 or " + std::to_string(nd) +
                                " values, found " + shape_str(src));
  return src;
}

PoolParams pool_params(const char* op, const Attrs& a, int nd, bool dilation) {
  if (a.ints.empty()) detail::throw_value(op, "kernel_size must be given");
  Shape k = spatial_arg(op, "kernel_size", a.ints, nd, {});
  Shape s = spatial_arg(op, "stride", a.ints2, nd, k);
  Shape p = spatial_arg(op, "padding", a.ints3, nd, {0});
  Shape d = dilation ? spatial_arg(op, "dilation", a.ints4, nd, {1}) : Shape(size_t(nd), 1);
  for (int i = 0; i < nd; ++i) {
    if (k[size_t(i)] <= 0 || s[size_t(i)] <= 0 || d[size_t(i)] <= 0)
      detail::throw_value(op, "kernel_size, stride and dilation must be positive, found kernel " +
                                  shape_str(k) + ", stride " + shape_str(s) + ", dilation " +
                                  shape_str(d));
    if (p[size_t(i)] < 0 || p[size_t(i)] > k[size_t(i)] / 2)
      detail::throw_value(op, "padding must be non-negative and at most half of the kernel size, "
                              "found padding " + shape_str(p) + " for kernel " + shape_str(k));
  }
  PoolParams r;
  r.ceil_mode = a.b[0];
  size_t w = size_t(nd - 1);
  r.kw = k[w], r.sw = s[w], r.pw = p[w], r.dw = d[w];
  if (nd == 2) r.kh = k[0], r.sh = s[0], r.ph = p[0], r.dh = d[0];
  return r;
}

int64_t pool_out_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t stride,
                      int64_t dil, bool ceil) {
  // Every term comes from the user: checked, so a huge window is an error, not a wrapped size.
  const char* what = "the pooling window";
  int64_t num = checked_add(in, checked_mul(2, pad, op, what), op, what);
  num = checked_add(num, -checked_add(checked_mul(dil, k - 1, op, what), 1, op, what), op, what);
  if (ceil) num = checked_add(num, stride - 1, op, what);
  // Floor division (the numerator can be negative when the window does not fit).
  int64_t q = num >= 0 ? num / stride : -((-num + stride - 1) / stride);
  int64_t out = q + 1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace ember::ops
