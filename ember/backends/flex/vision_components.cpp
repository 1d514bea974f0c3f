// flex kernel: connected_components. One raster scan gives every foreground pixel a provisional
// label, merging the labels of its already-scanned neighbours (left and up; with 8-connectivity
// also up-left and up-right; SAUF's decision tree skips the merges that are known) in a union-find
// whose roots are the smallest label of their set; a
// second pass numbers the roots in order, which is the raster order of each component's first
// pixel (scipy.ndimage.label's order), and gathers each label's area, bounding box and centroid.
#include <algorithm>
#include <vector>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"

namespace ember::flex {
namespace {

int32_t find_root(std::vector<int32_t>& parent, int32_t l) {
  int32_t r = l;
  while (parent[size_t(r)] != r) r = parent[size_t(r)];
  while (parent[size_t(l)] != r) {  // path compression
    const int32_t next = parent[size_t(l)];
    parent[size_t(l)] = r;
    l = next;
  }
  return r;
}

int32_t unite(std::vector<int32_t>& parent, int32_t a, int32_t b) {
  a = find_root(parent, a), b = find_root(parent, b);
  if (a == b) return a;
  if (b < a) std::swap(a, b);
  parent[size_t(b)] = a;
  return a;
}

TensorList k_connected_components(const OpCall& c) {
  const Tensor x = c.inputs[0].contiguous();
  const int64_t H = x.size(0), W = x.size(1), n = H * W;
  const bool eight = c.attrs.i[0] == 8;
  std::vector<uint8_t> fg(static_cast<size_t>(n));
  EMBER_DISPATCH_ALL(x.dtype(), "connected_components", {
    const T* p = static_cast<const T*>(n ? x.raw_data() : nullptr);
    for (int64_t i = 0; i < n; ++i) fg[size_t(i)] = compute_t<T>(p[i]) != compute_t<T>(0);
  });
  Tensor labels = new_output(c, 0);
  int32_t* L = n ? labels.data_ptr<int32_t>() : nullptr;
  std::vector<int32_t> parent{0};
  parent.reserve(size_t(std::min<int64_t>(n / 2 + 2, int64_t(1) << 22)));
  // SAUF's decision tree (Wu et al. 2005): with 8-connectivity the pixel above (b) touches the
  // up-left (a), up-right (c) and left (d) ones, so a foreground b alone decides; otherwise c may
  // join a or d. With 4-connectivity only b and d count.
  auto fresh = [&] {
    const int32_t l = int32_t(parent.size());
    parent.push_back(l);
    return l;
  };
  for (int64_t y = 0; y < H; ++y) {
    const uint8_t* f = fg.data() + y * W;
    const uint8_t* fu = y ? f - W : nullptr;
    int32_t* l = L + y * W;
    const int32_t* lu = y ? l - W : nullptr;
    for (int64_t x0 = 0; x0 < W; ++x0) {
      if (!f[x0]) {
        l[x0] = 0;
        continue;
      }
      const bool b = fu && fu[x0], d = x0 > 0 && f[x0 - 1];
      if (!eight) {
        l[x0] = b ? (d ? unite(parent, lu[x0], l[x0 - 1]) : lu[x0]) : d ? l[x0 - 1] : fresh();
        continue;
      }
      if (b) {
        l[x0] = lu[x0];
        continue;
      }
      const bool a = fu && x0 > 0 && fu[x0 - 1], c = fu && x0 + 1 < W && fu[x0 + 1];
      if (c)
        l[x0] = a   ? unite(parent, lu[x0 + 1], lu[x0 - 1])
                : d ? unite(parent, lu[x0 + 1], l[x0 - 1])
                    : lu[x0 + 1];
      else
        l[x0] = a ? lu[x0 - 1] : d ? l[x0 - 1] : fresh();
    }
  }
  // Roots numbered in order, in place: a label's parent is never larger than it, so in increasing
  // order each parent already holds its set's final id (Wu's flattening).
  int32_t k = 0;
  for (size_t l = 1; l < parent.size(); ++l)
    parent[l] = parent[l] < int32_t(l) ? parent[size_t(parent[l])] : ++k;
  const int64_t rows = int64_t(k) + 1;
  // Statistics gathered straight into the outputs: stats rows hold (min x, min y, max x, max y,
  // area) until the end, centroid rows the sums of x and y.
  Tensor stats = ember::detail::empty_tensor({rows, 5}, DType::I64, c.device);
  Tensor cent = ember::detail::empty_tensor({rows, 2}, DType::F64, c.device);
  int64_t* st = stats.data_ptr<int64_t>();
  double* ce = cent.data_ptr<double>();
  for (int64_t r = 0; r < rows; ++r) {
    st[5 * r] = W, st[5 * r + 1] = H, st[5 * r + 2] = -1, st[5 * r + 3] = -1, st[5 * r + 4] = 0;
    ce[2 * r] = ce[2 * r + 1] = 0;
  }
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x0 = 0; x0 < W; ++x0) {
      const int64_t i = y * W + x0;
      const int32_t id = L[i] ? parent[size_t(L[i])] : 0;
      L[i] = id;
      int64_t* s = st + 5 * int64_t(id);
      s[0] = std::min(s[0], x0), s[1] = std::min(s[1], y);
      s[2] = std::max(s[2], x0), s[3] = std::max(s[3], y);
      ++s[4];
      ce[2 * id] += double(x0), ce[2 * id + 1] += double(y);
    }
  for (int64_t r = 0; r < rows; ++r) {
    int64_t* s = st + 5 * r;
    const double area = double(s[4]);
    if (s[4] == 0) {  // the background of an all-foreground image: zeros, NaN centroid
      s[0] = s[1] = s[2] = s[3] = 0;
    } else {
      s[2] = s[2] - s[0] + 1, s[3] = s[3] - s[1] + 1;
    }
    ce[2 * r] /= area, ce[2 * r + 1] /= area;
  }
  return {labels, stats, cent};
}

}  // namespace

void register_flex_components(BackendImpl& b) {
  b.set_kernel(OpId::connected_components, k_connected_components, kAllDTypes);
}

}  // namespace ember::flex
