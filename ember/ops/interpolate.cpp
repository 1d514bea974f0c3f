// interpolate (nearest, linear, bilinear, bicubic): API, inference, registration.
// Attrs: mode = ops::InterpMode; ints output size (1 or one per spatial dim) or, when b[0] is set, i[0] scale
// factors in f[0], f[1] (one per spatial dim, or one for all); b[1] align_corners, b[2] given.
#include <cmath>

#include "ember/backends/backend.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/interpolate_taps.h"
#include "ember/ops/modes.h"
#include "ember/ops/nn.h"
#include "ember/ops/nn_common.h"

namespace ember {
namespace {

void infer_interpolate(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  const Tensor& x = in[0];
  ops::require_defined(x, name);
  using M = ops::InterpMode;
  const M m = ops::mode_of(name, a.mode, M::Bicubic);
  const std::string mode = ops::mode_name(m);
  if (x.dim() != 3 && x.dim() != 4)
    detail::throw_shape(name, "expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, found shape " +
                                  shape_str(x.shape()));
  const int nd = int(x.dim()) - 2;
  if ((m == M::Linear && nd != 1) || ((m == M::Bilinear || m == M::Bicubic) && nd != 2))
    detail::throw_shape(name, "mode '" + mode + "' needs a " + (m == M::Linear ? "3" : "4") +
                                  "-D input, found shape " + shape_str(x.shape()));
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.size(d) == 0)
      detail::throw_shape(name, "expected non-zero sizes except for the batch dim, found shape " +
                                    shape_str(x.shape()));
  if (m == M::Nearest) {
    if (a.b[2])
      detail::throw_value(name, "align_corners can only be set with the interpolating modes "
                                "(linear, bilinear, bicubic)");
    if (x.dtype() == DType::Bool) detail::throw_dtype(name, "not supported for bool inputs");
  } else {
    ops::require_float(name, x.dtype());
  }
  const bool has_size = !a.ints.empty(), has_scale = a.b[0];
  if (has_size == has_scale)
    detail::throw_value(name, "expected exactly one of size and scale_factor");
  Shape s = x.shape();
  if (has_size) {
    Shape os = ops::spatial_arg(name, "size", a.ints, nd, {});
    for (int d = 0; d < nd; ++d) s[size_t(2 + d)] = os[size_t(d)];
  } else {
    if (a.i[0] != 1 && a.i[0] != nd)
      detail::throw_value(name, "scale_factor must have 1 or " + std::to_string(nd) +
                                    " values, found " + std::to_string(a.i[0]));
    for (int d = 0; d < nd; ++d) {
      double f = a.f[size_t(a.i[0] == 1 ? 0 : d)];
      if (!(f > 0) || !std::isfinite(f))
        detail::throw_value(name, "scale_factor must be positive and finite, found " +
                                      std::to_string(f));
      // Converted only once known to fit: a huge factor must not reach int64 as UB.
      double o = std::floor(double(x.size(2 + d)) * f);
      if (!(o <= double(kMaxNumel)))
        detail::throw_value(name, "scale_factor " + std::to_string(f) + " gives an output size " +
                                      "beyond 2^56 for an input size of " +
                                      std::to_string(x.size(2 + d)));
      s[size_t(2 + d)] = int64_t(o);
    }
  }
  for (int d = 0; d < nd; ++d)
    if (s[size_t(2 + d)] <= 0)
      detail::throw_value(name, "output sizes must be positive, found " + shape_str(s));
  out.add(s, x.dtype());
}

// The decomposition (what backends without a kernel of their own run): the flex kernel's taps
// of each spatial axis as gathers and weighted sums in its compute type, along W first and then
// H, as torch and the flex kernel evaluate them; nearest is gathers only, in any dtype.
template <class C>
Tensor along_axis(const Tensor& t, int64_t dim, const ops::Taps<C>& taps) {
  const int64_t out = int64_t(taps.idx.size()) / taps.k;
  Shape ws(size_t(t.dim()), 1);
  ws[size_t(dim)] = out;
  std::vector<int64_t> idx(static_cast<size_t>(out));
  std::vector<double> w(static_cast<size_t>(out));
  Tensor acc;
  for (int j = 0; j < taps.k; ++j) {
    for (int64_t o = 0; o < out; ++o) {
      idx[size_t(o)] = taps.idx[size_t(o * taps.k + j)];
      w[size_t(o)] = double(taps.wt[size_t(o * taps.k + j)]);
    }
    Tensor term = index_select(t, dim, tensor(idx, {out}, DType::I64, t.device()));
    if (taps.k > 1) term = term * tensor(w, ws, t.dtype(), t.device());
    acc = j == 0 ? term : acc + term;
  }
  return acc;
}

template <class C>
Tensor interpolate_as(const Tensor& x, const Attrs& a, const Shape& os) {
  const bool two_d = x.dim() == 4, align = a.b[1];
  const auto mode = ops::InterpMode(a.mode);
  std::optional<double> sh, sw;
  if (a.b[0]) {  // scale factors reach the index maths, like torch
    sw = a.f[size_t(a.i[0] == 1 ? 0 : (two_d ? 1 : 0))];
    if (two_d) sh = a.f[0];
  }
  const bool nearest = mode == ops::InterpMode::Nearest;
  Tensor y = nearest ? x : x.to(std::is_same_v<C, double> ? DType::F64 : DType::F32);
  y = along_axis(y, x.dim() - 1, ops::make_taps<C>(mode, x.size(-1), os.back(), align, sw));
  if (two_d) y = along_axis(y, 2, ops::make_taps<C>(mode, x.size(2), os[2], align, sh));
  return y.dtype() == x.dtype() ? y : y.to(x.dtype());
}

TensorList dec_interpolate(const Attrs& a, std::span<const Tensor> in) {
  MetaList meta;
  infer_interpolate(OpId::interpolate, a, in, meta);
  const Tensor& x = in[0];
  if (numel_of(meta.m[0].shape) == 0) return {zeros(meta.m[0].shape, {x.dtype(), x.device()})};
  // Nearest taps are float maths whatever the dtype (the flex kernel's).
  if (x.dtype() == DType::F64 && ops::InterpMode(a.mode) != ops::InterpMode::Nearest)
    return {interpolate_as<double>(x, a, meta.m[0].shape)};
  return {interpolate_as<float>(x, a, meta.m[0].shape)};
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  Attrs a;
  a.mode = uint8_t(ops::parse_interp_mode("interpolate", o.mode));
  a.ints = o.size;
  if (!o.scale_factor.empty()) {
    if (o.scale_factor.size() > 2)
      detail::throw_value("interpolate", "scale_factor must have 1 or 2 values, found " +
                                             std::to_string(o.scale_factor.size()));
    a.b[0] = true;
    a.i[0] = int64_t(o.scale_factor.size());
    for (size_t i = 0; i < o.scale_factor.size(); ++i) a.f[i] = o.scale_factor[i];
  }
  a.b[1] = o.align_corners.value_or(false);
  a.b[2] = o.align_corners.has_value();
  return dispatch1(OpId::interpolate, a, {x});
}

namespace ops {
void register_interpolate_ops() {
  op_def_mut(OpId::interpolate).infer = infer_interpolate;
  op_def_mut(OpId::interpolate).decompose = dec_interpolate;
}
}  // namespace ops

}  // namespace ember
