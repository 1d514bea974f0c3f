// Strided same-width copies and checked index loading for the flex index/layout kernels.
#include "ember/backends/flex/copy.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <vector>

#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/layout.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

template <class W>
void move_loop(char** p, const int64_t* s, int64_t n, const void*) {
  if (s[0] == int64_t(sizeof(W)) && s[1] == int64_t(sizeof(W))) {
    std::memcpy(p[0], p[1], size_t(n) * sizeof(W));
    return;
  }
  if (s[1] == 0) {
    const W v = *reinterpret_cast<const W*>(p[1]);
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<W*>(p[0] + i * s[0]) = v;
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<W*>(p[0] + i * s[0]) = *reinterpret_cast<const W*>(p[1] + i * s[1]);
}

// A plan whose source walks its inner dim with a large stride while another dim is dense (a
// transpose): copied in square tiles so that both sides stay in cache.
bool is_transpose(const Plan& p, int64_t w) {
  const size_t nd = p.shape.size();
  if (nd < 2) return false;
  const int64_t s1 = std::abs(p.strides[1][nd - 1]), s0 = std::abs(p.strides[1][nd - 2]);
  const int64_t d1 = std::abs(p.strides[0][nd - 1]);
  return d1 == w && s1 > 8 * w && s0 < s1 && s0 != 0 && p.shape[nd - 1] >= 8 &&
         p.shape[nd - 2] >= 8;
}

template <class W>
void tiled_copy(const Plan& p) {
  constexpr int64_t T = 64;
  const size_t nd = p.shape.size();
  const int64_t A = p.shape[nd - 2], B = p.shape[nd - 1];
  const int64_t d0 = p.strides[0][nd - 2], d1 = p.strides[0][nd - 1];
  const int64_t s0 = p.strides[1][nd - 2], s1 = p.strides[1][nd - 1];
  const int64_t ta = (A + T - 1) / T, tb = (B + T - 1) / T;
  const int64_t outer = p.numel / (A * B);
  parallel_for(outer * ta * tb, 32, [&](int64_t b0, int64_t e0) {
    for (int64_t item = b0; item < e0; ++item) {
      int64_t o = item / (ta * tb), t = item % (ta * tb);
      char* dst = p.base[0];
      const char* src = p.base[1];
      for (size_t d = nd - 2; d-- > 0;) {  // position of the outer index o
        const int64_t i = o % p.shape[d];
        o /= p.shape[d];
        dst += i * p.strides[0][d];
        src += i * p.strides[1][d];
      }
      const int64_t a0 = t / tb * T, a1 = std::min(A, a0 + T);
      const int64_t c0 = t % tb * T, c1 = std::min(B, c0 + T);
      for (int64_t a = a0; a < a1; ++a)
        for (int64_t c = c0; c < c1; ++c)
          *reinterpret_cast<W*>(dst + a * d0 + c * d1) =
              *reinterpret_cast<const W*>(src + a * s0 + c * s1);
    }
  });
}

std::string extent(int64_t n, int64_t dim) {
  if (dim < 0) return "a tensor of " + std::to_string(n) + " elements";
  return "dim " + std::to_string(dim) + " with size " + std::to_string(n);
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (src.dtype() != dst.dtype()) {
    // Casting copies go through the copy op, which owns the dtype-pair loops. Layers are
    // stripped: this may run on a pool worker, where the dispatcher's "inside a kernel" flag
    // (thread-local) is not set, and a layer must not record a kernel's internals.
    auto bare = [](const Tensor& t) {
      return t.device().has_layers() ? ember::detail::retag(t, t.device().without_layers()) : t;
    };
    Attrs a;
    dispatch(OpId::copy, a, {bare(dst), bare(src)});
    return;
  }
  if (dst.is_contiguous() && src.is_contiguous() && src.shape() == dst.shape()) {
    char* d = static_cast<char*>(dst.raw_data());
    const char* s = static_cast<const char*>(src.raw_data());
    if (d == s) return;
    parallel_for(int64_t(dst.nbytes()), 1 << 20, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, size_t(e - b));
    });
    return;
  }
  Tensor ins[] = {src};
  Plan p = make_plan(dst, ins);
  EMBER_DISPATCH_WIDTH(dst.dtype(), {
    if (is_transpose(p, int64_t(sizeof(W)))) tiled_copy<W>(p);
    else run_plan(p, move_loop<W>, nullptr);
  });
}

Tensor as_1d_if_scalar(const Tensor& t) {
  if (t.dim() != 0) return t;
  return view_of(t, Shape{1}, Shape{1}, t.offset());
}

Tensor checked_index(const Tensor& index, int64_t n, bool wrap, const char* op, int64_t dim) {
  if (index.dtype() != DType::I64 && index.dtype() != DType::I32)
    ember::detail::throw_dtype(op, "expected an int64 or int32 index, found " +
                                       std::string(dtype_name(index.dtype())));
  Tensor idx = index.dtype() == DType::I64 ? contiguous(index) : cast(index, DType::I64);
  bool owned = !idx.is_alias_of(index);
  const int64_t count = idx.numel();
  if (count == 0) return idx;
  const int64_t* p = idx.data_ptr<int64_t>();
  // Min and max per block, in parallel; nothing throws inside the workers.
  const int64_t grain = 1 << 16;
  const int64_t blocks = std::min<int64_t>(64, (count + grain - 1) / grain);
  std::vector<int64_t> lo(size_t(blocks), std::numeric_limits<int64_t>::max());
  std::vector<int64_t> hi(size_t(blocks), std::numeric_limits<int64_t>::min());
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t s = count * b / blocks, e = count * (b + 1) / blocks;
      int64_t l = lo[size_t(b)], h = hi[size_t(b)];
      for (int64_t i = s; i < e; ++i) {
        l = std::min(l, p[i]);
        h = std::max(h, p[i]);
      }
      lo[size_t(b)] = l;
      hi[size_t(b)] = h;
    }
  });
  const int64_t mn = *std::min_element(lo.begin(), lo.end());
  const int64_t mx = *std::max_element(hi.begin(), hi.end());
  const int64_t low = wrap ? -n : 0;
  if (mn < low || mx >= n) {
    for (int64_t i = 0; i < count; ++i)  // report the first bad value, in order
      if (p[i] < low || p[i] >= n)
        ember::detail::throw_index(op, "index " + std::to_string(p[i]) + " is out of bounds for " +
                                           extent(n, dim));
  }
  if (wrap && mn < 0) {
    if (!owned) idx = ember::clone(idx);
    int64_t* q = idx.data_ptr<int64_t>();
    parallel_for(count, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) q[i] += q[i] < 0 ? n : 0;
    });
  }
  return idx;
}

}  // namespace ember::flex
