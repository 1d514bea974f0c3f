// The row-reduce template.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/templates/row_reduce.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <numeric>

#include "ember/error.h"
#include "ember/kl/templates/combine.h"
#include "ember/kl/templates/common.h"

namespace ember::kl {
namespace {

constexpr uint32_t kRowBit = 1u << 31;
using Mode = RowReduceKey::Mode;

// Merges neighbouring dims of `dims` (outermost first) that every operand walks contiguously.
void collapse_dims(const std::vector<int64_t>& ext, const std::vector<std::vector<int64_t>>& st,
                   std::vector<int64_t>& out_ext, std::vector<std::vector<int64_t>>& out_st) {
  out_ext.clear();
  out_st.assign(st.size(), {});
  for (size_t i = ext.size(); i-- > 0;) {
    if (ext[i] == 1) continue;
    bool merge = !out_ext.empty();
    for (size_t k = 0; merge && k < st.size(); ++k) merge = st[k][i] == out_st[k].front() * out_ext.front();
    if (merge) {
      out_ext.front() *= ext[i];
      continue;
    }
    out_ext.insert(out_ext.begin(), ext[i]);
    for (size_t k = 0; k < st.size(); ++k) out_st[k].insert(out_st[k].begin(), st[k][i]);
  }
}

// Whether operand k is read (or written) along the row in pass `pass` (1: reducing, 2: after).
bool walks_row(const RowReduceKey& key, size_t k) {
  const size_t nin = key.inputs.size();
  if (k < nin) return true;
  return key.broadcast_back;
}

bool outer_param(const RowReduceKey& key, size_t k, int d) {
  if (key.broadcast[k] & (1u << d)) return false;
  return !(key.mode == Mode::Col && d == key.outer_rank - 1);  // the lane dim: stride 1
}
bool row_param(const RowReduceKey& key, size_t k) {
  if (!walks_row(key, k) || (key.broadcast[k] & kRowBit)) return false;
  return !(key.mode == Mode::Row && key.lanes > 1);  // vectors along the row: stride 1
}

class RowEmitter {
 public:
  RowEmitter(Builder& kb, const RowReduceKey& key, const RowPrologueAt& pro, const RowEpilogue& epi)
      : kb_(kb), key_(key), pro_(pro), epi_(epi) {}

  void build() {
    const size_t nin = key_.inputs.size(), nops = nin + key_.outputs.size();
    for (size_t i = 0; i < nin; ++i) kb_.buffer(key_.inputs[i], Access::Read, "in" + std::to_string(i));
    for (size_t i = 0; i < key_.outputs.size(); ++i)
      kb_.buffer(key_.outputs[i], Access::Write, "out" + std::to_string(i));
    if (key_.status) status_ = kb_.buffer(DType::I64, Access::ReadWrite, "status");
    for (size_t i = 0; i < key_.scalars.size(); ++i) scalars_.push_back(kb_.scalar(key_.scalars[i]));
    const int r = key_.outer_rank;
    for (int d = 0; d < r; ++d) outer_.push_back(kb_.index("outer" + std::to_string(d)));
    row_ = kb_.index("row");
    ostride_.assign(nops, std::vector<Expr>(size_t(r)));
    rstride_.assign(nops, Expr());
    for (size_t k = 0; k < nops; ++k) {
      for (int d = 0; d < r; ++d)
        if (outer_param(key_, k, d)) ostride_[k][size_t(d)] = kb_.index("ostride" + std::to_string(k) + "_" + std::to_string(d));
      if (row_param(key_, k)) rstride_[k] = kb_.index("rstride" + std::to_string(k));
    }
    if (key_.gpu && key_.mode == Mode::Row) return gpu_rows();
    if (key_.gpu && key_.mode == Mode::Col && key_.group > 1) return gpu_cols();
    for_range(kb_.work_begin(), kb_.work_end(), [&](Expr item) {
      if (key_.mode == Mode::Row) return row_item(item);
      col_item(item);
    });
  }

