// flex kernels: sorting and order statistics along a dim — sort, argsort, topk, kthvalue and
// median. Long lanes sort by radix; topk with a small k keeps a heap; everything else copies the
// lane into a (value, index) buffer and orders it there. NaN is larger than every number (last
// ascending, first descending, like torch), and equal values keep their original order, so sort
// is stable and topk/kthvalue/median pick the lowest index among ties.
#include <algorithm>
#include <limits>
#include <vector>

#include "ember/backends/flex/dim_loops.h"
#include "ember/backends/flex/radix_sort.h"
#include "ember/backends/flex/reduce_kernels.h"

namespace ember::flex {
namespace {

template <class C> struct Item {
  C v;
  int64_t i;
};

template <bool kDescending> struct ItemOrder {
  template <class C> bool operator()(const Item<C>& a, const Item<C>& b) const {
    if (kDescending ? less_nan_last(b.v, a.v) : less_nan_last(a.v, b.v)) return true;
    if (kDescending ? less_nan_last(a.v, b.v) : less_nan_last(b.v, a.v)) return false;
    return a.i < b.i;
  }
};

// The lane starting at `p` (n elements, `stride` apart) as (value, index) items, in a buffer
// reused by the calling thread.
template <class T>
std::vector<Item<compute_t<T>>>& gather(const T* p, int64_t n, int64_t stride) {
  thread_local std::vector<Item<compute_t<T>>> buf;
  buf.resize(size_t(n));
  for (int64_t r = 0; r < n; ++r) buf[size_t(r)] = {compute_t<T>(p[r * stride]), r};
  return buf;
}

// Calls f(in, out, buf) for every lane: `in` is the lane's first input element offset, `out` its
// first output offset when the output holds m (instead of n) elements along the dim.
template <class T, class F>
void for_each_lane(const DimView& v, int64_t m, const F& f) {
  const T* xp = static_cast<const T*>(v.x.raw_data());
  for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
    for (int64_t j = j0; j < j0 + len; ++j) {
      auto& buf = gather(xp + o * v.n * v.inner + j, v.n, v.inner);
      f(o * v.n * v.inner + j, o * m * v.inner + j, buf);
    }
  });
}

// Writes the first m items of buf: values (copied from the input, keeping their exact bits)
// and indices, `stride` apart.
template <class T, class Buf>
void write_items(const Buf& buf, int64_t m, const T* in, int64_t stride, T* vals, int64_t* idx,
                 int64_t out) {
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = buf[size_t(r)].i;
    if (vals) vals[out + r * stride] = in[i * stride];
    idx[out + r * stride] = i;
  }
}

// --- sort / argsort / topk ---
// A few of many (topk with small k): one pass keeping the best k in a heap whose top is the worst
// kept, so most elements cost one comparison and no copy.
template <class T, class Order>
void heap_select(const T* p, int64_t n, int64_t stride, int64_t k, const Order& order,
                 std::vector<Item<compute_t<T>>>& heap) {
  heap.clear();
  for (int64_t r = 0; r < n; ++r) {
    Item<compute_t<T>> it{compute_t<T>(p[r * stride]), r};
    if (int64_t(heap.size()) < k) {
      heap.push_back(it);
      std::push_heap(heap.begin(), heap.end(), order);
    } else if (order(it, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), order);
      heap.back() = it;
      std::push_heap(heap.begin(), heap.end(), order);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), order);
}

template <class T, bool kDescending>
void sort_lanes(const DimView& v, int64_t k, T* vals, int64_t* idx) {
  const T* xp = static_cast<const T*>(v.x.raw_data());
  ItemOrder<kDescending> order;
  if (k <= 64 && k * 16 <= v.n) {
    for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
      thread_local std::vector<Item<compute_t<T>>> heap;
      for (int64_t j = j0; j < j0 + len; ++j) {
        const int64_t in = o * v.n * v.inner + j;
        heap_select(xp + in, v.n, v.inner, k, order, heap);
        write_items(heap, k, xp + in, v.inner, vals, idx, o * k * v.inner + j);
      }
    });
    return;
  }
  if (k == v.n && v.n >= 1024 && v.n < (int64_t(1) << 31)) {  // whole long lanes: radix sort
    for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
      thread_local RadixScratch<typename RadixKey<T>::type> s;
      for (int64_t j = j0; j < j0 + len; ++j) {
        const int64_t in = o * v.n * v.inner + j;
        radix_sort_lane(xp + in, v.n, v.inner, kDescending, s);
        for (int64_t r = 0; r < v.n; ++r) {
          const int64_t i = s.idx[size_t(r)];
          if (vals) vals[in + r * v.inner] = xp[in + i * v.inner];
          idx[in + r * v.inner] = i;
        }
      }
    });
    return;
  }
  for_each_lane<T>(v, k, [&](int64_t in, int64_t out, auto& buf) {
    if (k < v.n) std::nth_element(buf.begin(), buf.begin() + k, buf.end(), order);
    std::sort(buf.begin(), buf.begin() + k, order);
    write_items(buf, k, xp + in, v.inner, vals, idx, out);
  });
}

