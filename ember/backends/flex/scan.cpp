// flex kernels: scans along a dim — cumsum, cumprod (accumulating like torch's CPU kernels:
// double for f32/f64, float for f16/bf16, int64 for integers, each output rounded on the way)
// and cummax/cummin with indices.
#include "ember/backends/flex/dim_loops.h"
#include "ember/backends/flex/reduce_kernels.h"
#include "ember/kl/wrap.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

template <class T> struct ScanAcc { using type = int64_t; };
template <> struct ScanAcc<float> { using type = double; };
template <> struct ScanAcc<double> { using type = double; };
template <> struct ScanAcc<Half> { using type = float; };
template <> struct ScanAcc<BFloat16> { using type = float; };

template <class T, bool kProd>
void cumulate(const DimView& v, T* out) {
  using A = typename ScanAcc<T>::type;
  const T* xp = static_cast<const T*>(v.x.raw_data());
  const int64_t n = v.n, inner = v.inner;
  for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
    A acc[256];
    std::fill(acc, acc + len, kProd ? A(1) : A(0));
    const int64_t base = o * n * inner + j0;
    for (int64_t r = 0; r < n; ++r) {
      const T* row = xp + base + r * inner;
      T* orow = out + base + r * inner;
      for (int64_t j = 0; j < len; ++j) {
        // Integer scans wrap like torch's (int64 accumulator).
        if constexpr (kProd) acc[j] = kl::wrapping_mul(acc[j], A(compute_t<T>(row[j])));
        else acc[j] = kl::wrapping_add(acc[j], A(compute_t<T>(row[j])));
        orow[j] = T(compute_t<T>(acc[j]));
      }
    }
  });
}

TensorList k_cumulate(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != out.dtype()) x = cast(x, out.dtype());  // torch casts to dtype, then scans
  const DimView v = dim_view(x, wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op)));
  if (v.numel() == 0) return {out};
  EMBER_DISPATCH_NUMERIC(out.dtype(), op_name(c.op), {
    T* op = static_cast<T*>(out.raw_data());
    if (c.op == OpId::cumprod) cumulate<T, true>(v, op);
    else cumulate<T, false>(v, op);
  });
  return {out};
}

// torch's rule: an element takes over when it is NaN, or when it ties or beats the current one
// (so ties move the index to the latest occurrence) and the current one is not NaN.
template <class T, bool kMax>
void cum_extreme(const DimView& v, T* vals, int64_t* idx) {
  using C = compute_t<T>;
  const T* xp = static_cast<const T*>(v.x.raw_data());
  const int64_t n = v.n, inner = v.inner;
  for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
    C best[256];
    int64_t at[256];
    const int64_t base = o * n * inner + j0;
    for (int64_t r = 0; r < n; ++r) {
      const T* row = xp + base + r * inner;
      for (int64_t j = 0; j < len; ++j) {
        const C x = C(row[j]);
        bool take = r == 0 || is_nan_value(x);
        if constexpr (kMax) take = take || (!is_nan_value(best[j]) && x >= best[j]);
        else take = take || (!is_nan_value(best[j]) && x <= best[j]);
        if (take) {
          best[j] = x;
          at[j] = r;
        }
        vals[base + r * inner + j] = xp[base + at[j] * inner + j];
        idx[base + r * inner + j] = at[j];
      }
    }
  });
}

TensorList k_cum_extreme(const OpCall& c) {
  Tensor vals = new_output(c, 0), idx = new_output(c, 1);
  const Tensor& x = c.inputs[0];
  const DimView v = dim_view(x, wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op)));
  if (v.numel() == 0) return {vals, idx};
  auto* ip = static_cast<int64_t*>(idx.raw_data());
  EMBER_DISPATCH_ALL(x.dtype(), op_name(c.op), {
    T* vp = static_cast<T*>(vals.raw_data());
    if (c.op == OpId::cummax) cum_extreme<T, true>(v, vp, ip);
    else cum_extreme<T, false>(v, vp, ip);
  });
  return {vals, idx};
}

}  // namespace

void register_flex_scan(BackendImpl& b) {
  b.set_kernel(OpId::cumsum, k_cumulate, kAllDTypes);
  b.set_kernel(OpId::cumprod, k_cumulate, kAllDTypes);
  b.set_kernel(OpId::cummax, k_cum_extreme, kAllDTypes);
  b.set_kernel(OpId::cummin, k_cum_extreme, kAllDTypes);
}

}  // namespace ember::flex