 private:
  // Element j of the row for operand k, from its row base: `lanes` along the row (Row vectors),
  // across rows (Col), or one.
  Expr at(size_t k, const Expr& base, const Expr& j) {
    if (key_.broadcast[k] & kRowBit) return base;
    if (rstride_[k].valid()) return base + j * rstride_[k];
    return base + j;
  }
  Expr load(size_t k, const Expr& base, const Expr& j, int lanes, bool across) {
    // Across rows, an operand broadcast over the lane dim is one value for every lane.
    const bool one = across ? (key_.broadcast[k] & (1u << (key_.outer_rank - 1))) != 0
                            : (key_.broadcast[k] & kRowBit) != 0;
    return kb_.load(int(k), at(k, base, j), one ? 1 : lanes);
  }
  std::vector<Expr> loads(const std::vector<Expr>& base, const Expr& j, size_t n, int lanes, bool across) {
    std::vector<Expr> v;
    for (size_t k = 0; k < n; ++k) v.push_back(load(k, base[k], j, lanes, across));
    return v;
  }
  std::vector<Expr> prologue(std::span<const Expr> in, const Expr& pos) {
    std::vector<Expr> v = pro_(in, scalars_, pos);
    const size_t extra = key_.status ? 2 : 0;
    if (v.size() != key_.reductions.size() + extra)
      ember::detail::throw_value("kl", "row-reduce prologue returned " + std::to_string(v.size()) + " values for " +
                                    std::to_string(key_.reductions.size()) + " reductions" +
                                    (extra ? " and a status" : ""));
    if (extra) {
      const Expr failed = v[v.size() - 2], detail = v.back();
      v.resize(v.size() - 2);
      const int lanes = std::max<int>(failed.lanes(), detail.lanes());
      for (int l = 0; l < lanes; ++l) {
        const Expr f = failed.lanes() > 1 ? extract(failed, l) : failed;
        const Expr d = detail.lanes() > 1 ? extract(detail, l) : detail;
        if_(f, [&] {
          kb_.store(status_, Expr(1), cast(d, DType::I64), {}, {}, true);
          kb_.store(status_, Expr(0), Expr(int64_t(1)), {}, {}, true);
        });
      }
    }
    return v;
  }

  // Reduces the row(s) at `base` over [j0, j1) into `states` (Vars of `lanes` lanes).
  void reduce_range(const std::vector<Expr>& base, std::vector<std::vector<Var>>& states, const Expr& j0,
                    const Expr& j1, int lanes, int64_t step, bool across) {
    for_range(j0, j1, [&](Expr j) { reduce_at(base, states, j, lanes, across); }, step);
  }
  // One update of `states` with the row's `lanes` values at j (along the row, or across rows).
  void reduce_at(const std::vector<Expr>& base, std::vector<std::vector<Var>>& states, const Expr& j,
                 int lanes, bool across) {
    Expr idx = j;
    if (lanes > 1 && !across) idx = broadcast(j, lanes) + iota(DType::I64, lanes);
    // Across rows every lane is at the same position.
    const Expr pos = lanes > 1 && across ? broadcast(j, lanes) : idx;
    std::vector<Expr> v = prologue(loads(base, j, size_t(key_.prologue_inputs), lanes, across), pos);
    for (size_t r = 0; r < states.size(); ++r) {
      State s;
      for (const Var& x : states[r]) s.push_back(x.get());
      State n = combine_update(key_.reductions[r], s, broadcast(v[r], lanes), idx);
      for (size_t i = 0; i < n.size(); ++i) states[r][i].set(n[i]);
    }
  }
  std::vector<std::vector<Var>> fresh(int lanes) {
    std::vector<std::vector<Var>> s;
    for (const Reduction& r : key_.reductions) {
      std::vector<Var> vars;
      for (const Expr& e : combine_identity(r, lanes)) vars.push_back(kb_.var(e));
      s.push_back(std::move(vars));
    }
    return s;
  }
  static std::vector<State> read(const std::vector<std::vector<Var>>& s) {
    std::vector<State> out;
    for (const auto& vars : s) {
      State st;
      for (const Var& v : vars) st.push_back(v.get());
      out.push_back(std::move(st));
    }
    return out;
  }