TensorList k_sort(const OpCall& c) {
  const bool values = c.op != OpId::argsort;
  Tensor vals = values ? new_output(c, 0) : Tensor();
  Tensor idx = new_output(c, values ? 1 : 0);
  const Tensor& x = c.inputs[0];
  const DimView v = dim_view(x, wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op)));
  // sort/argsort keep all n in order; topk keeps k, largest first unless b[0] is false.
  const bool topk = c.op == OpId::topk;
  // A 0-d output holds its one element even for k = 0 (torch returns the input then).
  const int64_t k = topk && x.dim() > 0 ? c.attrs.i[1] : v.n;
  const bool descending = c.attrs.b[0];
  if (v.numel() > 0 && k > 0) {
    auto* ip = static_cast<int64_t*>(idx.raw_data());
    EMBER_DISPATCH_ALL(x.dtype(), op_name(c.op), {
      T* vp = values ? static_cast<T*>(vals.raw_data()) : nullptr;
      if (descending) sort_lanes<T, true>(v, k, vp, ip);
      else sort_lanes<T, false>(v, k, vp, ip);
    });
  }
  if (values) return {vals, idx};
  return {idx};
}

// --- kthvalue / median along a dim ---
template <class T>
void select_lanes(const DimView& v, int64_t k, bool median, T* vals, int64_t* idx) {
  const T* xp = static_cast<const T*>(v.x.raw_data());
  for_each_lane<T>(v, 1, [&](int64_t in, int64_t out, auto& buf) {
    if (median) {  // torch's median returns the first NaN when there is one
      auto nan = std::find_if(buf.begin(), buf.end(),
                              [](const auto& e) { return is_nan_value(e.v); });
      if (nan != buf.end()) {
        vals[out] = xp[in + nan->i * v.inner];
        idx[out] = nan->i;
        return;
      }
    }
    std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), ItemOrder<false>{});
    const int64_t i = buf[size_t(k - 1)].i;
    vals[out] = xp[in + i * v.inner];
    idx[out] = i;
  });
}

TensorList k_select(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  if (c.op == OpId::median && !c.attrs.b[1]) {  // whole tensor: lower median, NaN if any
    Tensor out = new_output(c);
    const DimView v = flat_view(x);
    EMBER_DISPATCH_NUMERIC(x.dtype(), "median", {
      using C = compute_t<T>;
      T* op = static_cast<T*>(out.raw_data());
      const T* xp = v.n ? static_cast<const T*>(v.x.raw_data()) : nullptr;
      std::vector<C> buf(size_t(v.n));
      for (int64_t i = 0; i < v.n; ++i) buf[size_t(i)] = C(xp[i]);
      auto nan = std::find_if(buf.begin(), buf.end(), [](C e) { return is_nan_value(e); });
      if (v.n == 0) {  // torch: NaN (an integer result has no NaN: 0)
        if constexpr (std::is_floating_point_v<C>) *op = T(std::numeric_limits<C>::quiet_NaN());
        else *op = T(0);
      } else if (nan != buf.end()) {
        *op = T(*nan);
      } else {
        auto mid = buf.begin() + (v.n - 1) / 2;
        std::nth_element(buf.begin(), mid, buf.end());
        *op = T(*mid);
      }
    });
    return {out};
  }
  Tensor vals = new_output(c, 0), idx = new_output(c, 1);
  const DimView v = dim_view(x, wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op)));
  const bool median = c.op == OpId::median;
  const int64_t k = median ? (v.n - 1) / 2 + 1 : c.attrs.i[1];
  if (v.numel() > 0) {
    auto* ip = static_cast<int64_t*>(idx.raw_data());
    EMBER_DISPATCH_NUMERIC(x.dtype(), op_name(c.op),
                           select_lanes<T>(v, k, median, static_cast<T*>(vals.raw_data()), ip));
  }
  return {vals, idx};
}

}  // namespace

void register_flex_sort(BackendImpl& b) {
  b.set_kernel(OpId::sort, k_sort, kAllDTypes);
  b.set_kernel(OpId::argsort, k_sort, kAllDTypes);
  b.set_kernel(OpId::topk, k_sort, kNumericDTypes);
  b.set_kernel(OpId::kthvalue, k_select, kNumericDTypes);
  b.set_kernel(OpId::median, k_select, kNumericDTypes);
}

}  // namespace ember::flex
