// flex kernels: index_put (advanced indexing), masked_fill, masked_select, nonzero, one_hot.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"

namespace ember::flex {
namespace {

// Element offset of linear position i over (sizes, strides).
int64_t offset_at(int64_t i, const Shape& sizes, const Shape& strides) {
  int64_t o = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    o += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return o;
}

// Offsets of every position of `sizes` (row-major) under two stride sets.
void offset_tables(const Shape& sizes, const Shape& s0, const Shape& s1,
                   std::vector<int64_t>& t0, std::vector<int64_t>& t1) {
  const int64_t n = numel_of(sizes);
  t0.resize(size_t(n));
  t1.resize(size_t(n));
  Shape pos(sizes.size(), 0);
  int64_t a = 0, b = 0;
  for (int64_t i = 0; i < n; ++i) {
    t0[size_t(i)] = a;
    t1[size_t(i)] = b;
    for (size_t d = sizes.size(); d-- > 0;) {
      a += s0[d];
      b += s1[d];
      if (++pos[d] < sizes[d]) break;
      a -= s0[d] * sizes[d];
      b -= s1[d] * sizes[d];
      pos[d] = 0;
    }
  }
}

bool is_mask(DType d) { return d == DType::Bool || d == DType::U8; }

// out = x; out[indices] = values (+= with accumulate). Index tensors broadcast together to B; the
// indexed result has shape R = (dims before, B, dims after) when the indexed dims are adjacent,
// else (B, other dims), as in torch. Every target element is written by one thread, walking B in
// order, so repeated indices accumulate (or the last one wins) deterministically.
TensorList k_index_put(const OpCall& c) {
  const char* name = "index_put";
  const Tensor& x = c.inputs[0];
  const bool acc = c.attrs.b[0];
  std::vector<Tensor> per_dim;  // one per dim of x; undefined = ":"
  bool none_selected = false;
  for (size_t k = 2; k < c.inputs.size(); ++k) {
    const Tensor& t = c.inputs[k];
    if (!t.defined() || !is_mask(t.dtype())) {
      per_dim.push_back(t);
    } else if (t.dim() == 0) {  // a 0-d mask covers no dim: true keeps all, false selects none
      none_selected |= !t.item<bool>();
    } else {
      Tensor nz = nonzero(t);
      for (int64_t j = 0; j < t.dim(); ++j) per_dim.push_back(select(nz, 1, j));
    }
  }
  per_dim.resize(size_t(x.dim()));
  std::vector<int64_t> kd;
  Shape B, rest, rest_os;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (per_dim[size_t(d)].defined()) {
      kd.push_back(d);
      B = broadcast_shapes(B, per_dim[size_t(d)].shape(), name);
    } else {
      rest.push_back(x.size(d));
    }
  }
  const bool adjacent = kd.empty() || kd.back() - kd.front() + 1 == int64_t(kd.size());
  const size_t bpos = adjacent && !kd.empty() ? size_t(kd.front()) : 0;
  Shape R;
  for (size_t i = 0; i < bpos; ++i) R.push_back(rest[i]);
  for (int64_t s : B) R.push_back(s);
  for (size_t i = bpos; i < rest.size(); ++i) R.push_back(rest[i]);
  Tensor v = c.inputs[1];
  while (v.dim() > int64_t(R.size()) && v.size(0) == 1) v = select(v, 0, 0);
  if (v.dim() > int64_t(R.size()) || broadcast_shapes(v.shape(), R, name) != R)
    ember::detail::throw_shape(name, "values of shape " + shape_str(c.inputs[1].shape()) +
                                         " cannot be broadcast to the indexed shape " +
                                         shape_str(R));
  std::vector<Tensor> idx;  // checked before anything is written
  for (int64_t d : kd)
    idx.push_back(checked_index(expand(per_dim[size_t(d)], B), x.size(d), true, name, d));
  Tensor out = new_output(c);
  copy_into(out, x);
  const int64_t nb = numel_of(B), nr = numel_of(rest);
  if (none_selected || nb == 0 || nr == 0) return {out};
  v = expand(v, R);
  Shape vb_st, vr_st, ks;
  for (size_t i = 0; i < R.size(); ++i) {
    bool in_b = i >= bpos && i < bpos + B.size();
    (in_b ? vb_st : vr_st).push_back(v.strides()[i]);
  }
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (per_dim[size_t(d)].defined()) ks.push_back(out.strides()[size_t(d)]);
    else rest_os.push_back(out.strides()[size_t(d)]);
  }
  std::vector<int64_t> ro, rv;
  offset_tables(rest, rest_os, vr_st, ro, rv);
  std::vector<const int64_t*> ip;
  for (const Tensor& t : idx) ip.push_back(t.data_ptr<int64_t>());
  // Destination offset of each index position; equal offsets mean the same target elements.
  std::vector<int64_t> obs(static_cast<size_t>(nb));
  parallel_for(nb, 32768, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t ob = 0;
      for (size_t k = 0; k < ip.size(); ++k) ob += ip[k][b] * ks[k];
      obs[size_t(b)] = ob;
    }
  });
  // Many index positions: split them among workers by a hash of their destination, so repeated
  // targets meet in one thread (walking b in order). Few: split the other dims instead.
  const bool by_target = nb >= 64 && nb * nr >= 65536;
  const int64_t parts = by_target ? 4 * num_threads() : 1;
  EMBER_DISPATCH_ALL(x.dtype(), name, {
    using C = compute_t<T>;
    T* o = static_cast<T*>(out.raw_data());
    const T* vp = static_cast<const T*>(v.raw_data());
    auto put = [&](int64_t b, int64_t r0, int64_t r1) {
      const int64_t ob = obs[size_t(b)], vb = offset_at(b, B, vb_st);
      for (int64_t r = r0; r < r1; ++r) {
        T& dst = o[ob + ro[size_t(r)]];
        const T s = vp[vb + rv[size_t(r)]];
        if (!acc) dst = s;
        else if constexpr (std::is_same_v<T, bool>) dst = dst || s;
        else if constexpr (std::is_integral_v<T>) dst = T(uint64_t(dst) + uint64_t(s));
        else dst = T(C(dst) + C(s));
      }
    };
    if (by_target) {
      parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t part = p0; part < p1; ++part)
          for (int64_t b = 0; b < nb; ++b)
            if (int64_t((uint64_t(obs[size_t(b)]) * 0x9E3779B97F4A7C15ull) >> 40) % parts == part)
              put(b, 0, nr);
      });
    } else {
      parallel_for(nr, std::max<int64_t>(1, 32768 / nb), [&](int64_t r0, int64_t r1) {
        for (int64_t b = 0; b < nb; ++b) put(b, r0, r1);
      });
    }
  });
  return {out};
}