  // The reduction of one row from `base`, as the epilogue's values (scalars).
  std::vector<Expr> reduce_row(const std::vector<Expr>& base) {
    std::vector<State> done;
    if (key_.lanes > 1) {  // Row mode vectors along the row, then lanes and tail merged
      const int L = key_.lanes;
      // kAcc states, each taking every kAcc-th vector, so that no update waits on the one
      // before it (an online softmax's exp or a sum's add chained through one state would bound
      // the loop by its latency); merged in order, then the vectors left over.
      constexpr int kAcc = 4;
      std::vector<std::vector<std::vector<Var>>> acc;
      for (int k = 0; k < kAcc; ++k) acc.push_back(fresh(L));
      auto tail = fresh(1);
      const Expr nblk = row_ / Expr(int64_t(kAcc) * L) * Expr(int64_t(kAcc) * L);
      const Expr nvec = row_ / Expr(L) * Expr(L);
      for_range(Expr(0), nblk, [&](Expr j) {
        for (int k = 0; k < kAcc; ++k) reduce_at(base, acc[size_t(k)], j + Expr(int64_t(k) * L), L, false);
      }, int64_t(kAcc) * L);
      reduce_range(base, acc[0], nblk, nvec, L, L, false);
      reduce_range(base, tail, nvec, row_, 1, 1, false);
      std::vector<State> v = read(acc[0]), t = read(tail);
      for (int k = 1; k < kAcc; ++k) {
        std::vector<State> w = read(acc[size_t(k)]);
        for (size_t r = 0; r < v.size(); ++r) v[r] = combine_merge(key_.reductions[r], v[r], w[r]);
      }
      for (size_t r = 0; r < v.size(); ++r)
        done.push_back(combine_merge(key_.reductions[r], combine_lanes(key_.reductions[r], v[r]), t[r]));
    } else {
      auto s = fresh(1);
      reduce_range(base, s, Expr(0), row_, 1, 1, false);
      done = read(s);
    }
    std::vector<Expr> flat;
    for (State& s : done)
      for (Expr& e : s) flat.push_back(e);
    return flat;
  }

  void write_reduced(const std::vector<Expr>& base, const std::vector<Expr>& reduced, int lanes) {
    std::vector<Expr> outs = epi_(reduced, {}, scalars_);
    check_outs(outs);
    const size_t nin = key_.inputs.size();
    for (size_t o = 0; o < outs.size(); ++o)
      kb_.store(int(nin + o), base[nin + o], broadcast(cast(outs[o], key_.outputs[o]), lanes));
  }
  void check_outs(const std::vector<Expr>& outs) {
    if (outs.size() != key_.outputs.size())
      ember::detail::throw_value("kl", "row-reduce epilogue returned " + std::to_string(outs.size()) + " values for " +
                                    std::to_string(key_.outputs.size()) + " outputs");
  }
  // Broadcast-back epilogue over [j0, j1) of the row(s).
  void write_full(const std::vector<Expr>& base, const std::vector<Expr>& reduced, const Expr& j0, const Expr& j1,
                  int lanes, int64_t step, bool across) {
    const size_t nin = key_.inputs.size();
    for_range(j0, j1, [&](Expr j) {
      std::vector<Expr> in = loads(base, j, nin, lanes, across);
      std::vector<Expr> outs = epi_(reduced, in, scalars_);
      check_outs(outs);
      for (size_t o = 0; o < outs.size(); ++o)
        if (!per_row(o))
          kb_.store(int(nin + o), at(nin + o, base[nin + o], j), broadcast(cast(outs[o], key_.outputs[o]), lanes));
    }, step);
  }
  // In broadcast-back mode an output with row stride 0 holds one value per row (a loss beside
  // the log-probabilities): written once, the epilogue's value at the row's first element.
  bool per_row(size_t o) const {
    return key_.broadcast_back && (key_.broadcast[key_.inputs.size() + o] & kRowBit) != 0;
  }
  void write_per_row(const std::vector<Expr>& base, const std::vector<Expr>& reduced, int lanes, bool across) {
    bool any = false;
    for (size_t o = 0; o < key_.outputs.size(); ++o) any = any || per_row(o);
    if (!any) return;
    const size_t nin = key_.inputs.size();
    if_(row_ > Expr(0), [&] {
      std::vector<Expr> outs = epi_(reduced, loads(base, Expr(0), nin, lanes, across), scalars_);
      check_outs(outs);
      for (size_t o = 0; o < outs.size(); ++o)
        if (per_row(o)) kb_.store(int(nin + o), base[nin + o], broadcast(cast(outs[o], key_.outputs[o]), lanes));
    });
  }

  void finish_row(const std::vector<Expr>& base, const std::vector<Expr>& reduced) {
    if (!key_.broadcast_back) return write_reduced(base, reduced, 1);
    write_per_row(base, reduced, 1, false);
    if (key_.lanes > 1) {
      const Expr nvec = row_ / Expr(key_.lanes) * Expr(key_.lanes);
      write_full(base, reduced, Expr(0), nvec, key_.lanes, key_.lanes, false);
      write_full(base, reduced, nvec, row_, 1, 1, false);
    } else {
      write_full(base, reduced, Expr(0), row_, 1, 1, false);
    }
  }

  void row_item(const Expr& item) {
    std::vector<Expr> base = row_offsets(item, outer_, ostride_);
    finish_row(base, reduce_row(base));
  }

