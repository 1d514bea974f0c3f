// flex kernel: pad, all modes in one pass. Each padded dim gets a table of source positions
// (ops::pad_source); the output is written row by row along its last dim, the kept middle of a
// row in one memcpy.
#include <cstring>
#include <vector>

#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/layout.h"
#include "ember/ops/pad.h"

namespace ember::flex {
namespace {

TensorList k_pad(const OpCall& c) {
  const Attrs& a = c.attrs;
  Tensor x = contiguous(c.inputs[0]);
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t nd = x.dim(), k = int64_t(a.ints.size() / 2);
  if (k == 0) {
    copy_into(out, x);
    return {out};
  }
  const auto mode = ops::PadMode(a.mode);
  // tables[d]: for padded dims, the source position of every output position (-1: fill value).
  std::vector<std::vector<int64_t>> tables(static_cast<size_t>(nd));
  for (int64_t j = 0; j < k; ++j) {
    const int64_t d = nd - 1 - j, l = a.ints[size_t(2 * j)], r = a.ints[size_t(2 * j + 1)];
    auto& t = tables[size_t(d)];
    t.resize(size_t(out.size(d)));
    for (int64_t q = 0; q < out.size(d); ++q)
      t[size_t(q)] = ops::pad_source(mode, q, x.size(d), l, r);
  }
  const int64_t ow = out.size(-1), l = a.ints[0], r = a.ints[1], n = x.size(-1);
  // The kept middle of every row: output [q0, q0 + len) reads input [q0 - l, ...).
  const int64_t q0 = std::max<int64_t>(l, 0);
  const int64_t len = std::max<int64_t>(n - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0), 0);
  const std::vector<int64_t>& last = tables[size_t(nd - 1)];
  const Shape& os = out.shape();
  const Shape& xs = x.strides();
  EMBER_DISPATCH_ALL(x.dtype(), "pad", {
    const T fill = T(Scalar(a.f[0]).to<compute_t<T>>());
    const T* xp = static_cast<const T*>(x.raw_data());
    T* op = static_cast<T*>(out.raw_data());
    parallel_for(out.numel() / ow, std::max<int64_t>(1, 16384 / ow), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        T* dst = op + row * ow;
        int64_t src = 0, rem = row;
        bool inside = true;
        for (int64_t d = nd - 2; d >= 0; --d) {
          int64_t pos = rem % os[size_t(d)];
          rem /= os[size_t(d)];
          if (!tables[size_t(d)].empty()) pos = tables[size_t(d)][size_t(pos)];
          if (pos < 0) inside = false;
          src += pos * xs[size_t(d)];
        }
        if (!inside) {
          std::fill(dst, dst + ow, fill);
          continue;
        }
        const T* s = xp + src;
        for (int64_t q = 0; q < q0; ++q) dst[q] = last[size_t(q)] < 0 ? fill : s[last[size_t(q)]];
        if (len > 0) std::memcpy(dst + q0, s + (q0 - l), size_t(len) * sizeof(T));
        for (int64_t q = q0 + len; q < ow; ++q)
          dst[q] = last[size_t(q)] < 0 ? fill : s[last[size_t(q)]];
      }
    });
  });
  return {out};
}

}  // namespace

void register_flex_pad(BackendImpl& b) { b.set_kernel(OpId::pad, k_pad, kAllDTypes); }

}  // namespace ember::flex
