// flex kernel: nms. Boxes are visited in decreasing score order (a stable sort: ties keep index
// order; NaN scores sort first, as torch's descending sort puts them); each box not yet
// suppressed is kept and suppresses the later boxes of its category whose IoU with it exceeds the
// threshold. The IoU is torchvision's expression in the boxes' compute type, so a pair exactly at
// the threshold falls the same way.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"

namespace ember::flex {
namespace {

// Kept positions (into `order`) of one category's boxes, all in decreasing score order.
template <class C>
void suppress(const C* b, const std::vector<C>& area, const std::vector<int64_t>& members,
              double thr, std::vector<char>& kept) {
  std::vector<char> dead(members.size(), 0);
  for (size_t p = 0; p < members.size(); ++p) {
    if (dead[p]) continue;
    const int64_t i = members[p];
    kept[size_t(i)] = 1;
    const C ix1 = b[4 * i], iy1 = b[4 * i + 1], ix2 = b[4 * i + 2], iy2 = b[4 * i + 3];
    const C ia = area[size_t(i)];
    for (size_t q = p + 1; q < members.size(); ++q) {
      if (dead[q]) continue;
      const int64_t j = members[q];
      const C xx1 = std::max(ix1, b[4 * j]), yy1 = std::max(iy1, b[4 * j + 1]);
      const C xx2 = std::min(ix2, b[4 * j + 2]), yy2 = std::min(iy2, b[4 * j + 3]);
      const C w = std::max(C(0), C(xx2 - xx1)), h = std::max(C(0), C(yy2 - yy1));
      const C inter = C(w * h);
      const C ovr = C(inter / C(C(ia + area[size_t(j)]) - inter));
      if (double(ovr) > thr) dead[q] = 1;
    }
  }
}

template <class T>
std::vector<int64_t> nms_indices(const Tensor& boxes, const std::vector<double>& s,
                                 const std::vector<int64_t>& cls, const Attrs& a) {
  using C = compute_t<T>;
  const int64_t n = boxes.size(0);
  std::vector<C> b(static_cast<size_t>(4 * n)), area(static_cast<size_t>(n));
  const T* bp = static_cast<const T*>(boxes.raw_data());
  for (int64_t i = 0; i < 4 * n; ++i) b[size_t(i)] = C(bp[i]);
  for (int64_t i = 0; i < n; ++i)
    area[size_t(i)] = C(C(b[4 * i + 2] - b[4 * i]) * C(b[4 * i + 3] - b[4 * i + 1]));
  // Candidates (above the score threshold), in decreasing score order.
  std::vector<int64_t> order;
  order.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    if (!a.b[0] || s[size_t(i)] > a.f[1]) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    const double sx = s[size_t(x)], sy = s[size_t(y)];
    if (std::isnan(sx) || std::isnan(sy)) return std::isnan(sx) && !std::isnan(sy);
    return sx > sy;
  });
  // Each category's members in that order (one category without idxs).
  std::vector<char> kept(size_t(n), 0);
  if (cls.empty()) {
    suppress<C>(b.data(), area, order, a.f[0], kept);
  } else {
    std::vector<int64_t> by_cls(order);
    std::stable_sort(by_cls.begin(), by_cls.end(),
                     [&](int64_t x, int64_t y) { return cls[size_t(x)] < cls[size_t(y)]; });
    std::vector<int64_t> members;
    for (size_t p = 0; p < by_cls.size();) {
      size_t q = p;
      members.clear();
      while (q < by_cls.size() && cls[size_t(by_cls[q])] == cls[size_t(by_cls[p])])
        members.push_back(by_cls[q++]);
      suppress<C>(b.data(), area, members, a.f[0], kept);
      p = q;
    }
  }
  std::vector<int64_t> out;
  for (int64_t i : order) {
    if (a.i[0] >= 0 && int64_t(out.size()) >= a.i[0]) break;
    if (kept[size_t(i)]) out.push_back(i);
  }
  return out;
}

TensorList k_nms(const OpCall& c) {
  const Tensor boxes = c.inputs[0].contiguous();
  const std::vector<double> s = c.inputs[1].to_vector<double>();
  std::vector<int64_t> cls;
  if (c.inputs[2].defined()) cls = c.inputs[2].to_vector<int64_t>();
  std::vector<int64_t> keep;
  EMBER_DISPATCH_FLOAT(boxes.dtype(), "nms", keep = nms_indices<T>(boxes, s, cls, c.attrs));
  Tensor out = ember::detail::empty_tensor({int64_t(keep.size())}, DType::I64, c.device);
  std::copy(keep.begin(), keep.end(), out.numel() ? out.data_ptr<int64_t>() : nullptr);
  return {out};
}

}  // namespace

void register_flex_nms(BackendImpl& b) { b.set_kernel(OpId::nms, k_nms, kFloatDTypes); }

}  // namespace ember::flex