  // GPU Row mode: `group` threads per row, workgroup / group rows per workgroup. Every thread
  // takes part in the shuffles and barriers: one past the last row reduces the first row again
  // and writes nothing.
  void gpu_rows() {
    const int T = key_.group, W = key_.workgroup, L = key_.lanes;
    kb_.set_workgroup_size(W);
    const Expr lid = local_id();
    const Expr wb = kb_.work_begin(), we = kb_.work_end();
    const Expr mine = wb + lid / Expr(T);
    const Expr valid = mine < we;
    const Expr sub = lid % Expr(T);
    std::vector<Expr> base = row_offsets(select(valid, mine, wb), outer_, ostride_);
    if (key_.cached > 0 && !key_.status) return gpu_rows_cached(base, valid, sub);
    std::vector<State> part;
    const Expr nvec = L > 1 ? row_ / Expr(L) * Expr(L) : Expr(0);
    if (L > 1) {
      auto vec = fresh(L), tail = fresh(1);
      reduce_range(base, vec, sub * Expr(L), nvec, L, int64_t(T) * L, false);
      reduce_range(base, tail, nvec + sub, row_, 1, T, false);
      std::vector<State> v = read(vec), t = read(tail);
      for (size_t r = 0; r < v.size(); ++r)
        part.push_back(combine_merge(key_.reductions[r], combine_lanes(key_.reductions[r], v[r]), t[r]));
    } else {
      auto s = fresh(1);
      reduce_range(base, s, sub, row_, 1, T, false);
      part = read(s);
    }
    const std::vector<Expr> reduced = group_reduce(part);
    if (!key_.broadcast_back) {
      if_(valid && sub == Expr(0), [&] { write_reduced(base, reduced, 1); });
      return;
    }
    if_(valid && sub == Expr(0), [&] { write_per_row(base, reduced, 1, false); });
    if_(valid, [&] {
      if (L > 1) {
        write_full(base, reduced, sub * Expr(L), nvec, L, int64_t(T) * L, false);
        write_full(base, reduced, nvec + sub, row_, 1, T, false);
      } else {
        write_full(base, reduced, sub, row_, 1, T, false);
      }
    });
  }

  // Merges each thread's partial states across the `group` threads of its row (warp shuffles,
  // then shared memory across the row's planes); every thread gets the row's result.
  std::vector<Expr> group_reduce(const std::vector<State>& part) { return group_reduce(part, key_.reductions); }
  std::vector<Expr> group_reduce(const std::vector<State>& part, const std::vector<Reduction>& reds) {
    const int T = key_.group, W = key_.workgroup;
    const Expr lid = local_id();
    const int planes = T / 32;
    std::vector<Expr> reduced;
    for (size_t r = 0; r < part.size(); ++r) {
      State st = part[r];
      for (int off = 16; off >= 1; off /= 2) {
        State o;
        for (const Expr& e : st) o.push_back(plane_shuffle_xor(e, off));
        st = combine_merge(reds[r], st, o);
      }
      // Lanes may differ in rounding (merges need not commute bit for bit): plane lane 0's.
      for (Expr& e : st) e = plane_broadcast(e, Expr(0));
      if (planes > 1) {
        const Expr lane = lane_id(), plane = lid / Expr(32);
        std::vector<Array> arr;
        for (const Expr& e : st) arr.push_back(kb_.array(e.type(), W / 32, Space::Shared));
        if_(lane == Expr(0), [&] {
          for (size_t i = 0; i < st.size(); ++i) arr[i].store(plane, st[i]);
        });
        barrier();
        const Expr first = lid / Expr(T) * Expr(planes);
        auto at = [&](int w) {
          State x;
          for (const Array& a : arr) x.push_back(a.load(first + Expr(w)));
          return x;
        };
        st = at(0);
        for (int w = 1; w < planes; ++w) st = combine_merge(reds[r], st, at(w));
      }
      for (Expr& e : st) reduced.push_back(e);
    }
    return reduced;
  }

