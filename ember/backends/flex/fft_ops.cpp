// flex's kernels of the FFT's registry ops (ember/ops/fft_ops.cpp): one native 1-D transform
// (fft.cpp, fft_plan.h) per dim, the dim moved last and back; the normalisation is applied by
// the first transform. The cpu backend runs these too.
#include <cmath>

#include "ember/backends/flex/fft_plan.h"
#include "ember/backends/flex/flex.h"
#include "ember/ember.h"

namespace ember::flex {
namespace {

template <class F>
Tensor along(const Tensor& x, int64_t dim, const F& f) {
  if (dim == x.dim() - 1) return f(x);
  return movedim(f(movedim(x, {dim}, {-1})), {-1}, {dim});
}

double norm_scale(int64_t mode, double n) {
  return mode == 0 ? 1.0 : mode == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
}

// c2c over `dims` of y, the first transform scaled by `s`.
Tensor c2c_dims(Tensor y, std::span<const int64_t> dims, bool inverse, double s) {
  for (int64_t d : dims) {
    y = along(y, d, [&](const Tensor& t) { return fft::c2c(t, inverse, s); });
    s = 1.0;
  }
  return y;
}

TensorList k_c2c(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const IntVec& dims = c.attrs.ints;
  double n = 1;
  for (int64_t d : dims) n *= double(x.size(d));
  return {c2c_dims(x, dims, !c.attrs.b[0], norm_scale(c.attrs.i[0], n)).contiguous()};
}

TensorList k_r2c(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const IntVec& dims = c.attrs.ints;
  const int64_t last = dims.back();
  double n = 1;
  for (int64_t d : dims) n *= double(x.size(d));
  const double s = norm_scale(c.attrs.i[0], n);
  Tensor y = c.attrs.b[0]
                 ? along(x, last, [&](const Tensor& t) { return fft::r2c(t, false, s); })
                 : along(x.to(complex_dtype_for(x.dtype())), last,
                         [&](const Tensor& t) { return fft::c2c(t, false, s); });
  return {c2c_dims(y, std::span<const int64_t>(dims.data(), dims.size() - 1), false, 1.0)
              .contiguous()};
}

TensorList k_c2r(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const IntVec& dims = c.attrs.ints;
  const int64_t last = dims.back(), len = c.attrs.i[1];
  double n = double(len);
  for (size_t i = 0; i + 1 < dims.size(); ++i) n *= double(x.size(dims[i]));
  const double s = norm_scale(c.attrs.i[0], n);
  Tensor y = c2c_dims(x, std::span<const int64_t>(dims.data(), dims.size() - 1), true, s);
  const double s_last = dims.size() > 1 ? 1.0 : s;
  return {along(y, last, [&](const Tensor& t) { return fft::c2r(t, len, true, s_last); })
              .contiguous()};
}

}  // namespace

void register_flex_fft_ops(BackendImpl& b) {
  b.set_kernel(OpId::fft_c2c, k_c2c, kComplexDTypes);
  b.set_kernel(OpId::fft_r2c, k_r2c, mask_of(DType::F32) | mask_of(DType::F64));
  b.set_kernel(OpId::fft_c2r, k_c2r, kComplexDTypes);
}

}  // namespace ember::flex
