#pragma once
// interpolate's source indices and weights per output index ("taps"), shared by the flex kernel
// and the VJP rule so both use exactly the index maths of the forward pass (torch's CPU maths,
// evaluated in the kernel's compute type C). Private.
#include "ember/ops/modes.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::ops {

// torch's area_pixel_compute_scale: the input step per output step.
template <class C>
C axis_scale(int64_t in, int64_t out, bool align, std::optional<double> scale) {
  if (align) return out > 1 ? C(in - 1) / C(out - 1) : C(0);
  return scale && *scale > 0 ? C(1.0 / *scale) : C(in) / C(out);
}

// torch's area_pixel_compute_source_index (the +0.5 is evaluated in double, as there).
template <class C>
C source_index(C scale, int64_t o, bool align, bool cubic) {
  if (align) return scale * C(o);
  const C s = C(double(scale) * (double(o) + 0.5) - 0.5);
  return !cubic && s < C(0) ? C(0) : s;
}

template <class C>
struct Taps {
  int k = 1;  // taps per output index
  std::vector<int64_t> idx;
  std::vector<C> wt;
};

template <class C>
Taps<C> make_taps(InterpMode mode, int64_t in, int64_t out, bool align,
                  std::optional<double> scale) {
  Taps<C> t;
  if (mode == InterpMode::Nearest) {
    t.idx.resize(size_t(out));
    const float s = scale && *scale > 0 ? float(1.0 / *scale) : float(in) / float(out);
    for (int64_t o = 0; o < out; ++o)
      t.idx[size_t(o)] = in == out       ? o
                         : out == 2 * in ? o >> 1
                                         : std::min(int64_t(std::floor(float(o) * s)), in - 1);
    t.wt.assign(size_t(out), C(1));
    return t;
  }
  const C ratio = axis_scale<C>(in, out, align, scale);
  if (mode == InterpMode::Bicubic) {
    constexpr double A = -0.75;
    auto conv1 = [](C x) { return C(((A + 2) * x - (A + 3)) * x * x + 1); };
    auto conv2 = [](C x) { return C(((A * x - 5 * A) * x + 8 * A) * x - 4 * A); };
    t.k = 4;
    t.idx.resize(size_t(out * 4));
    t.wt.resize(size_t(out * 4));
    for (int64_t o = 0; o < out; ++o) {
      const C real = source_index(ratio, o, align, true);
      const int64_t i = int64_t(std::floor(real));
      const C f = real - C(i);
      const C w[4] = {conv2(f + C(1)), conv1(f), conv1(C(1) - f), conv2(C(2) - f)};
      for (int j = 0; j < 4; ++j) {
        t.idx[size_t(o * 4 + j)] = std::clamp<int64_t>(i - 1 + j, 0, in - 1);
        t.wt[size_t(o * 4 + j)] = w[j];
      }
    }
    return t;
  }
  t.k = 2;  // linear / bilinear
  t.idx.resize(size_t(out * 2));
  t.wt.resize(size_t(out * 2));
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = o, i1 = o;
    C l1 = 0;
    if (in != out) {
      const C real = source_index(ratio, o, align, false);
      i0 = int64_t(real);
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
      l1 = real - C(i0);
    }
    t.idx[size_t(o * 2)] = i0, t.idx[size_t(o * 2 + 1)] = i1;
    t.wt[size_t(o * 2)] = C(1) - l1, t.wt[size_t(o * 2 + 1)] = l1;
  }
  return t;
}

}  // namespace ember::ops
