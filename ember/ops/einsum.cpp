// einsum: equation parsing, inference and the lowering into diagonal / sum / permute / bmm.
// Attrs: ints = the equation ("ij,jk->ik", "bij,bjk", "ii->i", "...ij,...jk->...ik") as tokens
// (see tokenize);
// inputs = the operands. The result keeps the operands' dtype.
#include <algorithm>
#include <climits>

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

constexpr const char* kOp = "einsum";
constexpr int kLetters = 52;  // A-Z then a-z; ellipsis dims get the ids after them
constexpr int kEllipsis = -1;

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}
char letter_of(int id) { return id < 26 ? char('A' + id) : char('a' + id - 26); }

constexpr int64_t kComma = -2, kArrow = -3;

// The equation as tokens (Attrs::ints): letter ids, kEllipsis, kComma between operand terms and
// kArrow before the output term. Checked here, at the front end, so attrs never hold a string.
IntVec tokenize(const std::string& eq) {
  IntVec toks;
  bool output = false;
  for (size_t i = 0; i < eq.size(); ++i) {
    const char c = eq[i];
    if (c == ' ') continue;
    if (c == '-' && i + 1 < eq.size() && eq[i + 1] == '>' && !output) {
      toks.push_back(kArrow);
      output = true;
      ++i;
    } else if (c == ',' && !output) {
      toks.push_back(kComma);
    } else if (c == '.') {
      if (i + 2 >= eq.size() || eq[i + 1] != '.' || eq[i + 2] != '.')
        detail::throw_value(kOp, "found '.' at index " + std::to_string(i) + " of '" + eq +
                                     "' that is not part of an ellipsis '...'");
      toks.push_back(kEllipsis);
      i += 2;
    } else if (letter_id(c) >= 0) {
      toks.push_back(letter_id(c));
    } else {
      detail::throw_value(kOp, "invalid subscript '" + std::string(1, c) + "' at index " +
                                   std::to_string(i) + " of '" + eq +
                                   "': subscripts must be in [a-zA-Z]");
    }
  }
  return toks;
}

// The equation text of `toks` (for messages).
std::string render(const IntVec& toks) {
  std::string s;
  for (int64_t t : toks)
    s += t == kComma ? std::string(",") : t == kArrow ? std::string("->")
         : t == kEllipsis ? std::string("...") : std::string(1, letter_of(int(t)));
  return s;
}

// The terms of one side: [begin, end) of toks split at kComma.
std::vector<std::vector<int>> terms_of(const IntVec& toks, size_t begin, size_t end) {
  std::vector<std::vector<int>> terms(1);
  for (size_t i = begin; i < end; ++i) {
    if (toks[i] == kComma) {
      terms.emplace_back();
      continue;
    }
    if (toks[i] == kEllipsis && std::count(terms.back().begin(), terms.back().end(), kEllipsis))
      detail::throw_value(kOp, "more than one ellipsis in a term of '" + render(toks) + "'");
    terms.back().push_back(int(toks[i]));
  }
  return terms;
}

struct Parsed {
  std::vector<std::vector<int>> labels;  // per operand, per dim
  std::vector<int> out;                  // output labels in order
  int ell = 0;                           // ellipsis dims (right-aligned across operands)
  std::vector<int64_t> size;             // per label id: the broadcast size
};