  // GPU Row mode for a row of at most `cached` vectors per thread (and a whole number of
  // vectors): each thread loads its vectors of the reduced inputs once and keeps them in
  // registers through the reduction and the broadcast-back outputs, so the row is read from
  // memory once instead of twice. A vector past the row's end is loaded from the row's start
  // (an address that exists) and left out of the reduction and the stores. With the row in
  // registers, softmax and Welford reduce in two rounds instead of updating online: the max,
  // then the sum of exp(x - max) (an exp an element, the one the epilogue computes again, and
  // no rescaling); the sum, then the squared deviations from the mean (no division an element).
  void gpu_rows_cached(const std::vector<Expr>& base, const Expr& valid, const Expr& sub) {
    const int T = key_.group, L = key_.lanes, P = key_.cached;
    const size_t nin = key_.inputs.size(), npro = size_t(key_.prologue_inputs), np = size_t(P);
    std::vector<std::vector<Expr>> in(np), val(np);
    std::vector<Expr> ok(np), jv(np);
    for (size_t p = 0; p < np; ++p) {
      const Expr j = (sub + Expr(int64_t(p) * T)) * Expr(L);
      ok[p] = j < row_;
      jv[p] = select(ok[p], j, Expr(int64_t(0)));
      in[p] = loads(base, jv[p], npro, L, false);
      val[p] = prologue(in[p], broadcast(jv[p], L) + iota(DType::I64, L));
    }
    std::vector<Expr> reduced;
    for (size_t r = 0; r < key_.reductions.size(); ++r) {
      const Reduction& red = key_.reductions[r];
      auto value = [&](size_t p) { return broadcast(cast(val[p][r], red.acc), L); };
      // The sum over the thread's valid vectors of f(value), merged across the row's threads.
      auto row_sum = [&](const std::function<Expr(const Expr&)>& f) {
        Expr acc = lit(value(0), 0);
        for (size_t p = 0; p < np; ++p) acc = acc + select(ok[p], f(value(p)), lit(acc, 0));
        const Reduction sum{Combiner::Sum, red.acc};
        return group_reduce({combine_lanes(sum, {acc})}, {sum})[0];
      };
      if (red.kind == Combiner::Softmax) {
        const Reduction mx{Combiner::Max, red.acc};
        State m = combine_identity(mx, L);
        for (size_t p = 0; p < np; ++p) {
          const State n = combine_update(mx, m, value(p), Expr());
          m = {select(ok[p], n[0], m[0])};
        }
        const Expr row_max = group_reduce({combine_lanes(mx, m)}, {mx})[0];
        const Expr bm = broadcast(row_max, L);
        reduced.push_back(row_max);
        reduced.push_back(row_sum([&](const Expr& x) { return exp(x - bm); }));
        continue;
      }
      if (red.kind == Combiner::Welford) {
        const Expr count = cast(row_, red.acc);
        const Expr mean = row_sum([](const Expr& x) { return x; }) / count;
        const Expr bmean = broadcast(mean, L);
        reduced.push_back(mean);
        reduced.push_back(row_sum([&](const Expr& x) {
          const Expr d = x - bmean;
          return d * d;
        }));
        reduced.push_back(count);
        continue;
      }
      State st = combine_identity(red, L);
      for (size_t p = 0; p < np; ++p) {
        const State n = combine_update(red, st, value(p), broadcast(jv[p], L) + iota(DType::I64, L));
        for (size_t i = 0; i < n.size(); ++i) st[i] = select(ok[p], n[i], st[i]);
      }
      for (const Expr& e : group_reduce({combine_lanes(red, st)}, {red})) reduced.push_back(e);
    }
    if_(valid && sub == Expr(0), [&] { write_per_row(base, reduced, 1, false); });
    if_(valid, [&] {
      for (size_t p = 0; p < np; ++p)
        if_(ok[p], [&] {
          std::vector<Expr> all = in[p];  // the inputs read only after reducing, read now
          for (size_t k = npro; k < nin; ++k) all.push_back(load(k, base[k], jv[p], L, false));
          std::vector<Expr> outs = epi_(reduced, all, scalars_);
          check_outs(outs);
          for (size_t o = 0; o < outs.size(); ++o)
            if (!per_row(o))
              kb_.store(int(nin + o), at(nin + o, base[nin + o], jv[p]),
                        broadcast(cast(outs[o], key_.outputs[o]), L));
        });
    });
  }

