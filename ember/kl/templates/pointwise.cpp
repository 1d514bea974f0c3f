// The pointwise template.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/templates/pointwise.h"

#include <cstdlib>

#include "ember/error.h"
#include "ember/kl/templates/common.h"

namespace ember::kl {
namespace {

// Whether operand k's stride along dim d is an index parameter (not 0, not a known 1).
bool stride_is_param(const PwKey& key, size_t k, int d) {
  if (key.broadcast[k] & (1u << d)) return false;
  return !(key.lanes > 1 && d == key.rank - 1);
}

}  // namespace

int64_t PwLayout::numel() const {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

PwLayout collapse(std::span<const int64_t> shape, const std::vector<std::vector<int64_t>>& strides) {
  PwLayout l;
  l.strides.resize(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {  // empty: nothing to run, one dim of 0
      l.extents = {0};
      for (auto& s : l.strides) s = {0};
      return l;
    }
  }
  // Walk from the innermost dim outwards, merging a dim into the one inside it when every
  // operand steps over it contiguously.
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    bool merge = !l.extents.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = strides[k][i] == l.strides[k].front() * l.extents.front();
    if (merge) {
      l.extents.front() *= shape[i];  // the merged dim keeps the inner stride
      continue;
    }
    l.extents.insert(l.extents.begin(), shape[i]);
    for (size_t k = 0; k < strides.size(); ++k) l.strides[k].insert(l.strides[k].begin(), strides[k][i]);
  }
  if (l.extents.empty()) {
    l.extents = {1};
    for (auto& s : l.strides) s = {0};
  }
  return l;
}

std::string PwKey::str() const {
  std::string s = "pointwise r" + std::to_string(rank) + " in[";
  auto operand = [&](DType d, size_t k) {
    std::string r = type_name({d, 1});
    if (broadcast[k]) {
      r += ":b";
      for (int b = 0; b < rank; ++b)
        if (broadcast[k] & (1u << b)) r += std::to_string(b);
    }
    return r;
  };
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? " " : "") + operand(inputs[i], i);
  s += "] out[";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? " " : "") + operand(outputs[i], inputs.size() + i);
  s += "]";
  if (!scalars.empty()) {
    s += " s[";
    for (size_t i = 0; i < scalars.size(); ++i) s += (i ? " " : "") + type_name({scalars[i], 1});
    s += "]";
  }
  s += " v" + std::to_string(lanes);
  if (!restrict_) s += " alias";
  return s;
}

PwKey pointwise_key(const PwLayout& l, std::vector<DType> inputs, std::vector<DType> outputs,
                    std::vector<DType> scalars, const Target& t) {
  PwKey key;
  key.rank = int(l.extents.size());
  if (l.strides.size() != inputs.size() + outputs.size())
    ember::detail::throw_value("kl", "pointwise: " + std::to_string(l.strides.size()) + " stride lists for " +
                                  std::to_string(inputs.size() + outputs.size()) + " operands");
  size_t widest = 1;
  for (DType d : inputs) widest = std::max(widest, itemsize(d));
  for (DType d : outputs) widest = std::max(widest, itemsize(d));
  int lanes = t.lanes(widest == 8 ? DType::F64 : widest == 4 ? DType::F32 : widest == 2 ? DType::F16 : DType::U8);
  bool vec = lanes > 1 && l.extents.back() >= lanes;
  for (size_t k = 0; k < l.strides.size(); ++k) {
    uint32_t bits = 0;
    for (int d = 0; d < key.rank; ++d)
      if (l.strides[k][size_t(d)] == 0) bits |= 1u << d;
    key.broadcast.push_back(bits);
    const int64_t inner = l.strides[k].back();
    const bool is_out = k >= inputs.size();
    vec = vec && (inner == 1 || (inner == 0 && !is_out));
  }
  key.lanes = vec ? lanes : 1;
  key.inputs = std::move(inputs);
  key.outputs = std::move(outputs);
  key.scalars = std::move(scalars);
  return key;
}

Kernel pointwise_kernel(const std::string& name, const PwKey& key, const PwBody& body) {
  return pointwise_kernel_at(name, key, [&](std::span<const Expr> in, std::span<const Expr> sc,
                                            const Expr&) { return body(in, sc); });
}

