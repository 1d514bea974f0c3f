#include "ember/backends/flex/reduce_engine.h"

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
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (red) {
      push(g.red_sizes, g.red_strides, s[d], st[d]);
      g.n_red *= s[d];
    } else {
      push(g.kept_sizes, g.kept_strides, s[d], st[d]);
      g.n_out *= s[d];
    }
  }
  return g;
}

}  // namespace ember::flex
