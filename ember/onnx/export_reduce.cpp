// ember ops as ONNX nodes: reductions, scans and matrix products.
#include "ember/onnx/export_ops.h"

namespace ember::onnx::detail {

namespace {

// --- reductions ---

std::vector<int64_t> reduce_axes(const Emitter& e) {
  const int64_t r = e.input(0).dim();
  std::vector<int64_t> axes;
  for (int64_t d : e.op().attrs.ints) axes.push_back(d < 0 ? d + r : d);
  if (axes.empty())
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  return axes;
}

// ONNX Reduce*: axes an input for ReduceSum from opset 13 (the others from 18).
std::string reduce(Emitter& e, const char* type, const std::string& x,
                   const std::vector<int64_t>& axes, bool keep) {
  const bool axes_input = std::string(type) == "ReduceSum";
  std::string r = axes_input ? e.node1(type, {x, e.ints(axes)}) : e.node1(type, {x});
  if (!axes_input) e.attr("axes", axes);
  e.attr("keepdims", int64_t(keep));
  return r;
}

bool reduce_op(Emitter& e, const char* type) {
  const DType out = e.output().dtype();
  const Tensor& x = e.input(0);
  if (x.dim() == 0) {  // a 0-d tensor reduces to itself
    e.out(0, e.in_as(0, out));
    return true;
  }
  e.out(0, reduce(e, type, e.in_as(0, out), reduce_axes(e), e.op().attrs.b[0]));
  return true;
}

// any / all: a max / min over the values as 0 or 1 (ONNX reduces no bools).
bool any_all(Emitter& e, bool is_any) {
  std::string b = e.in_as(0, kBool);
  std::string v = e.cast(b, kBool, kI32);
  std::string r = e.input(0).dim() == 0 ? v
                                        : reduce(e, is_any ? "ReduceMax" : "ReduceMin", v,
                                                 reduce_axes(e), e.op().attrs.b[0]);
  e.out(0, e.cast(r, kI32, kBool));
  return true;
}

bool count_nonzero(Emitter& e) {
  std::string v = e.cast(e.in_as(0, kBool), kBool, kI64);
  e.out(0, e.input(0).dim() == 0 ? v : reduce(e, "ReduceSum", v, reduce_axes(e), false));
  return true;
}

// sort as a TopK of the whole dim (ties may come out in another order than ember's stable sort).
bool sort(Emitter& e, bool values) {
  const Attrs& a = e.op().attrs;
  const int64_t r = e.input(0).dim(), dim = a.i[0] < 0 ? a.i[0] + r : a.i[0];
  if (r == 0) {
    e.unsupported("of a 0-d tensor");
    return false;
  }
  std::string k = e.sizes({e.input(0).size(dim)}, {e.twin().inputs[0].size(dim)}, false, "k");
  auto o = e.node("TopK", {e.in(0), k}, 2);
  e.attr("axis", dim);
  e.attr("largest", int64_t(a.b[0]));
  e.attr("sorted", int64_t(1));
  if (values) {
    e.out(0, o[0]);
    e.out(1, o[1]);
  } else {
    e.out(0, o[1]);
  }
  return true;
}

bool max_min(Emitter& e, bool is_max) {
  const Attrs& a = e.op().attrs;
  const char* type = is_max ? "ReduceMax" : "ReduceMin";
  if (!a.b[1]) return reduce_op(e, type);
  const int64_t r = e.input(0).dim(), dim = a.i[0] < 0 ? a.i[0] + r : a.i[0];
  std::string x = e.in(0);
  e.out(0, reduce(e, type, x, {dim}, a.b[0]));
  e.out(1, e.node1(is_max ? "ArgMax" : "ArgMin", {x}));
  e.attr("axis", dim);
  e.attr("keepdims", int64_t(a.b[0]));
  return true;
}

bool arg(Emitter& e, bool is_max) {
  const Attrs& a = e.op().attrs;
  const char* type = is_max ? "ArgMax" : "ArgMin";
  std::string x = e.in(0);
  const int64_t r = e.input(0).dim();
  if (a.b[1]) {
    e.out(0, e.node1(type, {x}));
    e.attr("axis", a.i[0] < 0 ? a.i[0] + r : a.i[0]);
    e.attr("keepdims", int64_t(a.b[0]));
    return true;
  }
  std::string flat = e.node1("Reshape", {x, e.ints({-1})});
  std::string i = e.node1(type, {flat});
  e.attr("axis", int64_t(0));
  e.attr("keepdims", int64_t(0));
  if (a.b[0]) i = e.node1("Reshape", {i, e.ints(std::vector<int64_t>(size_t(r), 1))});
  e.out(0, i);
  return true;
}

bool var_std(Emitter& e, bool sd) {
  const DType out = e.output().dtype();
  const Tensor& x = e.input(0);
  const auto axes = reduce_axes(e);
  int64_t n = 1, nb = 1;
  for (int64_t d : axes) {
    n *= x.size(d);
    nb *= e.twin().inputs[0].size(d);
  }
  if (n != nb) {
    e.unsupported("over a dynamic dim");
    return false;
  }
  std::string v = e.in_as(0, out);
  std::string mean = reduce(e, "ReduceMean", v, axes, true);
  std::string dv = e.node1("Sub", {v, mean});
  std::string s = reduce(e, "ReduceSum", e.node1("Mul", {dv, dv}), axes, e.op().attrs.b[0]);
  std::string r = with_const(e, "Div", s, double(n) - e.op().attrs.f[0], out);
  e.out(0, sd ? e.node1("Sqrt", {r}) : r);
  return true;
}

bool norm(Emitter& e) {
  const double p = e.op().attrs.f[0];
  if (p == 2) return reduce_op(e, "ReduceL2");
  if (p == 1) return reduce_op(e, "ReduceL1");
  e.unsupported("p other than 1 and 2");
  return false;
}

// --- matrix products ---

bool matmul(Emitter& e) {
  const DType out = e.output().dtype();
  e.out(0, e.node1("MatMul", {e.in_as(0, out), e.in_as(1, out)}));
  return true;
}

bool linear(Emitter& e) {
  const DType out = e.output().dtype();
  std::string x = e.in_as(0, out), w = e.in_as(1, out);
  if (e.input(0).dim() == 2 && e.input(1).dim() == 2) {
    std::vector<std::string> ins{x, w};
    if (e.has(2)) ins.push_back(e.in_as(2, out));
    e.out(0, e.node1("Gemm", ins));
    e.attr("transB", int64_t(1));
    return true;
  }
  std::string wt = w;
  if (e.input(1).dim() == 2) {
    wt = e.node1("Transpose", {w});
    e.attr("perm", std::vector<int64_t>{1, 0});
  }
  std::string y = e.node1("MatMul", {x, wt});
  if (e.has(2)) y = e.node1("Add", {y, e.in_as(2, out)});
  e.out(0, y);
  return true;
}

bool cumsum(Emitter& e) {
  const DType out = e.output().dtype();
  const int64_t r = e.input(0).dim(), dim = e.op().attrs.i[0];
  e.out(0, e.node1("CumSum", {e.in_as(0, out), e.ints({dim < 0 ? dim + r : dim})}));
  return true;
}

bool topk(Emitter& e) {
  const Attrs& a = e.op().attrs;
  const int64_t r = e.input(0).dim(), dim = a.i[0] < 0 ? a.i[0] + r : a.i[0];
  auto o = e.node("TopK", {e.in(0), e.ints({a.i[1]})}, 2);
  e.attr("axis", dim);
  e.attr("largest", int64_t(a.b[0]));
  e.attr("sorted", int64_t(a.b[1]));
  e.out(0, o[0]);
  e.out(1, o[1]);
  return true;
}

}  // namespace

void add_emit_reduce(EmitTable& t) {
  t[size_t(OpId::sum)] = [](Emitter& e) { return reduce_op(e, "ReduceSum"); };
  t[size_t(OpId::mean)] = [](Emitter& e) { return reduce_op(e, "ReduceMean"); };
  t[size_t(OpId::prod)] = [](Emitter& e) { return reduce_op(e, "ReduceProd"); };
  t[size_t(OpId::amax)] = [](Emitter& e) { return reduce_op(e, "ReduceMax"); };
  t[size_t(OpId::amin)] = [](Emitter& e) { return reduce_op(e, "ReduceMin"); };
  t[size_t(OpId::logsumexp)] = [](Emitter& e) { return reduce_op(e, "ReduceLogSumExp"); };
  t[size_t(OpId::max)] = [](Emitter& e) { return max_min(e, true); };
  t[size_t(OpId::min)] = [](Emitter& e) { return max_min(e, false); };
  t[size_t(OpId::argmax)] = [](Emitter& e) { return arg(e, true); };
  t[size_t(OpId::argmin)] = [](Emitter& e) { return arg(e, false); };
  t[size_t(OpId::var)] = [](Emitter& e) { return var_std(e, false); };
  t[size_t(OpId::std)] = [](Emitter& e) { return var_std(e, true); };
  t[size_t(OpId::norm)] = norm;
  t[size_t(OpId::cumsum)] = cumsum;
  t[size_t(OpId::topk)] = topk;
  t[size_t(OpId::sort)] = [](Emitter& e) { return sort(e, true); };
  t[size_t(OpId::argsort)] = [](Emitter& e) { return sort(e, false); };
  t[size_t(OpId::any)] = [](Emitter& e) { return any_all(e, true); };
  t[size_t(OpId::all)] = [](Emitter& e) { return any_all(e, false); };
  t[size_t(OpId::count_nonzero)] = count_nonzero;

  t[size_t(OpId::mm)] = matmul;
  t[size_t(OpId::bmm)] = matmul;
  t[size_t(OpId::matmul)] = matmul;
  t[size_t(OpId::dot)] = matmul;
  t[size_t(OpId::linear)] = linear;
}

}  // namespace ember::onnx::detail
