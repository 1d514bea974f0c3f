// Ops whose output size depends on the values: NonMaxSuppression and Unique. What to keep is
// decided on the host (a sync point, as for shapes); the kept values are gathered with ember's
// index_select, so they keep their dtype and device.
#include <algorithm>
#include <numeric>

#include "ember/onnx/ops.h"
#include "ember/vision/boxes.h"

namespace ember::onnx::detail {
namespace {

// boxes [B, N, 4], scores [B, C, N] -> selected [K, 3] (batch, class, box) int64. Each (batch,
// class) runs ember::vision::nms on the boxes as corners (min, max of either corner order, or
// from center form): IoU is the same whichever axis comes first, so ONNX's [y1, x1, y2, x2]
// passes as it is.
TensorList non_max_suppression(const OpArgs& a) {
  const Node& n = a.node;
  const Tensor& boxes = a[0];
  const Tensor& scores = a[1];
  if (boxes.dim() != 3 || boxes.size(2) != 4 || scores.dim() != 3 ||
      scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
    invalid(n, "expected boxes [B, N, 4] and scores [B, C, N]");
  const int64_t max_out = a.has(2) ? host_ints(a.in[2]).at(0) : 0;
  vision::NmsOptions o;
  o.iou_threshold = a.has(3) ? host_doubles(a.in[3]).at(0) : 0.0;
  if (a.has(4)) o.score_threshold = host_doubles(a.in[4]).at(0);
  o.top_k = std::max<int64_t>(max_out, 0);
  const int64_t B = boxes.size(0), C = scores.size(1);
  Tensor corners = boxes.to(kF64);  // ONNX's reference computes in double
  if (n.i("center_point_box", 0) != 0) {
    corners = vision::box_convert(corners, "cxcywh", "xyxy");
  } else {
    const Tensor p = corners.slice(2, 0, 2), q = corners.slice(2, 2, 4);
    corners = cat({minimum(p, q), maximum(p, q)}, 2);
  }
  const Tensor s = scores.to(kF64);
  TensorList rows{zeros({0, 3}, {kI64, a.device})};
  for (int64_t b = 0; b < B && max_out > 0; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const Tensor keep = vision::nms(corners.select(0, b), s.select(0, b).select(0, c), o);
      if (keep.numel() == 0) continue;
      rows.push_back(stack({full_like(keep, b), full_like(keep, c), keep}, 1));
    }
  return {cat(rows, 0).to(a.device)};
}

// Unique: Y, first-occurrence indices, inverse indices and counts, over elements (no axis) or
// slices along `axis`; sorted ascending (lexicographically for slices) or in order of first
// occurrence.
TensorList unique(const OpArgs& a) {
  const Node& n = a.node;
  Tensor x = a[0];
  const bool has_axis = n.has("axis");
  const int64_t axis = has_axis ? norm_axis(n, n.i("axis", 0), x.dim()) : 0;
  if (!has_axis) x = reshape(x, {-1});
  const int64_t count = x.dim() == 0 ? 1 : x.size(axis);
  // Each slice's values, row by row.
  Tensor rows = reshape(movedim(x, Shape{axis}, Shape{0}), {count, -1});
  const std::vector<double> v = host_doubles(rows);
  const size_t width = count == 0 ? 0 : v.size() / size_t(count);
  auto row_less = [&](int64_t p, int64_t q) {
    return std::lexicographical_compare(v.begin() + p * width, v.begin() + (p + 1) * width,
                                        v.begin() + q * width, v.begin() + (q + 1) * width);
  };
  auto row_eq = [&](int64_t p, int64_t q) {
    return std::equal(v.begin() + p * width, v.begin() + (p + 1) * width, v.begin() + q * width);
  };
  // First occurrences in input order, then (sorted) their order by value.
  std::vector<int64_t> firsts, inverse(static_cast<size_t>(count)), counts;
  for (int64_t i = 0; i < count; ++i) {
    auto it = std::find_if(firsts.begin(), firsts.end(), [&](int64_t f) { return row_eq(f, i); });
    if (it == firsts.end()) {
      inverse[size_t(i)] = int64_t(firsts.size());
      firsts.push_back(i);
      counts.push_back(1);
    } else {
      inverse[size_t(i)] = int64_t(it - firsts.begin());
      counts[size_t(it - firsts.begin())]++;
    }
  }
  if (n.i("sorted", 1)) {
    std::vector<int64_t> order(firsts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t p, int64_t q) { return row_less(firsts[size_t(p)], firsts[size_t(q)]); });
    std::vector<int64_t> rank(order.size()), f2, c2;
    for (size_t k = 0; k < order.size(); ++k) {
      rank[size_t(order[k])] = int64_t(k);
      f2.push_back(firsts[size_t(order[k])]);
      c2.push_back(counts[size_t(order[k])]);
    }
    for (auto& i : inverse) i = rank[size_t(i)];
    firsts = f2;
    counts = c2;
  }
  const int64_t u = int64_t(firsts.size());
  Tensor idx = tensor(firsts, {u}, kI64, a.device);
  Tensor y = index_select(x, axis, idx);
  return {y, idx, tensor(inverse, {count}, kI64, a.device), tensor(counts, {u}, kI64, a.device)};
}

}  // namespace

void add_select_ops(OpTable& t) {
  t["NonMaxSuppression"] = non_max_suppression;
  t["Unique"] = unique;
}

}  // namespace ember::onnx::detail
