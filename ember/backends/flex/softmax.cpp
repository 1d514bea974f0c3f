// flex kernels: softmax and log_softmax, fused. Over the last dim each row takes one pass for the
// max, one for the sum of exponentials (softmax stores them) and one to normalise, all while the
// row sits in L1. Over an inner dim the same passes run across a block of columns at once, so
// the loops stay contiguous and vectorise.
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/rowwise.h"

namespace ember::flex {
namespace {

template <class C>
void softmax_row(const C* x, C* y, int64_t n, bool log_form) {
  const C m = lane_max(x, n);
  if (log_form) {
    const C s = lane_sum<C>(n, [&](int64_t i) { return exp_fast(x[i] - m); });
    const C shift = m + std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
  } else {
    const C s = lane_sum<C>(n, [&](int64_t i) {
      const C e = exp_fast(x[i] - m);
      y[i] = e;
      return e;
    });
    const C inv = C(1) / s;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// x, y: [n, inner] slabs (row stride `inner`), normalising each of `width` columns over n.
template <class C>
void softmax_cols(const C* x, C* y, int64_t n, int64_t inner, int64_t width, bool log_form,
                  C* m, C* s) {
  std::fill(m, m + width, -std::numeric_limits<C>::infinity());
  std::fill(s, s + width, C(0));
  for (int64_t r = 0; r < n; ++r) {
    const C* xr = x + r * inner;
    for (int64_t j = 0; j < width; ++j) m[j] = xr[j] > m[j] ? xr[j] : m[j];
  }
  for (int64_t r = 0; r < n; ++r) {
    const C* xr = x + r * inner;
    C* yr = y + r * inner;
    for (int64_t j = 0; j < width; ++j) {
      const C e = exp_fast(xr[j] - m[j]);
      if (!log_form) yr[j] = e;
      s[j] += e;
    }
  }
  if (log_form) {
    for (int64_t j = 0; j < width; ++j) s[j] = m[j] + std::log(s[j]);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < width; ++j) y[r * inner + j] = x[r * inner + j] - s[j];
  } else {
    for (int64_t j = 0; j < width; ++j) s[j] = C(1) / s[j];
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < width; ++j) y[r * inner + j] *= s[j];
  }
}

template <class T>
void softmax_inner(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log_form) {
  using C = compute_t<T>;
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n * kBlock, 1));
  parallel_for(outer * blocks, grain, [&](int64_t b, int64_t e) {
    std::vector<C> m(kBlock), s(kBlock), xs, ys;
    if constexpr (!std::is_same_v<T, C>) {
      xs.resize(size_t(n * kBlock));
      ys.resize(size_t(n * kBlock));
    }
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t width = std::min(kBlock, inner - j0);
      const T* xb = x + o * n * inner + j0;
      T* yb = y + o * n * inner + j0;
      if constexpr (std::is_same_v<T, C>) {
        softmax_cols(xb, yb, n, inner, width, log_form, m.data(), s.data());
      } else {
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < width; ++j) xs[size_t(r * width + j)] = C(xb[r * inner + j]);
        softmax_cols(xs.data(), ys.data(), n, width, width, log_form, m.data(), s.data());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < width; ++j) yb[r * inner + j] = T(ys[size_t(r * width + j)]);
      }
    }
  });
}

TensorList softmax_kernel(const OpCall& c, bool log_form) {
  Tensor out = new_output(c);
  const Tensor x = c.inputs[0].contiguous();
  if (x.numel() == 0) return {out};
  const int64_t nd = x.dim();
  const int64_t dim = wrap_dim(c.attrs.i[0], nd, op_name(c.op));
  const int64_t n = nd == 0 ? 1 : x.size(dim);
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
  const int64_t outer = x.numel() / (n * inner);
  EMBER_DISPATCH_FLOAT(x.dtype(), op_name(c.op), {
    const T* xp = static_cast<const T*>(x.raw_data());
    T* yp = static_cast<T*>(out.raw_data());
    if (inner == 1) {
      run_rows(xp, yp, outer, n, [&](int64_t, const auto* xr, auto* yr) {
        softmax_row(xr, yr, n, log_form);
      });
    } else {
      softmax_inner(xp, yp, outer, n, inner, log_form);
    }
  });
  return {out};
}

TensorList k_softmax(const OpCall& c) { return softmax_kernel(c, false); }
TensorList k_log_softmax(const OpCall& c) { return softmax_kernel(c, true); }

}  // namespace

void register_flex_softmax(BackendImpl& b) {
  b.set_kernel(OpId::softmax, k_softmax, kFloatDTypes);
  b.set_kernel(OpId::log_softmax, k_log_softmax, kFloatDTypes);
}

}  // namespace ember::flex
