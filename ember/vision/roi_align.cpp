// roi_align: API, inference, decomposition, registration. Inputs x [N, C, H, W] and rois
// [K, 5] (batch index, x1, y1, x2, y2), both floating. Attrs: ints {out_h, out_w}; f[0]
// spatial_scale; i[0] sampling_ratio (<= 0: adaptive); b[0] aligned. Output [K, C, out_h, out_w]
// in x's dtype.
//
// The decomposition (backends without a kernel, and autodiff, which records through it so the
// input gets its gradient from gather's rule) reads the rois on the host, a documented sync
// point, computes the flex kernel's taps (detail/roi_align_taps.h), and gathers and sums them
// with ember ops on the input's device.
#include <string>

#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/vision/boxes.h"
#include "ember/vision/detail/roi_align_taps.h"

namespace ember {
namespace {

void infer_roi_align(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 2) detail::throw_value(name, "expected an input and rois");
  const Tensor &x = in[0], &rois = in[1];
  ops::require_defined(x, name, "input");
  ops::require_defined(rois, name, "rois");
  if (x.dim() != 4)
    detail::throw_shape(name,
                        "expected an input of shape [N, C, H, W], found " + shape_str(x.shape()));
  if (x.size(2) == 0 || x.size(3) == 0)
    detail::throw_shape(name,
                        "expected a non-empty image plane, found shape " + shape_str(x.shape()));
  if (rois.dim() != 2 || rois.size(1) != 5)
    detail::throw_shape(name,
                        "expected rois of shape [K, 5] (batch index, x1, y1, x2, y2), found " +
                            shape_str(rois.shape()));
  if (!is_floating(x.dtype()) || rois.dtype() != x.dtype())
    detail::throw_dtype(name,
                        std::string("expected a floating input and rois of its dtype, found ") +
                            std::string(dtype_name(x.dtype())) + " and " +
                            std::string(dtype_name(rois.dtype())));
  if (a.ints.size() != 2 || a.ints[0] <= 0 || a.ints[1] <= 0)
    detail::throw_value(
        name, "expected a positive output_size {height, width}, found " + shape_str(a.ints));
  out.add({rois.size(0), x.size(1), a.ints[0], a.ints[1]}, x.dtype());
}

vision::detail::RoiGeometry geometry(const Attrs& a, const Tensor& x) {
  return {x.size(2), x.size(3), a.ints[0], a.ints[1], a.i[0], a.f[0], a.b[0]};
}

template <class C>
Tensor roi_align_gather(const Attrs& a, const Tensor& x, const Tensor& rois) {
  const vision::detail::RoiGeometry g = geometry(a, x);
  const int64_t N = x.size(0), Cn = x.size(1), K = rois.size(0), cells = g.pooled_h * g.pooled_w;
  const std::vector<double> r = rois.to_vector<double>();  // the sync point
  std::vector<vision::detail::RoiTaps<C>> taps;
  std::vector<int64_t> batch;
  int64_t S = 1;
  for (int64_t k = 0; k < K; ++k) {
    const double* b = r.data() + 5 * k;
    vision::detail::check_roi(g, b, k, N);
    const int64_t n = int64_t(b[0]);
    batch.push_back(n);
    taps.push_back(vision::detail::roi_taps<C>(g, C(b[1]), C(b[2]), C(b[3]), C(b[4])));
    S = std::max(S, taps.back().grid);
  }
  // [K, cells * S * 4] taps; rois with fewer samples pad with zero weights.
  const int64_t T = cells * S * 4;
  std::vector<int64_t> idx(size_t(K * T), 0);
  std::vector<double> wt(size_t(K * T), 0.0);
  for (int64_t k = 0; k < K; ++k) {
    const auto& t = taps[size_t(k)];
    for (int64_t c = 0; c < cells; ++c)
      for (int64_t s = 0; s < t.grid * 4; ++s) {
        const size_t from = size_t(c * t.grid * 4 + s), to = size_t(k * T + c * S * 4 + s);
        idx[to] = t.pos[from];
        wt[to] = double(t.w[from]) / double(t.count);
      }
  }
  const Device d = x.device();
  const Tensor images = index_select(x.reshape({N, Cn, g.height * g.width}), 0,
                                     tensor(batch, {K}, DType::I64, d));  // [K, C, H*W]
  const Tensor at = expand(tensor(idx, {K, 1, T}, DType::I64, d), {K, Cn, T});
  const Tensor v = gather(images, 2, at) * tensor(wt, {K, 1, T}, x.dtype(), d);
  return sum(v.reshape({K, Cn, cells, S * 4}), {3}).reshape({K, Cn, g.pooled_h, g.pooled_w});
}

TensorList dec_roi_align(const Attrs& a, std::span<const Tensor> in) {
  MetaList meta;
  infer_roi_align(OpId::roi_align, a, in, meta);
  const Tensor &x = in[0], &rois = in[1];
  if (numel_of(meta.m[0].shape) == 0) return {zeros(meta.m[0].shape, {x.dtype(), x.device()})};
  if (x.dtype() == DType::F64) return {roi_align_gather<double>(a, x, rois)};
  return {roi_align_gather<float>(a, x, rois)};
}

}  // namespace

namespace vision {
Tensor roi_align(const Tensor& input, const Tensor& rois, const RoiAlignOptions& o) {
  Attrs a;
  a.ints = {o.output_size[0], o.output_size[1]};
  a.f[0] = o.spatial_scale;
  a.i[0] = o.sampling_ratio;
  a.b[0] = o.aligned;
  return dispatch1(OpId::roi_align, a, {input, rois});
}
}  // namespace vision

namespace ops {
void register_roi_align_ops() {
  op_def_mut(OpId::roi_align).infer = infer_roi_align;
  op_def_mut(OpId::roi_align).decompose = dec_roi_align;
}
}  // namespace ops

}  // namespace ember
