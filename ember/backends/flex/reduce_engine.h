#pragma once
// The flex reduction engine: reduces `x` over a set of dims into a contiguous output, choosing
// between a contiguous inner reduction (vectorised lanes), a column reduction (kept inner dim
// contiguous) and a general strided walk. Parallel over outputs, or over the reduction itself
// when there are few outputs. Every path reduces in short chunks whose results combine pairwise,
// so a float sum of n elements errs by about log(n) roundings rather than n.
#include <algorithm>
#include <memory>
#include <vector>

#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {

/// Dims split into kept and reduced groups, each coalesced, strides in elements.
struct ReduceGeom {
  Shape kept_sizes, kept_strides;  // outer to inner
  Shape red_sizes, red_strides;    // outer to inner
  int64_t n_out = 1, n_red = 1;
};
ReduceGeom reduce_geom(const Tensor& x, const Shape& dims);

/// Element offset of linear index `i` over (sizes, strides).
inline int64_t offset_of(int64_t i, const Shape& sizes, const Shape& strides) {
  int64_t o = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    o += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return o;
}

/// Pairwise (cascade) combination of a stream of partial results, like a binary counter: the
/// rounding error of a float sum grows with log(parts) rather than with the number of parts.
template <class Op>
class Cascade {
 public:
  using Acc = typename Op::Acc;
  explicit Cascade(const Op& op) : op_(op) {}
  void push(Acc a) {
    int level = 0;
    for (; used_ & (uint64_t(1) << level); ++level) {
      a = op_.merge(levels_[level], a);  // the older part stays on the left
      used_ &= ~(uint64_t(1) << level);
    }
    levels_[level] = a;
    used_ |= uint64_t(1) << level;
  }
  Acc result() const {
    Acc acc = op_.init();
    for (int level = 63; level >= 0; --level)
      if (used_ & (uint64_t(1) << level)) acc = op_.merge(acc, levels_[level]);
    return acc;
  }

 private:
  const Op& op_;
  Acc levels_[64];
  uint64_t used_ = 0;
};

