// flex kernels: layer_norm, rms_norm, group_norm, batch_norm. Each normalised row (a layer_norm
// row, a group of channels) is reduced in two passes while it sits in L1 (mean, then squared
// deviations: more accurate than sum-of-squares) and written in a third; batch_norm gathers
// per-channel statistics across the batch, then applies one scale and shift per channel.
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/rowwise.h"
#include "ember/ops/nn_common.h"

namespace ember::flex {
namespace {

template <class C>
const C* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const C*>(t.raw_data()) : nullptr;
}
const Tensor& input_or_none(const OpCall& c, size_t i) {
  static const Tensor none;
  return c.inputs.size() > i ? c.inputs[i] : none;
}

template <class C>
void mean_var(const C* x, int64_t n, C& mean, C& var) {
  mean = lane_sum<C>(n, [&](int64_t i) { return x[i]; }) / C(n);
  const C m = mean;
  var = lane_sum<C>(n, [&](int64_t i) {
          const C d = x[i] - m;
          return d * d;
        }) / C(n);
}

TensorList k_layer_norm(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor x = c.inputs[0].contiguous();
  if (x.numel() == 0) return {out};
  const int64_t n = numel_of(c.attrs.ints), rows = x.numel() / n;
  EMBER_DISPATCH_FLOAT(x.dtype(), "layer_norm", {
    using C = compute_t<T>;
    const Tensor w = as_compute(input_or_none(c, 1), dtype_v<C>);
    const Tensor b = as_compute(input_or_none(c, 2), dtype_v<C>);
    const C* wp = ptr_or_null<C>(w);
    const C* bp = ptr_or_null<C>(b);
    const C eps = C(c.attrs.f[0]);
    run_rows(static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), rows, n,
             [&](int64_t, const C* xr, C* yr) {
               C mean, var;
               mean_var(xr, n, mean, var);
               const C rstd = C(1) / std::sqrt(var + eps);
               if (wp && bp) {
                 for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * rstd * wp[i] + bp[i];
               } else if (wp) {
                 for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * rstd * wp[i];
               } else {
                 for (int64_t i = 0; i < n; ++i)
                   yr[i] = (xr[i] - mean) * rstd + (bp ? bp[i] : C(0));
               }
             });
  });
  return {out};
}

TensorList k_rms_norm(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor x = c.inputs[0].contiguous();
  if (x.numel() == 0) return {out};
  const int64_t n = numel_of(c.attrs.ints), rows = x.numel() / n;
  EMBER_DISPATCH_FLOAT(x.dtype(), "rms_norm", {
    using C = compute_t<T>;
    const Tensor w = as_compute(input_or_none(c, 1), dtype_v<C>);
    const C* wp = ptr_or_null<C>(w);
    const C eps = C(ops::rms_norm_eps(c.attrs, x.dtype()));
    run_rows(static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), rows, n,
             [&](int64_t, const C* xr, C* yr) {
               const C ms = lane_sum<C>(n, [&](int64_t i) { return xr[i] * xr[i]; }) / C(n);
               const C r = C(1) / std::sqrt(ms + eps);
               if (wp) {
                 for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * r * wp[i];
               } else {
                 for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * r;
               }
             });
  });
  return {out};
}

// One row per (sample, group): channels_per_group * spatial contiguous values.
TensorList k_group_norm(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor x = c.inputs[0].contiguous();
  if (x.numel() == 0) return {out};
  const int64_t groups = c.attrs.i[0], channels = x.size(1);
  const int64_t cpg = channels / groups, spatial = x.numel() / (x.size(0) * channels);
  const int64_t n = cpg * spatial, rows = x.size(0) * groups;
  EMBER_DISPATCH_FLOAT(x.dtype(), "group_norm", {
    using C = compute_t<T>;
    const Tensor w = as_compute(c.inputs[1], dtype_v<C>);
    const Tensor b = as_compute(c.inputs[2], dtype_v<C>);
    const C* wp = ptr_or_null<C>(w);
    const C* bp = ptr_or_null<C>(b);
    const C eps = C(c.attrs.f[0]);
    run_rows(static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), rows, n,
             [&](int64_t r, const C* xr, C* yr) {
               C mean, var;
               mean_var(xr, n, mean, var);
               const C rstd = C(1) / std::sqrt(var + eps);
               for (int64_t k = 0; k < cpg; ++k) {
                 const int64_t ch = (r % groups) * cpg + k;
                 const C scale = rstd * (wp ? wp[ch] : C(1));
                 const C shift = (bp ? bp[ch] : C(0)) - mean * scale;
                 const C* xs = xr + k * spatial;
                 C* ys = yr + k * spatial;
                 for (int64_t i = 0; i < spatial; ++i) ys[i] = xs[i] * scale + shift;
               }
             });
  });
  return {out};
}

