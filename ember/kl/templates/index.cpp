// Gather and scatter templates.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/templates/index.h"

#include "ember/error.h"
#include "ember/kl/elementwise.h"
#include "ember/kl/templates/common.h"

namespace ember::kl {
namespace {

struct IndexParams {
  std::vector<Expr> ext, src, idx, out;
  Expr size;
};
IndexParams declare(Builder& kb, int rank) {
  IndexParams p;
  for (int d = 0; d < rank; ++d) p.ext.push_back(kb.index("extent" + std::to_string(d)));
  for (auto* v : {&p.src, &p.idx, &p.out})
    for (int d = 0; d < rank; ++d) v->push_back(kb.index("stride" + std::to_string(d)));
  p.size = kb.index("size");
  return p;
}

// The index at `at` (wrapped when negatives are allowed), and whether it is in [0, size).
std::pair<Expr, Expr> read_index(Builder& kb, const Expr& at, const Expr& size, bool wrap) {
  Expr i = cast(kb.load(1, at), DType::I64);
  if (wrap) i = select(i < Expr(0), i + size, i);
  return {i, i >= Expr(0) && i < size};
}
void flag_error(Builder& kb, const Expr& ok, const Expr& i) {
  if_(!ok, [&] {
    kb.store(3, Expr(1), i, {}, {}, true);
    kb.store(3, Expr(0), Expr(1), {}, {}, true);
  });
}
void check_rank(int rank, int dim, const char* what) {
  if (rank < 1 || dim < 0 || dim >= rank)
    ember::detail::throw_value("kl", std::string(what) + ": dim " + std::to_string(dim) + " out of range for rank " +
                                  std::to_string(rank));
}
ArgPack pack(const Kernel& k, int rank, std::span<const int64_t> shape, std::span<const int64_t> s,
             std::span<const int64_t> i, std::span<const int64_t> o, int64_t size, const void* src,
             const void* index, void* out, int64_t* err) {
  if (int(shape.size()) != rank || int(s.size()) != rank || int(i.size()) != rank || int(o.size()) != rank)
    ember::detail::throw_value("kl", "index kernel arguments: expected rank " + std::to_string(rank));
  ArgPack a(k);
  a.buffer(0, src).buffer(1, index).buffer(2, out).buffer(3, err);
  int n = 0;
  for (auto span : {shape, s, i, o})
    for (int64_t v : span) a.index(n++, v);
  a.index(n++, size);
  return a;
}

}  // namespace

void check_index_error(const char* op, const int64_t* err, int64_t dim, int64_t size) {
  if (err[0])
    ember::detail::throw_index(op, "index " + std::to_string(err[1]) + " is out of bounds for dimension " +
                                std::to_string(dim) + " with size " + std::to_string(size));
}

std::string GatherKey::str() const {
  return "gather r" + std::to_string(rank) + " d" + std::to_string(dim) + " " + type_name({src, 1}) + "[" +
         type_name({index, 1}) + "]" + (wrap_negative ? " wrap" : "");
}

Kernel gather_kernel(const std::string& name, const GatherKey& key) {
  check_rank(key.rank, key.dim, "gather");
  Builder kb(name);
  kb.set_spec(key.str());
  kb.buffer(key.src, Access::Read, "src");
  kb.buffer(key.index, Access::Read, "index");
  kb.buffer(key.src, Access::Write, "out");
  kb.buffer(DType::I64, Access::ReadWrite, "err");
  const int n = key.rank, d = key.dim;
  IndexParams p = declare(kb, n);
  std::vector<std::vector<Expr>> strides = {p.out, p.idx, p.src};
  strides[2][size_t(d)] = Expr();  // src's step along dim comes from the index
  const Expr begin = kb.work_begin(), end = kb.work_end(), inner = p.ext.back();
  for_range(begin / inner, (end + inner - Expr(1)) / inner, [&](Expr row) {
    const Expr first = row * inner;
    const Expr lo = max(begin - first, Expr(0)), hi = min(end - first, inner);
    std::vector<Expr> base = row_offsets(row, std::span(p.ext).first(size_t(n - 1)), strides);
    for_range(lo, hi, [&](Expr j) {
      auto [i, ok] = read_index(kb, base[1] + j * p.idx.back(), p.size, key.wrap_negative);
      Expr src_at = base[2] + select(ok, i, Expr(0)) * p.src[size_t(d)];
      if (d != n - 1) src_at = src_at + j * p.src.back();
      kb.store(2, base[0] + j * p.out.back(), kb.load(0, src_at, 1, ok));
      flag_error(kb, ok, i);
    });
  });
  return kb.finish();
}

ArgPack gather_args(const Kernel& k, const GatherKey& key, std::span<const int64_t> out_shape,
                    std::span<const int64_t> src_strides, std::span<const int64_t> index_strides,
                    std::span<const int64_t> out_strides, int64_t src_size, const void* src,
                    const void* index, void* out, int64_t* err) {
  return pack(k, key.rank, out_shape, src_strides, index_strides, out_strides, src_size, src, index, out, err);
}

int64_t gather_items(std::span<const int64_t> out_shape) {
  int64_t n = 1;
  for (int64_t e : out_shape) n *= e;
  return n;
}

std::string ScatterKey::str() const {
  static const char* names[] = {"assign", "sum", "prod", "max", "min"};
  return std::string("scatter ") + names[int(reduce)] + " r" + std::to_string(rank) + " d" + std::to_string(dim) +
         " " + type_name({src, 1}) + "->" + type_name({out, 1}) + "[" + type_name({index, 1}) + "]" +
         (wrap_negative ? " wrap" : "");
}

Kernel scatter_kernel(const std::string& name, const ScatterKey& key) {
  check_rank(key.rank, key.dim, "scatter");
  Builder kb(name);
  kb.set_spec(key.str());
  kb.buffer(key.src, Access::Read, "src");
  kb.buffer(key.index, Access::Read, "index");
  kb.buffer(key.out, Access::ReadWrite, "out");
  kb.buffer(DType::I64, Access::ReadWrite, "err");
  const int n = key.rank, d = key.dim;
  IndexParams p = declare(kb, n);
  // Work items walk every dim but `dim`.
  std::vector<Expr> ext;
  std::vector<std::vector<Expr>> strides(3);
  for (int k = 0; k < n; ++k) {
    if (k == d) continue;
    ext.push_back(p.ext[size_t(k)]);
    strides[0].push_back(p.src[size_t(k)]);
    strides[1].push_back(p.idx[size_t(k)]);
    strides[2].push_back(p.out[size_t(k)]);
  }
  for_range(kb.work_begin(), kb.work_end(), [&](Expr item) {
    std::vector<Expr> base = row_offsets(item, ext, strides);
    for_range(Expr(0), p.ext[size_t(d)], [&](Expr k) {
      auto [i, ok] = read_index(kb, base[1] + k * p.idx[size_t(d)], p.size, key.wrap_negative);
      Expr v = cast(kb.load(0, base[0] + k * p.src[size_t(d)]), key.out);
      Expr at = base[2] + select(ok, i, Expr(0)) * p.out[size_t(d)];
      if_(ok, [&] {
        Expr r = v;
        if (key.reduce != ScatterReduce::Assign) {
          Expr old = kb.load(2, at);
          switch (key.reduce) {
            case ScatterReduce::Sum: r = ew::Def<OpId::add>::f(old, v); break;
            case ScatterReduce::Prod: r = ew::Def<OpId::mul>::f(old, v); break;
            case ScatterReduce::Max: r = ew::Def<OpId::maximum>::f(old, v); break;
            default: r = ew::Def<OpId::minimum>::f(old, v); break;
          }
        }
        kb.store(2, at, r);
      });
      flag_error(kb, ok, i);
    });
  });
  return kb.finish();
}

ArgPack scatter_args(const Kernel& k, const ScatterKey& key, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, std::span<const int64_t> index_strides,
                     std::span<const int64_t> out_strides, int64_t out_size, const void* src,
                     const void* index, void* out, int64_t* err) {
  return pack(k, key.rank, shape, src_strides, index_strides, out_strides, out_size, src, index, out, err);
}

int64_t scatter_items(const ScatterKey& key, std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int k = 0; k < int(shape.size()); ++k)
    if (k != key.dim) n *= shape[size_t(k)];
  return shape[size_t(key.dim)] == 0 ? 0 : n;
}

}  // namespace ember::kl
