// Ops whose output size depends on the values: NonMaxSuppression and Unique. What to keep is
// decided on the host (a sync point, as for shapes); the kept values are gathered with ember's
// index_select, so they keep their dtype and device.
#include <algorithm>
#include <numeric>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// One box as corners (min/max), from [y1, x1, y2, x2] in any corner order or center form.
struct Box {
  double y0, x0, y1, x1;
  double area() const { return (y1 - y0) * (x1 - x0); }
};

Box box_at(const std::vector<double>& v, size_t i, bool center) {
  const double* b = v.data() + 4 * i;
  if (center) return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  if (h <= 0 || w <= 0) return 0;
  const double inter = h * w, uni = a.area() + b.area() - inter;
  return uni <= 0 ? 0 : inter / uni;
}

// boxes [B, N, 4], scores [B, C, N] -> selected [K, 3] (batch, class, box) int64.
TensorList non_max_suppression(const OpArgs& a) {
  const Node& n = a.node;
  const Tensor& boxes = a[0];
  const Tensor& scores = a[1];
  if (boxes.dim() != 3 || boxes.size(2) != 4 || scores.dim() != 3 ||
      scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
    invalid(n, "expected boxes [B, N, 4] and scores [B, C, N]");
  const int64_t max_out = a.has(2) ? host_ints(a.in[2]).at(0) : 0;
  const double iou_max = a.has(3) ? host_doubles(a.in[3]).at(0) : 0.0;
  const bool thresholded = a.has(4);
  const double score_min = thresholded ? host_doubles(a.in[4]).at(0) : 0.0;
  const bool center = n.i("center_point_box", 0) != 0;
  const int64_t B = boxes.size(0), N = boxes.size(1), C = scores.size(1);
  const std::vector<double> bv = host_doubles(boxes), sv = host_doubles(scores);
  std::vector<int64_t> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const double* s = sv.data() + (b * C + c) * N;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < N; ++i)
        if (!thresholded || s[i] > score_min) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<Box> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= max_out) break;
        Box bx = box_at(bv, size_t(b * N + i), center);
        bool suppressed = std::any_of(kept.begin(), kept.end(),
                                      [&](const Box& k) { return iou(k, bx) > iou_max; });
        if (suppressed) continue;
        kept.push_back(bx);
        out.insert(out.end(), {b, c, i});
      }
    }
  return {tensor(out, {int64_t(out.size() / 3), 3}, kI64, a.device)};
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