Parsed parse(const IntVec& toks, std::span<const Tensor> ops) {
  const std::string eq = render(toks);
  size_t arrow = toks.size();
  for (size_t i = 0; i < toks.size(); ++i)
    if (toks[i] == kArrow) arrow = i;
  auto terms = terms_of(toks, 0, arrow);
  if (terms.size() != ops.size())
    detail::throw_value(kOp, "the equation '" + eq + "' has " + std::to_string(terms.size()) +
                                 " operand terms but " + std::to_string(ops.size()) +
                                 " operands were given");
  Parsed p;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& t = terms[i];
    const int64_t letters = int64_t(t.size()) - (std::count(t.begin(), t.end(), kEllipsis) ? 1 : 0);
    const bool has_ell = letters != int64_t(t.size());
    if (has_ell ? letters > ops[i].dim() : letters != ops[i].dim())
      detail::throw_value(kOp, "operand " + std::to_string(i) + " has " +
                                   std::to_string(ops[i].dim()) + " dims but its term in '" + eq +
                                   "' has " + std::to_string(letters) + " subscripts" +
                                   (has_ell ? "" : " and no ellipsis"));
    if (has_ell) p.ell = std::max(p.ell, int(ops[i].dim() - letters));
  }
  p.size.assign(size_t(kLetters + p.ell), -1);
  std::vector<int> count(size_t(kLetters + p.ell), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<int> labels;
    const int e = int(ops[i].dim()) - int(terms[i].size()) + 1;  // this operand's ellipsis dims
    for (int l : terms[i]) {
      if (l != kEllipsis) labels.push_back(l);
      else for (int q = 0; q < e; ++q) labels.push_back(kLetters + p.ell - e + q);
    }
    std::vector<int64_t> mine(size_t(kLetters + p.ell), -1);
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t s = ops[i].size(int64_t(d));
      if (mine[size_t(l)] >= 0 && mine[size_t(l)] != s)
        detail::throw_shape(kOp, std::string("subscript ") + letter_of(l) +
                                     " is repeated for operand " + std::to_string(i) +
                                     " but its sizes " + std::to_string(mine[size_t(l)]) + " and " +
                                     std::to_string(s) + " differ");
      mine[size_t(l)] = s;
      ++count[size_t(l)];
      int64_t& g = p.size[size_t(l)];
      if (g < 0 || g == 1) g = s;
      else if (s != 1 && s != g)
        detail::throw_shape(kOp, "operand " + std::to_string(i) + " has size " + std::to_string(s) +
                                     " for " +
                                     (l < kLetters ? "subscript " + std::string(1, letter_of(l))
                                                   : std::string("an ellipsis dim")) +
                                     ", which does not broadcast with size " + std::to_string(g));
    }
    p.labels.push_back(std::move(labels));
  }
  if (arrow == toks.size()) {  // implicit: ellipsis dims, then letters used once, sorted
    for (int q = 0; q < p.ell; ++q) p.out.push_back(kLetters + q);
    for (int l = 0; l < kLetters; ++l)
      if (count[size_t(l)] == 1) p.out.push_back(l);
    return p;
  }
  auto rhs = terms_of(toks, arrow + 1, toks.size());
  std::vector<bool> seen(size_t(kLetters), false);
  for (int l : rhs[0]) {
    if (l == kEllipsis) {
      for (int q = 0; q < p.ell; ++q) p.out.push_back(kLetters + q);
      continue;
    }
    if (!count[size_t(l)])
      detail::throw_value(kOp, std::string("output subscript ") + letter_of(l) +
                                   " does not appear in any input term of '" + eq + "'");
    if (seen[size_t(l)])
      detail::throw_value(kOp, std::string("output subscript ") + letter_of(l) +
                                   " appears more than once in '" + eq + "'");
    seen[size_t(l)] = true;
    p.out.push_back(l);
  }
  return p;
}

void infer_einsum(OpId, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  if (in.empty()) detail::throw_value(kOp, "expected at least one operand");
  for (const Tensor& t : in) ops::require_defined(t, kOp, "an operand");
  for (const Tensor& t : in)
    if (t.dtype() != in[0].dtype())
      detail::throw_dtype(kOp, "expected operands of one dtype, found " +
                                   std::string(dtype_name(in[0].dtype())) + " and " +
                                   std::string(dtype_name(t.dtype())));
  ops::require_dtype(kOp, in[0].dtype(), kNumericDTypes | kComplexDTypes,
                     "a numeric or complex dtype (bool is not supported)");
  Parsed p = parse(a.ints, in);
  Shape s;
  for (int l : p.out) s.push_back(p.size[size_t(l)]);
  out.add(std::move(s), in[0].dtype());
}

Tensor sum_keep(const Tensor& x, const Shape& dims, bool keepdim) {
  return dims.empty() ? x : sum(x, dims, keepdim, x.dtype());
}