template <class T>
void masked_fill_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  const T v = *static_cast<const T*>(ctx);
  for (int64_t i = 0; i < n; ++i) {
    const bool m = *reinterpret_cast<const bool*>(p[2] + i * s[2]);
    *reinterpret_cast<T*>(p[0] + i * s[0]) = m ? v : *reinterpret_cast<const T*>(p[1] + i * s[1]);
  }
}

TensorList k_masked_fill(const OpCall& c) {
  Tensor out = new_output(c);
  Scalar v = c.inputs.size() > 2 ? c.inputs[2].item() : c.attrs.s[0];
  if (is_integral(out.dtype(), true) && v.is_floating() && !std::isfinite(v.to_double()))
    ember::detail::throw_value("masked_fill", "cannot fill a " +
                                                  std::string(dtype_name(out.dtype())) +
                                                  " tensor with " + std::to_string(v.to_double()));
  if (out.numel() == 0) return {out};
  Tensor ins[] = {c.inputs[0], c.inputs[1]};
  Plan p = make_plan(out, ins);
  EMBER_DISPATCH_ALL(out.dtype(), "masked_fill", {
    const T val = T(v.to<compute_t<T>>());
    run_plan(p, masked_fill_loop<T>, &val);
  });
  return {out};
}

// Stream compaction in two parallel passes: count the kept positions per block, then let each
// block write from its prefix offset. emit(i, k) receives position i and its output slot k.
struct Blocks {
  int64_t n = 0, count = 0;
  std::vector<int64_t> start;  // output slot of each block's first kept position
};
template <class Keep>
Blocks count_kept(int64_t n, const Keep& keep) {
  Blocks bl;
  bl.n = n;
  const int64_t nblocks = std::clamp<int64_t>((n + 32767) / 32768, 1, 256);
  std::vector<int64_t> cnt(size_t(nblocks), 0);
  parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t k = 0;
      for (int64_t i = n * b / nblocks, e = n * (b + 1) / nblocks; i < e; ++i) k += keep(i) ? 1 : 0;
      cnt[size_t(b)] = k;
    }
  });
  bl.start.resize(size_t(nblocks));
  for (int64_t b = 0; b < nblocks; ++b) {
    bl.start[size_t(b)] = bl.count;
    bl.count += cnt[size_t(b)];
  }
  return bl;
}
template <class Keep, class Emit>
void emit_kept(const Blocks& bl, const Keep& keep, const Emit& emit) {
  const int64_t nblocks = int64_t(bl.start.size()), n = bl.n;
  parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t k = bl.start[size_t(b)];
      for (int64_t i = n * b / nblocks, e = n * (b + 1) / nblocks; i < e; ++i)
        if (keep(i)) emit(i, k++);
    }
  });
}

