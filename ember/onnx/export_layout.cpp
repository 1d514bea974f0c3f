// ember ops as ONNX nodes: layout (views, joins, copies), indexing and creation.
#include <climits>

#include "ember/ember.h"
#include "ember/onnx/export_ops.h"
#include "ember/ops/modes.h"
#include "ember/tensor_impl.h"

namespace ember::onnx::detail {

namespace {

// --- layout ---

bool reshape(Emitter& e) {
  const Shape& a = e.output().shape();
  const Shape& b = e.twin().outputs[0].shape();
  if (e.input(0).shape() == a && e.twin().inputs[0].shape() == b) {
    e.out(0, e.in(0));
    return true;
  }
  e.out(0, e.node1("Reshape", {e.in(0), e.sizes(vec(a), vec(b), true, "shape")}));
  return true;
}

bool transpose_to(Emitter& e, const std::vector<int64_t>& perm) {
  bool same = true;
  for (size_t k = 0; k < perm.size(); ++k) same = same && perm[k] == int64_t(k);
  if (same) {
    e.out(0, e.in(0));
    return true;
  }
  e.out(0, e.node1("Transpose", {e.in(0)}));
  e.attr("perm", perm);
  return true;
}

bool permute(Emitter& e) {
  const int64_t r = e.input(0).dim();
  std::vector<int64_t> perm;
  for (int64_t d : e.op().attrs.ints) perm.push_back(norm_dim(d, r));
  return transpose_to(e, perm);
}

bool transpose(Emitter& e) {
  const int64_t r = e.input(0).dim();
  if (r < 2) {
    e.out(0, e.in(0));
    return true;
  }
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < r; ++k) perm.push_back(k);
  std::swap(perm[size_t(norm_dim(e.op().attrs.i[0], r))],
            perm[size_t(norm_dim(e.op().attrs.i[1], r))]);
  return transpose_to(e, perm);
}

bool movedim(Emitter& e) {
  const int64_t r = e.input(0).dim();
  const Attrs& a = e.op().attrs;
  std::vector<int64_t> perm(size_t(r), -1);
  std::vector<bool> used(size_t(r), false);
  for (size_t k = 0; k < a.ints.size(); ++k) {
    int64_t s = norm_dim(a.ints[k], r), d = norm_dim(a.ints2[k], r);
    perm[size_t(d)] = s;
    used[size_t(s)] = true;
  }
  int64_t next = 0;
  for (auto& p : perm) {
    if (p >= 0) continue;
    while (used[size_t(next)]) ++next;
    p = next++;
  }
  return transpose_to(e, perm);
}

bool squeeze(Emitter& e) {
  const Tensor& x = e.input(0);
  std::vector<int64_t> dims, axes;
  for (int64_t d : e.op().attrs.ints) dims.push_back(norm_dim(d, x.dim()));
  if (e.op().attrs.ints.empty())
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  for (int64_t d : dims)
    if (x.size(d) == 1) axes.push_back(d);
  if (axes.empty()) {
    e.out(0, e.in(0));
    return true;
  }
  e.out(0, e.node1("Squeeze", {e.in(0), e.ints(axes)}));
  return true;
}

bool unsqueeze(Emitter& e) {
  const int64_t d = norm_dim(e.op().attrs.i[0], e.input(0).dim() + 1);
  e.out(0, e.node1("Unsqueeze", {e.in(0), e.ints({d})}));
  return true;
}

bool expand(Emitter& e) {
  const Shape &xa = e.input(0).shape(), &xb = e.twin().inputs[0].shape();
  const Shape &ya = e.output().shape(), &yb = e.twin().outputs[0].shape();
  if (xa == ya && xb == yb) {
    e.out(0, e.in(0));
    return true;
  }
  // Expand broadcasts both ways: a dim the input already has may be 1 (so it follows the input).
  std::vector<int64_t> ta = vec(ya), tb = vec(yb);
  const size_t off = ya.size() - xa.size();
  for (size_t k = off; k < ya.size(); ++k)
    if (xa[k - off] == ya[k] && k < yb.size() && xb.size() == xa.size() && xb[k - off] == yb[k])
      ta[k] = tb[k] = 1;
  e.out(0, e.node1("Expand", {e.in(0), e.sizes(ta, tb, false, "shape")}));
  return true;
}

bool copy(Emitter& e) {
  if (e.op().inputs.size() == 1) {  // clone
    e.out(0, e.in(0));
    return true;
  }
  const Tensor& dst = e.input(0);
  if (dst.impl()->is_view) {
    e.unsupported("an in-place write into a view");
    return false;
  }
  std::string v = e.in_as(1, dst.dtype());
  if (e.input(1).shape() != dst.shape())
    v = e.node1("Expand",
                {v, e.sizes(vec(dst.shape()), vec(e.twin().inputs[0].shape()), false, "shape")});
  e.bind_input(dst, v);  // later reads of dst see the copied value
  e.out(0, v);
  return true;
}

bool cat(Emitter& e) {
  const DType out = e.output().dtype();
  std::vector<std::string> ins;
  for (size_t k = 0; k < e.op().inputs.size(); ++k) {
    const Tensor& t = e.input(k);
    if (t.dim() == 1 && t.numel() == 0 && e.output().dim() != 1) continue;  // torch's legacy
    ins.push_back(e.in_as(k, out));
  }
  if (ins.size() == 1) {
    e.out(0, ins[0]);
    return true;
  }
  e.out(0, e.node1("Concat", ins));
  e.attr("axis", norm_dim(e.op().attrs.i[0], e.output().dim()));
  return true;
}

bool stack(Emitter& e) {
  const DType out = e.output().dtype();
  const int64_t d = norm_dim(e.op().attrs.i[0], e.output().dim());
  std::vector<std::string> ins;
  for (size_t k = 0; k < e.op().inputs.size(); ++k)
    ins.push_back(e.node1("Unsqueeze", {e.in_as(k, out), e.ints({d})}));
  e.out(0, ins.size() == 1 ? ins[0] : e.node1("Concat", ins));
  if (ins.size() > 1) e.attr("axis", d);
  return true;
}

bool repeat(Emitter& e) {
  const std::vector<int64_t> reps = vec(e.op().attrs.ints);
  std::string x = e.in(0);
  const int64_t extra = int64_t(reps.size()) - e.input(0).dim();
  if (extra > 0) {
    std::vector<int64_t> axes;
    for (int64_t k = 0; k < extra; ++k) axes.push_back(k);
    x = e.node1("Unsqueeze", {x, e.ints(axes)});
  }
  e.out(0, e.node1("Tile", {x, e.ints(reps)}));
  return true;
}

bool flip(Emitter& e) {
  std::vector<int64_t> axes;
  for (int64_t d : e.op().attrs.ints) axes.push_back(norm_dim(d, e.input(0).dim()));
  const size_t n = axes.size();
  e.out(0, e.node1("Slice", {e.in(0), e.ints(std::vector<int64_t>(n, -1)),
                             e.ints(std::vector<int64_t>(n, INT64_MIN)), e.ints(axes),
                             e.ints(std::vector<int64_t>(n, -1))}));
  return true;
}

// roll along dims: the last `s` entries, then the rest.
bool roll(Emitter& e) {
  const Attrs& a = e.op().attrs;
  if (a.ints2.empty()) {
    e.unsupported("of the flattened tensor");
    return false;
  }
  std::string x = e.in(0);
  for (size_t k = 0; k < a.ints.size() && k < a.ints2.size(); ++k) {
    const int64_t d = norm_dim(a.ints2[k], e.input(0).dim());
    const int64_t n = e.input(0).size(d);
    if (n != e.twin().inputs[0].size(d)) {
      e.unsupported("along a dynamic dim");
      return false;
    }
    const int64_t s = n ? ((a.ints[k] % n) + n) % n : 0;
    if (s == 0) continue;
    std::string tail = e.node1("Slice", {x, e.ints({n - s}), e.ints({n}), e.ints({d})});
    std::string head = e.node1("Slice", {x, e.ints({0}), e.ints({n - s}), e.ints({d})});
    x = e.node1("Concat", {tail, head});
    e.attr("axis", d);
  }
  e.out(0, x);
  return true;
}

bool one_hot(Emitter& e) {
  const Tensor& y = e.output();
  const int64_t depth = y.size(-1);
  if (depth != e.twin().outputs[0].size(-1)) {
    e.unsupported("with num_classes from the data");
    return false;
  }
  const Tensor values = tensor(std::vector<int64_t>{0, 1}, {2}, y.dtype(), Device::flex());
  e.out(0, e.node1("OneHot", {e.in_as(0, kI64), e.ints({depth}), e.constant(values)}));
  e.attr("axis", int64_t(-1));
  return true;
}

bool trilu(Emitter& e, bool upper) {
  if (e.opset() < 14) {
    e.unsupported("Trilu needs opset 14");
    return false;
  }
  e.out(0, e.node1("Trilu", {e.in(0), e.scalar(double(e.op().attrs.i[0]), kI64)}));
  e.attr("upper", int64_t(upper));
  return true;
}

bool pad(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const int64_t r = e.input(0).dim();
  std::vector<int64_t> pads(size_t(2 * r), 0);
  for (size_t p = 0; 2 * p + 1 < a.ints.size(); ++p) {
    const size_t d = size_t(r) - 1 - p;
    pads[d] = a.ints[2 * p];
    pads[d + size_t(r)] = a.ints[2 * p + 1];
  }
  const char* mode = nullptr;
  switch (ops::PadMode(a.mode)) {
    case ops::PadMode::Constant:
      mode = "constant";
      break;
    case ops::PadMode::Reflect:
      mode = "reflect";
      break;
    case ops::PadMode::Replicate:
      mode = "edge";
      break;
    case ops::PadMode::Circular:
      e.unsupported("circular");
      return false;
  }
  std::vector<std::string> ins{e.in(0), e.ints(pads)};
  if (ops::PadMode(a.mode) == ops::PadMode::Constant)
    ins.push_back(e.scalar(a.f[0], e.input(0).dtype()));
  e.out(0, e.node1("Pad", ins));
  e.attr("mode", std::string(mode));
  return true;
}

// A start or stop as a 1-D value: a constant, or where it differs between the traces, counted
// from the dim's end (when it sits as far from it in both) or computed from the dynamic dims.
std::string bound(Emitter& e, int64_t a, int64_t b, int64_t na, int64_t nb) {
  if (a == b) return e.ints({a});
  if (a - na == b - nb) return e.ints({a - na});
  std::string v = e.express(a, b);
  if (v.empty()) e.unsupported("a bound that follows no dynamic dim");
  return v;
}

bool slice(Emitter& e) {
  const Attrs &a = e.op().attrs, &ab = e.twin().attrs;
  const int64_t dim = norm_dim(a.i[0], e.input(0).dim());
  const int64_t na = e.input(0).size(dim), nb = e.twin().inputs[0].size(dim);
  std::string start = a.b[0] ? bound(e, a.i[1], ab.i[1], na, nb) : e.ints({0});
  std::string stop = a.b[1] ? bound(e, a.i[2], ab.i[2], na, nb) : e.ints({INT64_MAX});
  if (start.empty() || stop.empty()) return false;
  e.out(0, e.node1("Slice",
                   {e.in(0), start, stop, e.ints({dim}), e.ints({a.i[3] == 0 ? 1 : a.i[3]})}));
  return true;
}

bool narrow(Emitter& e) {
  const Attrs &a = e.op().attrs, &ab = e.twin().attrs;
  const int64_t dim = norm_dim(a.i[0], e.input(0).dim());
  const int64_t na = e.input(0).size(dim), nb = e.twin().inputs[0].size(dim);
  const int64_t sa = a.i[1] < 0 ? a.i[1] + na : a.i[1], sb = ab.i[1] < 0 ? ab.i[1] + nb : ab.i[1];
  std::string start = bound(e, sa, sb, na, nb), stop = bound(e, sa + a.i[2], sb + ab.i[2], na, nb);
  if (start.empty() || stop.empty()) return false;
  e.out(0, e.node1("Slice", {e.in(0), start, stop, e.ints({dim})}));
  return true;
}

bool select(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const int64_t dim = norm_dim(a.i[0], e.input(0).dim());
  std::string index;  // 0-d, so that Gather drops the dim as select does
  if (a.i[1] == e.twin().attrs.i[1]) {
    index = e.scalar(double(a.i[1]), kI64);
  } else {
    index =
        bound(e, a.i[1], e.twin().attrs.i[1], e.input(0).size(dim), e.twin().inputs[0].size(dim));
    if (index.empty()) return false;
    index = e.node1("Squeeze", {index, e.ints({0})});
  }
  e.out(0, e.node1("Gather", {e.in(0), index}));
  e.attr("axis", dim);
  return true;
}

bool gather_op(Emitter& e, const char* type) {
  e.out(0, e.node1(type, {e.in(0), e.in_as(1, kI64)}));
  e.attr("axis", norm_dim(e.op().attrs.i[0], e.input(0).dim()));
  return true;
}

bool embedding(Emitter& e) {
  e.out(0, e.node1("Gather", {e.in(1), e.in_as(0, kI64)}));
  e.attr("axis", int64_t(0));
  return true;
}

bool masked_fill(Emitter& e) {
  const DType d = e.output().dtype();
  std::string v =
      e.op().inputs.size() > 2 ? e.in_as(2, d) : e.scalar(e.op().attrs.s[0].to_double(), d);
  e.out(0, e.node1("Where", {e.in_as(1, kBool), v, e.in_as(0, d)}));
  return true;
}

// --- creation ---

double fill_value(const TracedOp& op) {
  switch (op.op) {
    case OpId::ones:
    case OpId::ones_like:
      return 1;
    case OpId::full:
    case OpId::full_like:
      return op.attrs.s[0].to_double();
    default:
      return 0;
  }
}

bool fill(Emitter& e) {
  const Tensor& y = e.output();
  const double v = fill_value(e.op());
  const Tensor one = full({1}, v, {.dtype = y.dtype(), .device = Device::flex()});
  const Shape& b = e.twin().outputs[0].shape();
  if (y.shape() == b) {
    e.out(0, e.constant(full(y.shape(), v, {.dtype = y.dtype(), .device = Device::flex()})));
    return true;
  }
  e.out(0, e.node1("ConstantOfShape", {e.sizes(vec(y.shape()), vec(b), false, "shape")}));
  e.attr("value", one);
  return true;
}

bool fill_like(Emitter& e) {
  const Tensor& y = e.output();
  const Tensor one = full({1}, fill_value(e.op()), {.dtype = y.dtype(), .device = Device::flex()});
  e.out(0, e.node1("ConstantOfShape", {e.node1("Shape", {e.in(0)})}));
  e.attr("value", one);
  return true;
}

bool arange(Emitter& e) {
  const Tensor& y = e.output();
  if (y.shape() == e.twin().outputs[0].shape()) {
    e.out(0, e.constant(y));
    return true;
  }
  const Attrs &a = e.op().attrs, &b = e.twin().attrs;
  if (a.s[0].to_double() != b.s[0].to_double() || a.s[2].to_double() != b.s[2].to_double() ||
      a.s[1].is_floating()) {
    e.unsupported("a dynamic start or step");
    return false;
  }
  std::string limit =
      e.cast(e.size(a.s[1].to<int64_t>(), b.s[1].to<int64_t>(), "end"), kI64, y.dtype());
  e.out(0, e.node1("Range", {e.scalar(a.s[0].to_double(), y.dtype()), limit,
                             e.scalar(a.s[2].to_double(), y.dtype())}));
  return true;
}

bool constant_only(Emitter& e) {
  if (e.output().shape() != e.twin().outputs[0].shape()) {
    e.unsupported("a dynamic size");
    return false;
  }
  e.out(0, e.constant(e.output()));
  return true;
}

}  // namespace

