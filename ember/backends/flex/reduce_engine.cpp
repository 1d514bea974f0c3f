#include "ember/backends/flex/reduce_engine.h"

#include <cstdlib>

namespace ember::flex {

ReduceGeom reduce_geom(const Tensor& x, const Shape& dims) {
  ReduceGeom g;
  const Shape& s = x.shape();
  const Shape& st = x.strides();
  auto push = [](Shape& sizes, Shape& strides, int64_t n, int64_t stride) {
    if (n == 1) return;
    if (!sizes.empty() && strides.back() == stride * n) {  // merge with the previous dim
      sizes[sizes.size() - 1] *= n;
      strides[strides.size() - 1] = stride;
      return;
    }
    sizes.push_back(n);
    strides.push_back(stride);
  };
  // Kept dims stay in order (they lay out the output). Reduced dims may go in any order, so
  // they go in memory order — broadcast (stride 0) dims outermost, then by falling stride — which
  // turns a transposed input's reduction back into a contiguous run for the lanes.
  std::vector<int64_t> red;
  for (size_t d = 0; d < s.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end()) {
      red.push_back(int64_t(d));
      g.n_red *= s[d];
    } else {
      push(g.kept_sizes, g.kept_strides, s[d], st[d]);
      g.n_out *= s[d];
    }
  }
  auto outer_first = [&](int64_t a, int64_t b) {
    const int64_t sa = std::abs(st[size_t(a)]), sb = std::abs(st[size_t(b)]);
    if ((sa == 0) != (sb == 0)) return sa == 0;
    return sa > sb;
  };
  std::stable_sort(red.begin(), red.end(), outer_first);
  for (int64_t d : red) push(g.red_sizes, g.red_strides, s[size_t(d)], st[size_t(d)]);
  return g;
}

}  // namespace ember::flex