Kernel pointwise_kernel_at(const std::string& name, const PwKey& key, const PwBodyAt& body) {
  Builder kb(name);
  kb.set_spec(key.str());
  const size_t nin = key.inputs.size(), nops = nin + key.outputs.size();
  for (size_t i = 0; i < nin; ++i) kb.buffer(key.inputs[i], Access::Read, "in" + std::to_string(i), key.restrict_);
  for (size_t i = 0; i < key.outputs.size(); ++i)
    kb.buffer(key.outputs[i], Access::Write, "out" + std::to_string(i), key.restrict_);
  std::vector<Expr> scalars;
  for (size_t i = 0; i < key.scalars.size(); ++i) scalars.push_back(kb.scalar(key.scalars[i], "s" + std::to_string(i)));
  const int r = key.rank;
  std::vector<Expr> ext;
  for (int d = 0; d < r; ++d) ext.push_back(kb.index("extent" + std::to_string(d)));
  std::vector<std::vector<Expr>> stride(nops, std::vector<Expr>(size_t(r)));
  for (size_t k = 0; k < nops; ++k)
    for (int d = 0; d < r; ++d)
      if (stride_is_param(key, k, d))
        stride[k][size_t(d)] = kb.index("stride" + std::to_string(k) + "_" + std::to_string(d));

  const Expr begin = kb.work_begin(), end = kb.work_end();
  const Expr inner = ext.back();
  // Items [lo, hi) of row `row`, whose first item is `first`.
  auto one_row = [&](const Expr& row, const Expr& first, const Expr& lo, const Expr& hi) {
    std::vector<Expr> base = row_offsets(row, std::span(ext).first(size_t(r - 1)), stride);
    // One element (or `lanes` elements) at column j of this row.
    auto step = [&](const Expr& j, int lanes) {
      std::vector<Expr> loaded;
      auto at = [&](size_t k) {
        if (key.broadcast[k] & (1u << (r - 1))) return base[k];
        if (key.lanes > 1) return base[k] + j;
        return base[k] + j * stride[k][size_t(r - 1)];
      };
      for (size_t k = 0; k < nin; ++k) {
        const bool bcast = key.broadcast[k] & (1u << (r - 1));
        loaded.push_back(kb.load(int(k), at(k), bcast ? 1 : lanes));
      }
      // The elements' row-major index (unused values are dropped when the kernel finishes).
      const Expr pos = lanes > 1 ? broadcast(first + j, lanes) + iota(DType::I64, lanes) : first + j;
      std::vector<Expr> outs = body(loaded, scalars, pos);
      if (outs.size() != key.outputs.size())
        ember::detail::throw_value("kl", "pointwise body returned " + std::to_string(outs.size()) + " values for " +
                                      std::to_string(key.outputs.size()) + " outputs");
      for (size_t o = 0; o < outs.size(); ++o) {
        Expr v = broadcast(cast(outs[o], key.outputs[o]), lanes);
        kb.store(int(nin + o), at(nin + o), v);
      }
    };
    if (key.lanes > 1) {
      const Expr nvec = (hi - lo) / Expr(key.lanes);
      for_range(Expr(0), nvec, [&](Expr v) { step(lo + v * Expr(key.lanes), key.lanes); });
      for_range(lo + nvec * Expr(key.lanes), hi, [&](Expr j) { step(j, 1); });
    } else {
      for_range(lo, hi, [&](Expr j) { step(j, 1); });
    }
  };
  if (r == 1) {
    // One row (a contiguous run after collapsing): the items are the positions, with no
    // division by the row length (64-bit division costs a GPU thread more than its elements).
    one_row(Expr(int64_t(0)), Expr(int64_t(0)), begin, end);
  } else {
    const Expr row0 = begin / inner, row1 = (end + inner - Expr(1)) / inner;
    for_range(row0, row1, [&](Expr row) {
      const Expr first = row * inner;
      one_row(row, first, max(begin - first, Expr(0)), min(end - first, inner));
    });
  }
  return kb.finish();
}

int64_t pointwise_gpu_vectors() {
  static const int64_t v = [] {
    const char* e = std::getenv("EMBER_KL_PW_VECTORS");
    const int64_t n = e ? std::atoll(e) : 1;
    return n >= 1 && n <= 16 ? n : int64_t(1);
  }();
  return v;
}

ArgPack pointwise_args(const Kernel& k, const PwKey& key, const PwLayout& l,
                       std::span<const void* const> buffers, std::span<const Scalar> scalars) {
  ArgPack a(k);
  const size_t nops = key.inputs.size() + key.outputs.size();
  if (buffers.size() != nops || scalars.size() != key.scalars.size() || int(l.extents.size()) != key.rank)
    ember::detail::throw_value("kl", "pointwise_args: the layout or operands do not match the key " + key.str());
  for (size_t i = 0; i < nops; ++i) a.buffer(int(i), buffers[i]);
  for (size_t i = 0; i < scalars.size(); ++i) a.scalar(int(i), scalars[i]);
  int n = 0;
  for (int d = 0; d < key.rank; ++d) a.index(n++, l.extents[size_t(d)]);
  for (size_t op = 0; op < nops; ++op)
    for (int d = 0; d < key.rank; ++d)
      if (stride_is_param(key, op, d)) a.index(n++, l.strides[op][size_t(d)]);
  return a;
}

}  // namespace ember::kl