/// Op concept: using Acc; Acc init() const; Acc step(Acc, Acc x) const (x already converted);
/// Acc merge(Acc, Acc) const; Out done(Acc, int64_t n) const.
template <class T, class Out, class Op>
void reduce_run(const Tensor& x, const Shape& dims, const Tensor& out, const Op& op) {
  using Acc = typename Op::Acc;
  const ReduceGeom g = reduce_geom(x, dims);
  const T* xp = static_cast<const T*>(x.numel() ? x.raw_data() : nullptr);
  Out* op_ = static_cast<Out*>(out.raw_data());
  const int64_t n_out = g.n_out, n_red = g.n_red;
  if (n_out == 0) return;
  if (n_red == 0) {
    for (int64_t o = 0; o < n_out; ++o) op_[o] = op.done(op.init(), 0);
    return;
  }
  const bool inner_contig = !g.red_strides.empty() && g.red_strides.back() == 1;
  // Reduces `len` contiguous elements starting at p with 16 independent lanes.
  auto lanes_block = [&](const T* p, int64_t len) {
    constexpr int L = 16;
    Acc lanes[L];
    for (int j = 0; j < L; ++j) lanes[j] = op.init();
    int64_t i = 0;
    for (; i + L <= len; i += L)
      for (int j = 0; j < L; ++j) lanes[j] = op.step(lanes[j], Acc(compute_t<T>(p[i + j])));
    for (; i < len; ++i) lanes[0] = op.step(lanes[0], Acc(compute_t<T>(p[i])));
    for (int w = L / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) lanes[j] = op.merge(lanes[j], lanes[j + w]);
    return lanes[0];
  };
  // Long runs go in cache-sized chunks combined pairwise, so float sums stay accurate.
  constexpr int64_t kChunk = 4096;
  auto contiguous_block = [&](const T* p, int64_t len) {
    if (len <= kChunk) return lanes_block(p, len);
    Cascade<Op> cascade(op);
    for (int64_t c0 = 0; c0 < len; c0 += kChunk)
      cascade.push(lanes_block(p + c0, std::min(kChunk, len - c0)));
    return cascade.result();
  };
  const int64_t inner_len = inner_contig ? g.red_sizes.back() : 1;
  const int64_t outer_red = n_red / inner_len;
  Shape outer_sizes = g.red_sizes, outer_strides = g.red_strides;
  if (inner_contig) {
    outer_sizes.resize(outer_sizes.size() - 1);
    outer_strides.resize(outer_strides.size() - 1);
  }
  // Reduces the whole reduction set for output o (sequentially).
  auto reduce_one = [&](int64_t o) {
    const T* base = xp + offset_of(o, g.kept_sizes, g.kept_strides);
    Acc acc = op.init();
    if (inner_contig && outer_red > 1) {
      Cascade<Op> cascade(op);
      for (int64_t r = 0; r < outer_red; ++r)
        cascade.push(contiguous_block(base + offset_of(r, outer_sizes, outer_strides), inner_len));
      acc = cascade.result();
    } else if (inner_contig) {
      acc = contiguous_block(base, inner_len);
    } else {  // strided: steps in chunks, combined pairwise
      Cascade<Op> cascade(op);
      for (int64_t c0 = 0; c0 < n_red; c0 += kChunk) {
        Acc part = op.init();
        for (int64_t r = c0; r < std::min(n_red, c0 + kChunk); ++r)
          part = op.step(part, Acc(compute_t<T>(base[offset_of(r, g.red_sizes, g.red_strides)])));
        cascade.push(part);
      }
      acc = cascade.result();
    }
    return acc;
  };
  const int nt = num_threads();
  if (n_out < nt && n_red >= 65536 && inner_contig && outer_red == 1) {
    // Few outputs, long contiguous reductions: split each one across threads in blocks.
    constexpr int64_t kBlock = kChunk;
    for (int64_t o = 0; o < n_out; ++o) {
      const T* base = xp + offset_of(o, g.kept_sizes, g.kept_strides);
      int64_t nblocks = (inner_len + kBlock - 1) / kBlock;
      // Not std::vector: vector<bool> packs bits, and threads writing neighbouring bits race.
      std::unique_ptr<Acc[]> partial(new Acc[size_t(nblocks)]);
      parallel_for(nblocks, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k)
          partial[size_t(k)] =
              contiguous_block(base + k * kBlock, std::min(kBlock, inner_len - k * kBlock));
      });
      Cascade<Op> cascade(op);
      for (int64_t k = 0; k < nblocks; ++k) cascade.push(partial[size_t(k)]);
      op_[o] = op.done(cascade.result(), n_red);
    }
    return;
  }
  const bool column = !inner_contig && !g.kept_strides.empty() && g.kept_strides.back() == 1 &&
                      g.kept_sizes.back() >= 16;
  if (column) {
    // Kept inner dim contiguous: sweep the reduced index outside, the kept run inside.
    const int64_t run = g.kept_sizes.back();
    const int64_t outer_kept = n_out / run;
    Shape ok_sizes = g.kept_sizes, ok_strides = g.kept_strides;
    ok_sizes.resize(ok_sizes.size() - 1);
    ok_strides.resize(ok_strides.size() - 1);
    parallel_for(outer_kept * ((run + 255) / 256), 1, [&](int64_t b, int64_t e) {
      // Rows go in chunks of 256 whose partial results combine pairwise (a cascade per column,
      // sharing one occupancy mask), keeping long float sums accurate like the lanes' chunks.
      constexpr int64_t kRows = 256;
      int depth = 1;
      while ((int64_t(1) << (depth - 1)) * kRows < n_red) ++depth;
      // Plain arrays, not std::vector (whose bool specialisation hands out proxies).
      std::unique_ptr<Acc[]> part_buf(new Acc[256]), levels(new Acc[size_t(depth) * 256]);
      Acc* part = part_buf.get();
      for (int64_t t = b; t < e; ++t) {
        int64_t ko = t / ((run + 255) / 256), j0 = (t % ((run + 255) / 256)) * 256;
        int64_t len = std::min<int64_t>(256, run - j0);
        const T* base = xp + offset_of(ko, ok_sizes, ok_strides) + j0;
        uint64_t used = 0;
        for (int64_t r0 = 0; r0 < n_red; r0 += kRows) {
          std::fill(part, part + len, op.init());
          for (int64_t r = r0; r < std::min(n_red, r0 + kRows); ++r) {
            const T* row = base + offset_of(r, g.red_sizes, g.red_strides);
            for (int64_t j = 0; j < len; ++j)
              part[j] = op.step(part[j], Acc(compute_t<T>(row[j])));
          }
          int level = 0;
          for (; used & (uint64_t(1) << level); ++level) {
            Acc* lv = levels.get() + level * 256;
            for (int64_t j = 0; j < len; ++j) part[j] = op.merge(lv[j], part[j]);
            used &= ~(uint64_t(1) << level);
          }
          std::copy(part, part + len, levels.get() + level * 256);
          used |= uint64_t(1) << level;
        }
        std::fill(part, part + len, op.init());
        for (int level = depth - 1; level >= 0; --level) {
          if (!(used & (uint64_t(1) << level))) continue;
          const Acc* lv = levels.get() + level * 256;
          for (int64_t j = 0; j < len; ++j) part[j] = op.merge(part[j], lv[j]);
        }
        for (int64_t j = 0; j < len; ++j) op_[ko * run + j0 + j] = op.done(part[j], n_red);
      }
    });
    return;
  }
  parallel_for(n_out, std::max<int64_t>(1, 32768 / std::max<int64_t>(n_red, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t o = b; o < e; ++o) op_[o] = op.done(reduce_one(o), n_red);
               });
}

}  // namespace ember::flex