  // GPU Col mode over `group` slices of the rows (few, long rows: one thread a row would leave
  // the GPU nearly idle): a workgroup takes 32 neighbouring rows along the innermost outer dim,
  // a plane's lanes one each (neighbouring addresses), and its `group` planes walk the reduced
  // dim in strides of `group`; plane 0 merges the slices' states, in slice order, through
  // shared memory and writes. A lane past the last row reduces the block's first row again and
  // writes nothing (every thread reaches the barrier).
  void gpu_cols() {
    const int S = key_.group, W = key_.workgroup;
    kb_.set_workgroup_size(W);
    const int r = key_.outer_rank;
    const Expr lid = local_id();
    const Expr lane = lid % Expr(32), slice = lid / Expr(32);
    const Expr inner = outer_.back();
    const Expr blocks = (inner + Expr(31)) / Expr(32);
    const Expr item = kb_.work_begin();
    const Expr o = item / blocks, blk = item % blocks;
    std::vector<Expr> base = row_offsets(o, std::span(outer_).first(size_t(r - 1)), ostride_);
    const Expr c = blk * Expr(32) + lane;
    const Expr valid = c < inner && item < kb_.work_end();
    const Expr mine = select(valid, c, blk * Expr(32));
    for (size_t k = 0; k < base.size(); ++k)
      if (!(key_.broadcast[k] & (1u << (r - 1)))) base[k] = base[k] + mine;  // lane-dim stride 1
    auto st = fresh(1);
    reduce_range(base, st, slice, row_, 1, S, false);
    const std::vector<State> part = read(st);
    std::vector<Expr> reduced;
    for (size_t q = 0; q < part.size(); ++q) {
      std::vector<Array> arr;
      for (const Expr& e : part[q]) arr.push_back(kb_.array(e.type(), W, Space::Shared));
      for (size_t i = 0; i < part[q].size(); ++i) arr[i].store(lid, part[q][i]);
      barrier();
      auto at = [&](int w) {
        State x;
        for (const Array& a : arr) x.push_back(a.load(lane + Expr(int64_t(w) * 32)));
        return x;
      };
      State m = at(0);
      for (int w = 1; w < S; ++w) m = combine_merge(key_.reductions[q], m, at(w));
      for (Expr& e : m) reduced.push_back(e);
    }
    if_(valid && slice == Expr(0), [&] { write_reduced(base, reduced, 1); });
  }

  // Col mode: `lanes` neighbouring rows along the innermost outer dim, one per lane.
  void col_item(const Expr& item) {
    const int L = key_.lanes;
    const int r = key_.outer_rank;
    const Expr inner = outer_.back();
    const Expr blocks = (inner + Expr(L - 1)) / Expr(L);
    const Expr o = item / blocks, blk = item % blocks;
    std::vector<Expr> base = row_offsets(o, std::span(outer_).first(size_t(r - 1)), ostride_);
    const Expr c0 = blk * Expr(L);
    auto lane_base = [&](const Expr& c) {
      std::vector<Expr> b = base;
      for (size_t k = 0; k < b.size(); ++k)
        if (!(key_.broadcast[k] & (1u << (r - 1)))) b[k] = b[k] + c;  // lane-dim stride 1
      return b;
    };
    if_(c0 + Expr(L) <= inner, [&] {
      std::vector<Expr> b = lane_base(c0);
      auto s = fresh(L);
      reduce_range(b, s, Expr(0), row_, L, 1, true);
      std::vector<Expr> reduced;
      for (State& st : read(s))
        for (Expr& e : st) reduced.push_back(e);
      if (!key_.broadcast_back) return write_reduced(b, reduced, L);
      write_per_row(b, reduced, L, true);
      write_full(b, reduced, Expr(0), row_, L, 1, true);
    }, [&] {
      for_range(c0, inner, [&](Expr c) {  // the partial last block, row by row
        std::vector<Expr> b = lane_base(c);
        auto s = fresh(1);
        reduce_range(b, s, Expr(0), row_, 1, 1, false);
        std::vector<Expr> reduced;
        for (State& st : read(s))
          for (Expr& e : st) reduced.push_back(e);
        if (!key_.broadcast_back) return write_reduced(b, reduced, 1);
        write_per_row(b, reduced, 1, false);
        write_full(b, reduced, Expr(0), row_, 1, 1, false);
      });
    });
  }

  Builder& kb_;
  const RowReduceKey& key_;
  const RowPrologueAt& pro_;
  const RowEpilogue& epi_;
  int status_ = -1;
  std::vector<Expr> scalars_, outer_;
  Expr row_;
  std::vector<std::vector<Expr>> ostride_;
  std::vector<Expr> rstride_;
};

}  // namespace

int64_t RowLayout::rows() const {
  return std::accumulate(outer.begin(), outer.end(), int64_t(1), std::multiplies<>());
}

RowLayout row_layout(std::span<const int64_t> shape, const std::vector<std::vector<int64_t>>& strides,
                     std::span<const int64_t> reduce_dims) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t d : reduce_dims) {
    if (d < 0 || d >= int64_t(shape.size()))
      ember::detail::throw_value("kl", "row_layout: reduce dim " + std::to_string(d) + " out of range");
    reduced[size_t(d)] = true;
  }
  std::vector<int64_t> oe, re;
  std::vector<std::vector<int64_t>> os(strides.size()), rs(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    (reduced[d] ? re : oe).push_back(shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) (reduced[d] ? rs : os)[k].push_back(strides[k][d]);
  }
  RowLayout l;
  collapse_dims(oe, os, l.outer, l.outer_strides);
  std::vector<int64_t> row;
  std::vector<std::vector<int64_t>> row_st;
  collapse_dims(re, rs, row, row_st);
  if (row.size() > 1)
    ember::detail::throw_value("kl", "row_layout: the reduced dims cannot be walked as one (permute or copy first)");
  l.row = row.empty() ? 1 : row[0];
  for (size_t k = 0; k < strides.size(); ++k) l.row_strides.push_back(row.empty() ? 0 : row_st[k][0]);
  return l;
}

