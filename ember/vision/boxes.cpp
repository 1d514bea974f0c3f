// Box geometry in ember ops (torchvision.ops.boxes' maths, step for step, so results match to
// the last bit where torch's kernels round the same way): areas, the IoU family of pairwise
// matrices, format conversions, clipping.
#include "ember/vision/boxes.h"

#include <numbers>
#include <string>

#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember::vision {
namespace {

void require_boxes(const char* op, const Tensor& b, bool matrix = true) {
  if (!b.defined()) detail::throw_value(op, "expected a defined boxes tensor");
  if (matrix ? b.dim() != 2 || b.size(1) != 4 : b.dim() < 1 || b.size(-1) != 4)
    detail::throw_shape(op, std::string("expected boxes of shape ") +
                                (matrix ? "[N, 4]" : "[..., 4]") + ", found " +
                                shape_str(b.shape()));
  if (b.dtype() == DType::Bool) detail::throw_dtype(op, "expected numeric boxes, found bool");
}

// torchvision's _upcast: f16/bf16 -> f32, i8/i16/u8 -> i32; f32, f64, i32, i64 unchanged.
Tensor upcast(const Tensor& t) {
  const DType d = t.dtype();
  if (d == DType::F16 || d == DType::BF16) return t.to(DType::F32);
  if (d == DType::U8 || d == DType::I8 || d == DType::I16 || d == DType::Bool)
    return t.to(DType::I32);
  return t;
}

Tensor col(const Tensor& b, int64_t i) { return b.select(-1, i); }

struct InterUnion {
  Tensor inter, uni;
};
// Pairwise intersection and union areas ([N, M]) of [N, 4] and [M, 4].
InterUnion inter_union(const Tensor& a, const Tensor& b) {
  const Tensor area_a = box_area(a), area_b = box_area(b);
  const Tensor a3 = a.unsqueeze(1);
  const Tensor lt = maximum(a3.slice(-1, 0, 2), b.slice(-1, 0, 2));
  const Tensor rb = minimum(a3.slice(-1, 2, 4), b.slice(-1, 2, 4));
  const Tensor wh = clamp(upcast(rb - lt), Scalar(0), std::nullopt);
  const Tensor inter = col(wh, 0) * col(wh, 1);
  return {inter, area_a.unsqueeze(1) + area_b - inter};
}

// The [N, M, 2] width/height of the smallest boxes enclosing each pair.
Tensor enclosing_wh(const Tensor& a, const Tensor& b) {
  const Tensor a3 = a.unsqueeze(1);
  const Tensor lti = minimum(a3.slice(-1, 0, 2), b.slice(-1, 0, 2));
  const Tensor rbi = maximum(a3.slice(-1, 2, 4), b.slice(-1, 2, 4));
  return clamp(upcast(rbi - lti), Scalar(0), std::nullopt);
}

struct DiouIou {
  Tensor diou, iou;
};
DiouIou diou_iou(const Tensor& a, const Tensor& b, double eps) {
  const Tensor iou = box_iou(a, b);
  const Tensor whi = enclosing_wh(a, b);
  const Tensor diag = square(col(whi, 0)) + square(col(whi, 1)) + eps;
  const Tensor xp = (col(a, 0) + col(a, 2)) / 2, yp = (col(a, 1) + col(a, 3)) / 2;
  const Tensor xg = (col(b, 0) + col(b, 2)) / 2, yg = (col(b, 1) + col(b, 3)) / 2;
  const Tensor dist = square(upcast(xp.unsqueeze(1) - xg.unsqueeze(0))) +
                      square(upcast(yp.unsqueeze(1) - yg.unsqueeze(0)));
  return {iou - dist / diag, iou};
}

enum class Fmt { XYXY, XYWH, CXCYWH };
Fmt parse_fmt(std::string_view s) {
  if (s == "xyxy") return Fmt::XYXY;
  if (s == "xywh") return Fmt::XYWH;
  if (s == "cxcywh") return Fmt::CXCYWH;
  detail::throw_value(
      "box_convert", "unknown box format '" + std::string(s) + "' (expected xyxy, xywh or cxcywh)");
}

Tensor to_xyxy(const Tensor& b, Fmt f) {
  if (f == Fmt::XYXY) return b;
  const Tensor c0 = col(b, 0), c1 = col(b, 1), w = col(b, 2), h = col(b, 3);
  if (f == Fmt::XYWH) return stack({c0, c1, c0 + w, c1 + h}, -1);
  const Tensor hw = 0.5 * w, hh = 0.5 * h;
  return stack({c0 - hw, c1 - hh, c0 + hw, c1 + hh}, -1);
}

Tensor from_xyxy(const Tensor& b, Fmt f) {
  if (f == Fmt::XYXY) return b;
  const Tensor x1 = col(b, 0), y1 = col(b, 1), x2 = col(b, 2), y2 = col(b, 3);
  if (f == Fmt::XYWH) return stack({x1, y1, x2 - x1, y2 - y1}, -1);
  return stack({(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1}, -1);
}

}  // namespace

Tensor box_area(const Tensor& boxes) {
  require_boxes("box_area", boxes, /*matrix=*/false);
  const Tensor b = upcast(boxes);
  return (col(b, 2) - col(b, 0)) * (col(b, 3) - col(b, 1));
}

Tensor box_iou(const Tensor& a, const Tensor& b) {
  require_boxes("box_iou", a);
  require_boxes("box_iou", b);
  const InterUnion iu = inter_union(a, b);
  return iu.inter / iu.uni;
}

Tensor generalized_box_iou(const Tensor& a, const Tensor& b) {
  require_boxes("generalized_box_iou", a);
  require_boxes("generalized_box_iou", b);
  const InterUnion iu = inter_union(a, b);
  const Tensor iou = iu.inter / iu.uni;
  const Tensor whi = enclosing_wh(a, b);
  const Tensor area_i = col(whi, 0) * col(whi, 1);
  return iou - (area_i - iu.uni) / area_i;
}

Tensor distance_box_iou(const Tensor& a, const Tensor& b, double eps) {
  require_boxes("distance_box_iou", a);
  require_boxes("distance_box_iou", b);
  const Tensor a2 = upcast(a), b2 = upcast(b);
  return diou_iou(a2, b2, eps).diou;
}

Tensor complete_box_iou(const Tensor& a, const Tensor& b, double eps) {
  require_boxes("complete_box_iou", a);
  require_boxes("complete_box_iou", b);
  const Tensor a2 = upcast(a), b2 = upcast(b);
  const DiouIou d = diou_iou(a2, b2, eps);
  const Tensor w_pred = (col(a2, 2) - col(a2, 0)).unsqueeze(1);
  const Tensor h_pred = (col(a2, 3) - col(a2, 1)).unsqueeze(1);
  const Tensor w_gt = col(b2, 2) - col(b2, 0), h_gt = col(b2, 3) - col(b2, 1);
  const double k = 4 / (std::numbers::pi * std::numbers::pi);
  const Tensor v = k * square(atan(w_pred / h_pred) - atan(w_gt / h_gt));
  const Tensor alpha = (v / (1 - d.iou + v + eps)).detach();  // torchvision: under no_grad
  return d.diou - alpha * v;
}

Tensor box_convert(const Tensor& boxes, std::string_view in_fmt, std::string_view out_fmt) {
  require_boxes("box_convert", boxes, /*matrix=*/false);
  const Fmt in = parse_fmt(in_fmt), out = parse_fmt(out_fmt);
  if (in == out) return boxes;
  return from_xyxy(to_xyxy(boxes, in), out);
}

Tensor clip_boxes_to_image(const Tensor& boxes, std::array<int64_t, 2> size) {
  require_boxes("clip_boxes_to_image", boxes, /*matrix=*/false);
  const Tensor bx = clamp(boxes.slice(-1, 0, 4, 2), Scalar(0), Scalar(size[1]));
  const Tensor by = clamp(boxes.slice(-1, 1, 4, 2), Scalar(0), Scalar(size[0]));
  return stack({bx, by}, boxes.dim()).reshape(boxes.shape());
}

Tensor masks_to_boxes(const Tensor& masks) {
  if (!masks.defined() || masks.dim() != 3)
    detail::throw_shape("masks_to_boxes",
                        "expected masks of shape [N, H, W], found " +
                            (masks.defined() ? shape_str(masks.shape()) : "none"));
  const Tensor m = ne(masks, Scalar(0));
  const Tensor rows = any(m, {2}).to(DType::I32), cols = any(m, {1}).to(DType::I32);
  const int64_t h = masks.size(1), w = masks.size(2);
  auto first = [](const Tensor& t) { return argmax(t, 1); };
  auto last = [](const Tensor& t, int64_t n) { return (n - 1) - argmax(flip(t, {1}), 1); };
  const Tensor box = stack({first(cols), first(rows), last(cols, w), last(rows, h)}, 1);
  return where(any(m, {1, 2}).unsqueeze(1), box, Scalar(0)).to(DType::F32);
}

Tensor remove_small_boxes(const Tensor& boxes, double min_size) {
  require_boxes("remove_small_boxes", boxes);
  const Tensor ws = col(boxes, 2) - col(boxes, 0), hs = col(boxes, 3) - col(boxes, 1);
  return nonzero(logical_and(ge(ws, Scalar(min_size)), ge(hs, Scalar(min_size)))).reshape({-1});
}

}  // namespace ember::vision