// x [N, C, S]: statistics per channel over N and S, then y = x * alpha[c] + beta[c].
TensorList k_batch_norm(const OpCall& c) {
  const bool training = c.attrs.b[0];
  Tensor out = new_output(c);
  Tensor save_mean = training ? new_output(c, 1) : Tensor();
  Tensor save_var = training ? new_output(c, 2) : Tensor();
  const Tensor x = c.inputs[0].contiguous();
  const int64_t batch = x.size(0), channels = x.size(1);
  const int64_t spatial = batch * channels > 0 ? x.numel() / (batch * channels) : 0;
  const int64_t count = batch * spatial;
  EMBER_DISPATCH_FLOAT(x.dtype(), "batch_norm", {
    using C = compute_t<T>;
    const T* xp = static_cast<const T*>(x.raw_data());
    const Tensor rm = as_compute(c.inputs[1], dtype_v<C>), rv = as_compute(c.inputs[2], dtype_v<C>);
    const Tensor w = as_compute(c.inputs[3], dtype_v<C>), b = as_compute(c.inputs[4], dtype_v<C>);
    const C* wp = ptr_or_null<C>(w);
    const C* bp = ptr_or_null<C>(b);
    const C eps = C(c.attrs.f[0]);
    std::vector<C> alpha(static_cast<size_t>(channels)), beta(static_cast<size_t>(channels));
    parallel_for(channels, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t ch = cb; ch < ce; ++ch) {
        C mean, invstd;
        if (training) {
          // Per-plane lane sums, combined in double so long batches keep their precision.
          double s = 0, ss = 0;
          for (int64_t i = 0; i < batch; ++i) {
            const T* p = xp + (i * channels + ch) * spatial;
            s += double(lane_sum<C>(spatial, [&](int64_t j) { return C(p[j]); }));
          }
          mean = C(s / double(count));
          for (int64_t i = 0; i < batch; ++i) {
            const T* p = xp + (i * channels + ch) * spatial;
            ss += double(lane_sum<C>(spatial, [&](int64_t j) {
              const C d = C(p[j]) - mean;
              return d * d;
            }));
          }
          invstd = C(1) / std::sqrt(C(ss / double(count)) + eps);
          static_cast<T*>(save_mean.raw_data())[ch] = T(mean);
          static_cast<T*>(save_var.raw_data())[ch] = T(C(ss / double(count - 1)));
        } else {
          mean = static_cast<const C*>(rm.raw_data())[ch];
          invstd = C(1) / std::sqrt(static_cast<const C*>(rv.raw_data())[ch] + eps);
        }
        alpha[size_t(ch)] = invstd * (wp ? wp[ch] : C(1));
        beta[size_t(ch)] = (bp ? bp[ch] : C(0)) - mean * alpha[size_t(ch)];
      }
    });
    T* yp = static_cast<T*>(out.raw_data());
    parallel_for(batch * channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(spatial, 1)),
                 [&](int64_t pb, int64_t pe) {
                   for (int64_t p = pb; p < pe; ++p) {
                     const C a = alpha[size_t(p % channels)], bb = beta[size_t(p % channels)];
                     const T* xs = xp + p * spatial;
                     T* ys = yp + p * spatial;
                     for (int64_t j = 0; j < spatial; ++j) ys[j] = T(C(xs[j]) * a + bb);
                   }
                 });
  });
  if (training) return {out, save_mean, save_var};
  return {out};
}

}  // namespace

void register_flex_norm(BackendImpl& b) {
  b.set_kernel(OpId::layer_norm, k_layer_norm, kFloatDTypes);
  b.set_kernel(OpId::rms_norm, k_rms_norm, kFloatDTypes);
  b.set_kernel(OpId::group_norm, k_group_norm, kFloatDTypes);
  b.set_kernel(OpId::batch_norm, k_batch_norm, kFloatDTypes);
}

}  // namespace ember::flex
