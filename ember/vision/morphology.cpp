// erode and dilate: API, inference, registration; structuring elements and the compound
// operations. Inputs image [..., H, W] (any dtype) and element [kh, kw] (any dtype, nonzero =
// part of the element). Attrs: ints {anchor_y, anchor_x}; mode = detail::MorphBorder; b[0] a
// border value is given, s[0] its value. One output, like the image.
#include "ember/vision/morphology.h"

#include <cmath>
#include <string>
#include <vector>

#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/modes.h"
#include "ember/ops/unary.h"
#include "ember/vision/detail/morphology_border.h"

namespace ember {
namespace {

using vision::detail::MorphBorder;

void infer_morph(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 2) detail::throw_value(name, "expected an image and a structuring element");
  const Tensor &x = in[0], &k = in[1];
  ops::require_defined(x, name, "image");
  ops::require_defined(k, name, "element");
  if (x.dim() < 2)
    detail::throw_shape(name,
                        "expected an image of shape [..., H, W], found " + shape_str(x.shape()));
  if (k.dim() != 2 || k.numel() == 0)
    detail::throw_shape(
        name, "expected a non-empty 2-D structuring element, found shape " + shape_str(k.shape()));
  if (a.ints.size() != 2 || a.ints[0] < 0 || a.ints[0] >= k.size(0) || a.ints[1] < 0 ||
      a.ints[1] >= k.size(1))
    detail::throw_value(name, "anchor " + shape_str(a.ints) + " is outside the element of shape " +
                                  shape_str(k.shape()));
  ops::mode_of(name, a.mode, MorphBorder::Wrap);
  out.add(x.shape(), x.dtype());
}

MorphBorder parse_border(const char* op, const std::string& s) {
  if (s == "constant") return MorphBorder::Constant;
  if (s == "replicate" || s == "nearest") return MorphBorder::Replicate;
  if (s == "reflect") return MorphBorder::Reflect;
  if (s == "reflect_101" || s == "mirror") return MorphBorder::Reflect101;
  if (s == "wrap") return MorphBorder::Wrap;
  detail::throw_value(op, "unknown border '" + s +
                              "' (expected constant, replicate, reflect, reflect_101 or wrap)");
}

Tensor morph(OpId op, const Tensor& x, const Tensor& element, const vision::MorphOptions& o) {
  const char* name = op_name(op);
  if (o.iterations < 0)
    detail::throw_value(name, "iterations must be >= 0, found " + std::to_string(o.iterations));
  Attrs a;
  if (element.defined() && element.dim() == 2) {
    const auto anchor =
        o.anchor.value_or(std::array<int64_t, 2>{element.size(0) / 2, element.size(1) / 2});
    a.ints = {anchor[0], anchor[1]};
  } else {
    a.ints = {0, 0};
  }
  a.mode = uint8_t(parse_border(name, o.border));
  a.b[0] = o.border_value.has_value();
  if (o.border_value) a.s[0] = *o.border_value;
  Tensor y = x;
  for (int64_t i = 0; i < o.iterations; ++i) y = dispatch1(op, a, {y, element});
  return y;
}

// a - b, where b <= a pixelwise: set difference for binary images.
Tensor minus(const Tensor& a, const Tensor& b) {
  return a.dtype() == DType::Bool ? logical_and(a, logical_not(b)) : a - b;
}

}  // namespace

namespace vision {

Tensor structuring_element(MorphShape shape, std::array<int64_t, 2> size,
                           std::optional<std::array<int64_t, 2>> anchor) {
  const int64_t h = size[0], w = size[1];
  if (h <= 0 || w <= 0)
    ember::detail::throw_value("structuring_element",
                               "expected a positive size {height, width}, found {" +
                                   std::to_string(h) + ", " + std::to_string(w) + "}");
  const auto an = anchor.value_or(std::array<int64_t, 2>{h / 2, w / 2});
  if (an[0] < 0 || an[0] >= h || an[1] < 0 || an[1] >= w)
    ember::detail::throw_value("structuring_element", "anchor is outside the element");
  if (h == 1 && w == 1) shape = MorphShape::Rect;
  // cv2.getStructuringElement, row by row: columns [j1, j2) are set.
  const int64_t r = h / 2, c = w / 2;
  const double inv_r2 = r ? 1.0 / (double(r) * double(r)) : 0.0;
  std::vector<uint8_t> v(size_t(h * w), 0);
  for (int64_t i = 0; i < h; ++i) {
    int64_t j1 = 0, j2 = 0;
    if (shape == MorphShape::Rect || (shape == MorphShape::Cross && i == an[0])) {
      j2 = w;
    } else if (shape == MorphShape::Cross) {
      j1 = an[1], j2 = j1 + 1;
    } else {
      const int64_t dy = i - r;
      if (std::abs(dy) <= r) {
        const int64_t dx =
            int64_t(std::lrint(double(c) * std::sqrt(double(r * r - dy * dy) * inv_r2)));
        j1 = std::max<int64_t>(c - dx, 0);
        j2 = std::min<int64_t>(c + dx + 1, w);
      }
    }
    for (int64_t j = j1; j < j2; ++j) v[size_t(i * w + j)] = 1;
  }
  return tensor(v, {h, w}, DType::Bool);
}

Tensor erode(const Tensor& image, const Tensor& element, const MorphOptions& o) {
  return morph(OpId::erode, image, element, o);
}

Tensor dilate(const Tensor& image, const Tensor& element, const MorphOptions& o) {
  return morph(OpId::dilate, image, element, o);
}

Tensor morphology(const Tensor& image, MorphOp op, const Tensor& element, const MorphOptions& o) {
  switch (op) {
    case MorphOp::Erode:
      return erode(image, element, o);
    case MorphOp::Dilate:
      return dilate(image, element, o);
    case MorphOp::Open:
      return dilate(erode(image, element, o), element, o);
    case MorphOp::Close:
      return erode(dilate(image, element, o), element, o);
    case MorphOp::Gradient:
      return minus(dilate(image, element, o), erode(image, element, o));
    case MorphOp::TopHat:
      return minus(image, dilate(erode(image, element, o), element, o));
    case MorphOp::BlackHat:
      return minus(erode(dilate(image, element, o), element, o), image);
  }
  ember::detail::throw_value("morphology", "unknown operation");
}

}  // namespace vision

namespace ops {
void register_morphology_ops() {
  for (OpId op : {OpId::erode, OpId::dilate}) {
    op_def_mut(op).infer = infer_morph;
    op_def_mut(op).differentiable = false;
  }
}
}  // namespace ops

}  // namespace ember