void add_emit_layout(EmitTable& t) {
  for (OpId op : {OpId::reshape, OpId::view, OpId::flatten, OpId::unflatten})
    t[size_t(op)] = reshape;
  t[size_t(OpId::permute)] = permute;
  t[size_t(OpId::transpose)] = transpose;
  t[size_t(OpId::movedim)] = movedim;
  t[size_t(OpId::squeeze)] = squeeze;
  t[size_t(OpId::unsqueeze)] = unsqueeze;
  t[size_t(OpId::expand)] = expand;
  t[size_t(OpId::broadcast_to)] = expand;
  t[size_t(OpId::contiguous)] = [](Emitter& e) {
    e.out(0, e.in(0));
    return true;
  };
  t[size_t(OpId::copy)] = copy;
  t[size_t(OpId::cat)] = cat;
  t[size_t(OpId::stack)] = stack;
  t[size_t(OpId::repeat)] = repeat;
  t[size_t(OpId::flip)] = flip;
  t[size_t(OpId::tril)] = [](Emitter& e) { return trilu(e, false); };
  t[size_t(OpId::triu)] = [](Emitter& e) { return trilu(e, true); };
  t[size_t(OpId::pad)] = pad;
  t[size_t(OpId::roll)] = roll;
  t[size_t(OpId::one_hot)] = one_hot;
  t[size_t(OpId::slice)] = slice;
  t[size_t(OpId::narrow)] = narrow;
  t[size_t(OpId::select)] = select;
  t[size_t(OpId::index_select)] = [](Emitter& e) { return gather_op(e, "Gather"); };
  t[size_t(OpId::gather)] = [](Emitter& e) { return gather_op(e, "GatherElements"); };
  t[size_t(OpId::embedding)] = embedding;
  t[size_t(OpId::masked_fill)] = masked_fill;

  for (OpId op : {OpId::full, OpId::zeros, OpId::ones, OpId::empty}) t[size_t(op)] = fill;
  for (OpId op : {OpId::full_like, OpId::zeros_like, OpId::ones_like, OpId::empty_like})
    t[size_t(op)] = fill_like;
  t[size_t(OpId::arange)] = arange;
  t[size_t(OpId::linspace)] = constant_only;
  t[size_t(OpId::eye)] = constant_only;
}

}  // namespace ember::onnx::detail
