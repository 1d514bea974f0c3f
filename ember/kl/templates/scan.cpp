// The scan template.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/templates/scan.h"

#include <algorithm>

#include "ember/error.h"
#include "ember/kl/templates/common.h"

namespace ember::kl {
namespace {

using Mode = RowReduceKey::Mode;

size_t operands(const ScanKey& key) { return key.indices ? 3 : 2; }
bool outer_param(const ScanKey& key, size_t k, int d) {
  if (k == 0 && (key.input_broadcast & (1u << d))) return false;
  return !(key.mode == Mode::Col && d == key.outer_rank - 1);
}

// torch's rule for cummax: x takes over when it is NaN, or when it ties or beats the current
// one (ties move the index to the latest occurrence) and the current one is not NaN.
Expr takes_over(const Expr& x, const Expr& best, bool max_kind) {
  Expr beats = max_kind ? x >= best : x <= best;
  if (!is_floating(x.dtype())) return beats;
  return isnan(x) || (!isnan(best) && beats);
}

}  // namespace

std::string ScanKey::str() const {
  static const char* names[] = {"sum", "prod", "max", "min"};
  return std::string("scan ") + names[int(op)] + (indices ? "+idx" : "") + " o" + std::to_string(outer_rank) +
         (mode == Mode::Col ? " col" : " line") + " v" + std::to_string(lanes) + " " + type_name({input, 1}) +
         (input_broadcast ? ":b" + std::to_string(input_broadcast) : "") + "->" + type_name({acc, 1}) + "->" +
         type_name({output, 1});
}

ScanKey scan_key(const RowLayout& l, DType input, DType acc, DType output, ScanOp op, bool indices, const Target& t) {
  ScanKey key;
  key.input = input, key.acc = acc, key.output = output, key.op = op, key.indices = indices;
  key.outer_rank = int(l.outer.size());
  if (l.outer_strides.size() != operands(key))
    ember::detail::throw_value("kl", "scan_key: " + std::to_string(l.outer_strides.size()) + " operands, expected " +
                                  std::to_string(operands(key)));
  for (int d = 0; d < key.outer_rank; ++d)
    if (l.outer_strides[0][size_t(d)] == 0) key.input_broadcast |= 1u << d;
  size_t widest = std::max({itemsize(input), itemsize(acc), itemsize(output), indices ? size_t(8) : size_t(1)});
  const int lanes = t.lanes(widest == 8 ? DType::F64 : widest == 4 ? DType::F32 : widest == 2 ? DType::F16 : DType::U8);
  bool col = lanes > 1 && key.outer_rank > 0 && l.outer.back() >= lanes;
  for (size_t k = 0; col && k < operands(key); ++k) {
    const int64_t s = l.outer_strides[k].back();
    col = s == 1 || (k == 0 && s == 0);
  }
  if (col) key.mode = Mode::Col, key.lanes = lanes;
  return key;
}

Kernel scan_kernel(const std::string& name, const ScanKey& key, const ScanPrologue& prologue) {
  Builder kb(name);
  kb.set_spec(key.str());
  const bool extreme = key.op == ScanOp::Max || key.op == ScanOp::Min;
  const DType value_out = extreme ? key.input : key.output;
  kb.buffer(key.input, Access::Read, "in");
  kb.buffer(value_out, Access::Write, "out");
  if (key.indices) kb.buffer(DType::I64, Access::Write, "indices");
  const size_t nops = operands(key);
  const int r = key.outer_rank;
  std::vector<Expr> outer;
  for (int d = 0; d < r; ++d) outer.push_back(kb.index("outer" + std::to_string(d)));
  const Expr len = kb.index("len");
  std::vector<std::vector<Expr>> ostride(nops, std::vector<Expr>(size_t(r)));
  std::vector<Expr> lstride;
  for (size_t k = 0; k < nops; ++k) {
    for (int d = 0; d < r; ++d)
      if (outer_param(key, k, d)) ostride[k][size_t(d)] = kb.index("ostride" + std::to_string(k) + "_" + std::to_string(d));
    lstride.push_back(kb.index("lstride" + std::to_string(k)));
  }
  auto value_of = [&](const Expr& x) {
    if (prologue) return prologue(x);
    return extreme ? x : cast(x, key.acc);
  };
  // Scans the line(s) at `base` (lanes > 1: neighbouring lines, one per lane, the input
  // possibly one value for all of them).
  auto run_lines = [&](const std::vector<Expr>& base, int lanes, bool in_scalar) {
    const Type vt{extreme ? key.input : key.acc, uint8_t(lanes)};
    Var best = kb.var(vt, Expr(key.op == ScanOp::Prod ? 1 : 0));  // sums start at 0, as flex's do
    Var raw = kb.var(Type{key.input, uint8_t(lanes)}, Expr(0));   // the running extreme's input value
    Var at = kb.var(Type{DType::I64, uint8_t(lanes)}, Expr(0));
    for_range(Expr(0), len, [&](Expr j) {
      Expr loaded = broadcast(kb.load(0, base[0] + j * lstride[0], in_scalar ? 1 : lanes), lanes);
      Expr v = broadcast(value_of(loaded), lanes);
      if (extreme) {
        Expr take = takes_over(v, best.get(), key.op == ScanOp::Max) || j == Expr(0);
        best.set(select(take, v, best.get()));
        raw.set(select(take, loaded, raw.get()));
        at.set(select(take, broadcast(j, lanes), at.get()));
        kb.store(1, base[1] + j * lstride[1], raw.get());
        if (key.indices) kb.store(2, base[2] + j * lstride[2], at.get());
      } else {
        Expr x = cast(v, key.acc);
        Expr acc = key.op == ScanOp::Sum ? best.get() + x : best.get() * x;
        best.set(acc);
        kb.store(1, base[1] + j * lstride[1], cast(acc, key.output));
      }
    });
  };
  for_range(kb.work_begin(), kb.work_end(), [&](Expr item) {
    if (key.mode == Mode::Row) return run_lines(row_offsets(item, outer, ostride), 1, false);
    const int L = key.lanes;
    const Expr inner = outer.back();
    const Expr blocks = (inner + Expr(L - 1)) / Expr(L);
    const Expr o = item / blocks, c0 = item % blocks * Expr(L);
    const std::vector<Expr> base = row_offsets(o, std::span(outer).first(size_t(r - 1)), ostride);
    const bool in_bcast = key.input_broadcast & (1u << (r - 1));
    auto lane_base = [&](const Expr& c) {
      std::vector<Expr> b = base;
      for (size_t k = 0; k < b.size(); ++k)
        if (!(k == 0 && in_bcast)) b[k] = b[k] + c;
      return b;
    };
    if_(c0 + Expr(L) <= inner, [&] { run_lines(lane_base(c0), L, in_bcast); },
        [&] { for_range(c0, inner, [&](Expr c) { run_lines(lane_base(c), 1, false); }); });
  });
  return kb.finish();
}

ArgPack scan_args(const Kernel& k, const ScanKey& key, const RowLayout& l, std::span<const void* const> buffers) {
  ArgPack a(k);
  const size_t nops = operands(key);
  if (buffers.size() != nops || int(l.outer.size()) != key.outer_rank)
    ember::detail::throw_value("kl", "scan_args: the layout or operands do not match the key " + key.str());
  for (size_t i = 0; i < nops; ++i) a.buffer(int(i), buffers[i]);
  int n = 0;
  for (int64_t e : l.outer) a.index(n++, e);
  a.index(n++, l.row);
  for (size_t op = 0; op < nops; ++op) {
    for (int d = 0; d < key.outer_rank; ++d)
      if (outer_param(key, op, d)) a.index(n++, l.outer_strides[op][size_t(d)]);
    a.index(n++, l.row_strides[op]);
  }
  return a;
}

int64_t scan_items(const ScanKey& key, const RowLayout& l) {
  return row_template_items(key.mode, key.lanes, l);
}

int64_t scan_grain(const ScanKey& key, const RowLayout& l) {
  return row_template_grain(key.mode, key.lanes, l, (int64_t(1) << 15));
}

}  // namespace ember::kl