std::string RowReduceKey::str() const {
  static const char* names[] = {"sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "welford", "softmax"};
  std::string s = "row_reduce o" + std::to_string(outer_rank) + (mode == Mode::Col ? " col" : " row") +
                  " v" + std::to_string(lanes) + " in[";
  auto operand = [&](DType d, size_t k) {
    std::string r = type_name({d, 1});
    if (broadcast[k]) {
      r += ":b";
      for (int b = 0; b < outer_rank; ++b)
        if (broadcast[k] & (1u << b)) r += std::to_string(b);
      if (broadcast[k] & kRowBit) r += "r";
    }
    return r;
  };
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? " " : "") + operand(inputs[i], i);
  s += "] p" + std::to_string(prologue_inputs) + " red[";
  for (size_t i = 0; i < reductions.size(); ++i)
    s += (i ? " " : "") + std::string(names[int(reductions[i].kind)]) + ":" + type_name({reductions[i].acc, 1});
  s += broadcast_back ? "] full[" : "] out[";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? " " : "") + operand(outputs[i], inputs.size() + i);
  s += "]";
  if (!scalars.empty()) {
    s += " s[";
    for (size_t i = 0; i < scalars.size(); ++i) s += (i ? " " : "") + type_name({scalars[i], 1});
    s += "]";
  }
  if (status) s += " status";
  if (gpu) s += " gpu" + (mode == Mode::Row || group > 1 ? " g" + std::to_string(group) + "/" + std::to_string(workgroup) : "");
  if (cached) s += " c" + std::to_string(cached);
  return s;
}

RowReduceKey row_reduce_key(const RowLayout& l, std::vector<DType> inputs, int prologue_inputs,
                            std::vector<Reduction> reductions, std::vector<DType> outputs,
                            bool broadcast_back, std::vector<DType> scalars, const Target& t) {
  RowReduceKey key;
  key.outer_rank = int(l.outer.size());
  key.prologue_inputs = prologue_inputs;
  key.broadcast_back = broadcast_back;
  const size_t nops = inputs.size() + outputs.size();
  if (l.outer_strides.size() != nops)
    ember::detail::throw_value("kl", "row_reduce_key: " + std::to_string(l.outer_strides.size()) + " stride lists for " +
                                  std::to_string(nops) + " operands");
  size_t widest = 1;
  for (DType d : inputs) widest = std::max(widest, itemsize(d));
  for (const Reduction& r : reductions) widest = std::max(widest, itemsize(r.acc));
  const int lanes = t.lanes(widest == 8 ? DType::F64 : widest == 4 ? DType::F32 : widest == 2 ? DType::F16 : DType::U8);
  bool row_vec = lanes > 1 && l.row >= lanes, col_vec = lanes > 1 && key.outer_rank > 0 && l.outer.back() >= lanes;
  for (size_t k = 0; k < nops; ++k) {
    uint32_t bits = 0;
    for (int d = 0; d < key.outer_rank; ++d)
      if (l.outer_strides[k][size_t(d)] == 0) bits |= 1u << d;
    const bool is_out = k >= inputs.size();
    if (l.row_strides[k] == 0 && (!is_out || broadcast_back)) bits |= kRowBit;
    key.broadcast.push_back(bits);
    // A broadcast-back output with row stride 0 is a per-row value (written once per row).
    const bool along = !is_out || (broadcast_back && l.row_strides[k] != 0);
    if (along) row_vec = row_vec && (l.row_strides[k] == 1 || (l.row_strides[k] == 0 && !is_out));
    if (col_vec) {
      const int64_t s = l.outer_strides[k].back();
      col_vec = s == 1 || (s == 0 && !is_out);
    }
  }
  if (row_vec) key.mode = RowReduceKey::Mode::Row, key.lanes = lanes;
  else if (col_vec) key.mode = RowReduceKey::Mode::Col, key.lanes = lanes;
  if (t.plane_size > 1) {
    key.gpu = true;
    if (key.mode == RowReduceKey::Mode::Col) {
      key.lanes = 1;  // one thread per row: neighbouring threads, neighbouring rows
      // Few long rows (a bias's gradient: 768 sums of 8192 values) split each row over `group`
      // threads (gpu_cols), enough of them to fill the GPU (EMBER_KL_COL_SPLIT=0: one thread a
      // row, for comparisons).
      static const bool split = [] {
        const char* e = std::getenv("EMBER_KL_COL_SPLIT");
        return !(e && std::string(e) == "0");
      }();
      const int64_t rows = l.rows();
      if (split && !broadcast_back && l.row >= 256 && rows < (int64_t(1) << 17)) {
        const int64_t blocks = rows / l.outer.back() * ((l.outer.back() + 31) / 32);
        int S = 8;
        while (S < 32 && blocks * 32 * S < 132 * 2048 && l.row / (2 * S) >= 32) S *= 2;
        key.group = S;
        key.workgroup = 32 * S;
      }
    } else {
      // About four vectors per thread, 32..1024 threads per row, 256 or more per workgroup.
      key.group = 32;
      while (key.group < 1024 && int64_t(key.group) * key.lanes * 4 < l.row) key.group *= 2;
      key.workgroup = std::max(key.group, 256);
      // A row of a few whole vectors per thread stays in registers between the reduction and
      // the broadcast-back outputs (EMBER_KL_ROW_CACHE=0 turns it off, for comparisons).
      static const bool cache_rows = [] {
        const char* e = std::getenv("EMBER_KL_ROW_CACHE");
        return !(e && std::string(e) == "0");
      }();
      const int64_t per = (l.row + int64_t(key.group) * key.lanes - 1) / (int64_t(key.group) * key.lanes);
      if (cache_rows && broadcast_back && key.mode == RowReduceKey::Mode::Row && key.lanes > 1 &&
          l.row % key.lanes == 0 && per <= 8)
        key.cached = int(per);
    }
  }
  key.inputs = std::move(inputs);
  key.outputs = std::move(outputs);
  key.reductions = std::move(reductions);
  key.scalars = std::move(scalars);
  return key;
}

