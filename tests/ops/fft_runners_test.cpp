// Golden runners for the FFT's registry ops (tests/data/fft_ops.json, tests/gen/gen_fft_ops.py):
// torch's _fft_c2c / _fft_r2c / _fft_c2r, called as the ember::fft functions call them.
#include "ember/ops/fft_ops.h"
#include "golden.h"

namespace {

using namespace ember;
using ember::test::Case;
using ember::test::inputs_of;

Shape dims_of(const Case& c, const Tensor& x) {
  Shape d;
  for (int64_t v : c.attrs.at("dim").get<std::vector<int64_t>>()) d.push_back(wrap_dim(v, x.dim(), "fft"));
  return d;
}

}  // namespace

EMBER_RUNNER(fft_c2c) {
  const Tensor x = inputs_of(c, dev)[0];
  return {fft::detail::c2c(x, dims_of(c, x), c.attrs.at("normalization").get<int>(),
                           c.attrs.at("forward").get<bool>())};
}
EMBER_RUNNER(fft_r2c) {
  const Tensor x = inputs_of(c, dev)[0];
  return {fft::detail::r2c(x, dims_of(c, x), c.attrs.at("normalization").get<int>(),
                           c.attrs.at("onesided").get<bool>())};
}
EMBER_RUNNER(fft_c2r) {
  const Tensor x = inputs_of(c, dev)[0];
  return {fft::detail::c2r(x, dims_of(c, x), c.attrs.at("normalization").get<int>(),
                           c.attrs.at("last_dim_size").get<int64_t>())};
}
