// nms: API, inference, registration. Inputs boxes [N, 4], scores [N] and idxs [N] (categories;
// undefined: one category). Attrs: f[0] iou_threshold; b[0] a score threshold is set, f[1] its
// value; i[0] top_k (-1: all). One output: the kept indices, int64 [K] (K is data: -1 until the
// kernel runs).
#include <cmath>
#include <string>

#include "ember/ops/common.h"
#include "ember/vision/boxes.h"

namespace ember {
namespace {

void infer_nms(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 3) detail::throw_value(name, "expected boxes, scores and idxs");
  const Tensor &boxes = in[0], &scores = in[1], &idxs = in[2];
  ops::require_defined(boxes, name, "boxes");
  ops::require_defined(scores, name, "scores");
  if (boxes.dim() != 2 || boxes.size(1) != 4)
    detail::throw_shape(name, "expected boxes of shape [N, 4], found " + shape_str(boxes.shape()));
  const int64_t n = boxes.size(0);
  if (scores.dim() != 1 || scores.size(0) != n)
    detail::throw_shape(name, "expected scores of shape [" + std::to_string(n) +
                                  "] (one per box), found " + shape_str(scores.shape()));
  if (!is_floating(boxes.dtype()) || !is_floating(scores.dtype()))
    detail::throw_dtype(name, std::string("expected floating boxes and scores, found ") +
                                  std::string(dtype_name(boxes.dtype())) + " and " +
                                  std::string(dtype_name(scores.dtype())));
  if (idxs.defined()) {
    if (idxs.dim() != 1 || idxs.size(0) != n)
      detail::throw_shape(name, "expected idxs of shape [" + std::to_string(n) +
                                    "] (one per box), found " + shape_str(idxs.shape()));
    if (!is_integral(idxs.dtype()))
      detail::throw_dtype(name, std::string("expected integer idxs, found ") +
                                    std::string(dtype_name(idxs.dtype())));
  }
  if (std::isnan(a.f[0])) detail::throw_value(name, "iou_threshold is NaN");
  if (a.i[0] < -1)
    detail::throw_value(name, "top_k must be -1 (all) or >= 0, found " + std::to_string(a.i[0]));
  out.add({-1}, DType::I64);
}

Tensor run_nms(const Tensor& boxes, const Tensor& scores, const Tensor& idxs,
               const vision::NmsOptions& o) {
  Attrs a;
  a.f[0] = o.iou_threshold;
  a.b[0] = o.score_threshold.has_value();
  a.f[1] = o.score_threshold.value_or(0.0);
  a.i[0] = o.top_k;
  return dispatch1(OpId::nms, a, {boxes, scores, idxs});
}

}  // namespace

namespace vision {
Tensor nms(const Tensor& boxes, const Tensor& scores, const NmsOptions& o) {
  return run_nms(boxes, scores, Tensor(), o);
}
Tensor batched_nms(const Tensor& boxes, const Tensor& scores, const Tensor& idxs,
                   const NmsOptions& o) {
  if (!idxs.defined()) detail::throw_value("nms", "batched_nms expects a defined idxs tensor");
  return run_nms(boxes, scores, idxs, o);
}
}  // namespace vision

namespace ops {
void register_nms_ops() {
  op_def_mut(OpId::nms).infer = infer_nms;
  op_def_mut(OpId::nms).differentiable = false;
}
}  // namespace ops

}  // namespace ember