// a, b: aligned to the same labels (size 1 where absent). Contracts the dims not in `keep` with
// one bmm: [batch, rows of a, depth] x [batch, depth, columns of b].
Tensor contract(Tensor a, Tensor b, const std::vector<bool>& keep) {
  const int64_t r = a.dim();
  Shape sum_a, sum_b;
  for (int64_t d = 0; d < r; ++d) {
    if (keep[size_t(d)] || (a.size(d) != 1 && b.size(d) != 1)) continue;
    if (a.size(d) != 1) sum_a.push_back(d);  // the other side broadcasts: reduce first
    if (b.size(d) != 1) sum_b.push_back(d);
  }
  a = sum_keep(a, sum_a, true);
  b = sum_keep(b, sum_b, true);
  Shape bd, md, nd, kd;
  int64_t nb = 1, nm = 1, nn = 1, nk = 1;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t sa = a.size(d), sb = b.size(d);
    if (!keep[size_t(d)]) kd.push_back(d), nk *= sa;
    else if (sa != 1 && sb != 1) bd.push_back(d), nb *= sa;
    else if (sa != 1) md.push_back(d), nm *= sa;
    else if (sb != 1) nd.push_back(d), nn *= sb;
    else bd.push_back(d);
  }
  auto cat = [](std::initializer_list<const Shape*> parts) {
    Shape s;
    for (const Shape* p : parts)
      for (int64_t d : *p) s.push_back(d);
    return s;
  };
  Tensor a3 = a.permute(cat({&bd, &md, &kd, &nd})).reshape({nb, nm, nk});
  Tensor b3 = b.permute(cat({&bd, &kd, &nd, &md})).reshape({nb, nk, nn});
  Shape order = cat({&bd, &md, &nd, &kd}), shape, inverse(static_cast<size_t>(r));
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t d = order[i];
    shape.push_back(!keep[size_t(d)] ? 1 : a.size(d) == 1 ? b.size(d) : a.size(d));
    inverse[size_t(d)] = int64_t(i);
  }
  return bmm(a3, b3).reshape(shape).permute(inverse);
}

TensorList decompose_einsum(const Attrs& at, std::span<const Tensor> in) {
  Parsed p = parse(at.ints, in);
  const size_t nl = size_t(kLetters + p.ell);
  // Global dim order: the output's labels first, so the result needs no final permute.
  std::vector<int> order = p.out;
  std::vector<int> first(nl, INT_MAX), last(nl, -1);
  for (int l : p.out) last[size_t(l)] = INT_MAX;
  for (size_t i = 0; i < in.size(); ++i)
    for (int l : p.labels[i]) {
      first[size_t(l)] = std::min(first[size_t(l)], int(i));
      last[size_t(l)] = std::max(last[size_t(l)], int(i));
      if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
    }
  std::vector<int64_t> pos(nl, -1);
  for (size_t i = 0; i < order.size(); ++i) pos[size_t(order[i])] = int64_t(i);

  std::vector<Tensor> aligned;
  for (size_t i = 0; i < in.size(); ++i) {
    Tensor x = in[i];
    std::vector<int> labels = p.labels[i];
    // A repeated label takes the diagonal (which moves to the last dim).
    for (bool again = true; again;) {
      again = false;
      for (size_t d1 = 0; d1 < labels.size() && !again; ++d1)
        for (size_t d2 = d1 + 1; d2 < labels.size() && !again; ++d2)
          if (labels[d1] == labels[d2]) {
            int l = labels[d1];
            x = x.diagonal(0, int64_t(d1), int64_t(d2));
            labels.erase(labels.begin() + int64_t(d2));
            labels.erase(labels.begin() + int64_t(d1));
            labels.push_back(l);
            again = true;
          }
    }
    // Labels no other operand or the output uses are summed right away.
    Shape dims;
    std::vector<int> rest;
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      if (first[size_t(l)] == int(i) && last[size_t(l)] == int(i)) dims.push_back(int64_t(d));
      else rest.push_back(l);
    }
    x = sum_keep(x, dims, false);
    Shape perm;
    for (size_t d = 0; d < rest.size(); ++d) perm.push_back(int64_t(d));
    std::sort(perm.begin(), perm.end(), [&](int64_t u, int64_t v) {
      return pos[size_t(rest[size_t(u)])] < pos[size_t(rest[size_t(v)])];
    });
    x = x.permute(perm);
    for (size_t d = 0; d < order.size(); ++d)
      if (std::find(rest.begin(), rest.end(), order[d]) == rest.end()) x = x.unsqueeze(int64_t(d));
    aligned.push_back(x);
  }
  Tensor r = aligned[0];
  for (size_t i = 1; i < aligned.size(); ++i) {
    std::vector<bool> keep(order.size());
    for (size_t d = 0; d < order.size(); ++d) keep[d] = last[size_t(order[d])] > int(i);
    r = contract(r, aligned[i], keep);
  }
  Shape out;
  for (int l : p.out) out.push_back(p.size[size_t(l)]);
  // Whatever is left past the output's dims has size 1 (contracted or summed).
  return {r.reshape(out)};
}

}  // namespace

Tensor einsum(const std::string& equation, const TensorList& operands) {
  Attrs a;
  a.ints = tokenize(equation);
  return dispatch1(OpId::einsum, a, std::span<const Tensor>(operands));
}

namespace ops {
void register_einsum_op() {
  op_def_mut(OpId::einsum).infer = infer_einsum;
  op_def_mut(OpId::einsum).decompose = decompose_einsum;
}
}  // namespace ops

}  // namespace ember