Kernel row_reduce_kernel(const std::string& name, const RowReduceKey& key, const RowPrologue& prologue,
                         const RowEpilogue& epilogue) {
  return row_reduce_kernel_at(
      name, key,
      [&](std::span<const Expr> in, std::span<const Expr> sc, const Expr&) { return prologue(in, sc); },
      epilogue);
}

Kernel row_reduce_kernel_at(const std::string& name, const RowReduceKey& key, const RowPrologueAt& prologue,
                            const RowEpilogue& epilogue) {
  if (key.mode == Mode::Col && key.outer_rank == 0)
    ember::detail::throw_value("kl", "row-reduce: Col mode needs an outer dim");
  Builder kb(name);
  kb.set_spec(key.str());
  RowEmitter(kb, key, prologue, epilogue).build();
  return kb.finish();
}

ArgPack row_reduce_args(const Kernel& k, const RowReduceKey& key, const RowLayout& l,
                        std::span<const void* const> buffers, std::span<const Scalar> scalars) {
  ArgPack a(k);
  const size_t nops = key.inputs.size() + key.outputs.size();
  if (buffers.size() != nops + (key.status ? 1 : 0) || scalars.size() != key.scalars.size() || int(l.outer.size()) != key.outer_rank)
    ember::detail::throw_value("kl", "row_reduce_args: the layout or operands do not match the key " + key.str());
  for (size_t i = 0; i < buffers.size(); ++i) a.buffer(int(i), buffers[i]);
  for (size_t i = 0; i < scalars.size(); ++i) a.scalar(int(i), scalars[i]);
  int n = 0;
  for (int64_t e : l.outer) a.index(n++, e);
  a.index(n++, l.row);
  for (size_t op = 0; op < nops; ++op) {
    for (int d = 0; d < key.outer_rank; ++d)
      if (outer_param(key, op, d)) a.index(n++, l.outer_strides[op][size_t(d)]);
    if (row_param(key, op)) a.index(n++, l.row_strides[op]);
  }
  return a;
}

int64_t row_reduce_items(const RowReduceKey& key, const RowLayout& l) {
  if (key.gpu && key.mode == Mode::Col && key.group > 1) return row_template_items(key.mode, 32, l);
  return row_template_items(key.mode, key.lanes, l);
}

int64_t row_reduce_grain(const RowReduceKey& key, const RowLayout& l) {
  if (key.gpu) return key.mode == Mode::Row ? key.workgroup / key.group : 1;
  return row_template_grain(key.mode, key.lanes, l, (int64_t(1) << 16));
}

}  // namespace ember::kl