TensorList k_masked_select(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Shape s = broadcast_shapes(x.shape(), c.inputs[1].shape(), "masked_select");
  Tensor xb = contiguous(expand(x, s)), mb = contiguous(expand(c.inputs[1], s));
  const bool* m = static_cast<const bool*>(mb.numel() ? mb.raw_data() : nullptr);
  auto keep = [m](int64_t i) { return m[i]; };
  Blocks bl = count_kept(xb.numel(), keep);
  Tensor out = ember::detail::empty_tensor({bl.count}, x.dtype(), c.device);
  if (bl.count == 0) return {out};
  EMBER_DISPATCH_WIDTH(x.dtype(), {
    const W* xp = static_cast<const W*>(xb.raw_data());
    W* o = static_cast<W*>(out.raw_data());
    emit_kept(bl, keep, [&](int64_t i, int64_t k) { o[k] = xp[i]; });
  });
  return {out};
}

TensorList k_nonzero(const OpCall& c) {
  Tensor x = contiguous(c.inputs[0]);
  const Shape& shape = x.shape();
  const int64_t nd = x.dim();
  Tensor out;
  EMBER_DISPATCH_ALL(x.dtype(), "nonzero", {
    const T* xp = static_cast<const T*>(x.numel() ? x.raw_data() : nullptr);
    auto keep = [xp](int64_t i) { return compute_t<T>(xp[i]) != compute_t<T>(0); };
    Blocks bl = count_kept(x.numel(), keep);
    out = ember::detail::empty_tensor({bl.count, nd}, DType::I64, c.device);
    if (bl.count > 0 && nd > 0) {
      int64_t* o = out.data_ptr<int64_t>();
      emit_kept(bl, keep, [&](int64_t i, int64_t k) {
        for (int64_t d = nd; d-- > 0;) {
          o[k * nd + d] = i % shape[size_t(d)];
          i /= shape[size_t(d)];
        }
      });
    }
  });
  return {out};
}

TensorList k_one_hot(const OpCall& c) {
  Tensor x = contiguous(c.inputs[0]);
  const int64_t* xp = x.numel() ? x.data_ptr<int64_t>() : nullptr;
  int64_t lo = 0, hi = -1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, xp[i]);
    hi = std::max(hi, xp[i]);
  }
  const int64_t classes = c.attrs.i[0] == -1 ? hi + 1 : c.attrs.i[0];
  if (lo < 0 || hi >= classes)
    ember::detail::throw_index("one_hot", "class value " + std::to_string(lo < 0 ? lo : hi) +
                                              " is out of range for " + std::to_string(classes) +
                                              " classes");
  Shape s = x.shape();
  s.push_back(classes);
  Tensor out = ember::detail::empty_tensor(s, DType::I64, c.device);
  if (out.numel() == 0) return {out};
  int64_t* o = out.data_ptr<int64_t>();
  std::memset(o, 0, size_t(out.numel()) * sizeof(int64_t));
  parallel_for(x.numel(), 32768, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i * classes + xp[i]] = 1;
  });
  return {out};
}

}  // namespace

void register_flex_masked(BackendImpl& b) {
  b.set_kernel(OpId::index_put, k_index_put, kAllDTypes);
  b.set_kernel(OpId::masked_fill, k_masked_fill, kAllDTypes);
  b.set_kernel(OpId::masked_select, k_masked_select, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::nonzero, k_nonzero, kAllDTypes);
  b.set_kernel(OpId::one_hot, k_one_hot, mask_of(DType::I64));
}

}  // namespace ember::flex
