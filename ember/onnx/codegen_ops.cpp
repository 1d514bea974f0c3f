// The ops the code generator renders as one ember call. Each renderer returns nothing unless
// the call computes exactly what the runtime graph's op function does for these attributes
// and the dtypes and ranks the trace saw; the generator falls back to onnx::call then.
#include <algorithm>

#include "ember/ember.h"
#include "ember/onnx/codegen.h"

namespace ember::onnx::detail {
namespace {

using Args = std::vector<std::string>;
using Out = std::optional<std::string>;

bool all_ones(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// The constant integer values of input k, when it is a constant.
std::optional<std::vector<int64_t>> const_ints(const Node& n, size_t k, const Emit& e) {
  if (k >= n.in.size()) return std::nullopt;
  const Tensor* t = e.constant(n.in[k]);
  if (!t || is_floating(t->dtype())) return std::nullopt;
  return t->to_vector<int64_t>();
}

Out conv(const Node& n, const Args& in, const Emit& e) {
  const Tensor* w = e.constant(n.in[1]);
  if (!w || n.s("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  size_t s = size_t(w->dim() - 2);
  if (s < 1 || s > 3) return std::nullopt;
  auto pads = n.ints("pads", std::vector<int64_t>(2 * s, 0));
  std::vector<int64_t> begin(pads.begin(), pads.begin() + int64_t(s)),
      end(pads.begin() + int64_t(s), pads.end());
  if (begin != end) return std::nullopt;
  auto strides = n.ints("strides", std::vector<int64_t>(s, 1));
  auto dil = n.ints("dilations", std::vector<int64_t>(s, 1));
  int64_t groups = n.i("group", 1);
  std::string o;
  auto field = [&](const std::string& f) { o += (o.empty() ? "" : ", ") + f; };
  if (!all_ones(strides)) field(".stride = " + ints_list(strides));
  if (std::any_of(begin.begin(), begin.end(), [](int64_t p) { return p != 0; }))
    field(".padding = " + ints_list(begin));
  if (!all_ones(dil)) field(".dilation = " + ints_list(dil));
  if (groups != 1) field(".groups = " + std::to_string(groups));
  std::string b = n.in.size() > 2 && n.in[2] >= 0 ? in[2] : "{}";
  return "conv" + std::to_string(s) + "d(" + in[0] + ", " + in[1] + ", " + b +
         (o.empty() ? "" : ", {" + o + "}") + ")";
}

Out max_pool(const Node& n, const Args& in, const Emit& e) {
  auto k = n.ints("kernel_shape");
  if (k.size() != 2 || n.s("auto_pad", "NOTSET") != "NOTSET" || n.i("storage_order", 0))
    return std::nullopt;
  if (!e.type(n.in[0]).known || !is_floating(e.type(n.in[0]).dtype)) return std::nullopt;
  auto pads = n.ints("pads", {0, 0, 0, 0});
  if (pads[0] != pads[2] || pads[1] != pads[3] || 2 * pads[0] > k[0] || 2 * pads[1] > k[1])
    return std::nullopt;
  auto strides = n.ints("strides", {1, 1});
  std::string o = ".kernel_size = " + ints_list(k) + ", .stride = " + ints_list(strides);
  if (pads[0] || pads[1]) o += ", .padding = " + ints_list({pads[0], pads[1]});
  auto dil = n.ints("dilations", {1, 1});
  if (!all_ones(dil)) o += ", .dilation = " + ints_list(dil);
  if (n.i("ceil_mode", 0)) o += ", .ceil_mode = true";
  return "max_pool2d(" + in[0] + ", {" + o + "})";
}

Out gemm(const Node& n, const Args& in, const Emit& e) {
  if (n.f("alpha", 1.0) != 1.0 || n.f("beta", 1.0) != 1.0 || n.i("transA", 0)) return std::nullopt;
  bool has_c = n.in.size() > 2 && n.in[2] >= 0;
  if (n.i("transB", 0)) return "linear(" + in[0] + ", " + in[1] + (has_c ? ", " + in[2] : "") + ")";
  return has_c ? "add(matmul(" + in[0] + ", " + in[1] + "), " + in[2] + ")"
               : "matmul(" + in[0] + ", " + in[1] + ")";
}

Out layer_norm(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  const Tensor* w = e.constant(n.in[1]);
  if (!t.known || t.dtype != kF32 || !w || w->dim() != 1) return std::nullopt;
  int64_t axis = n.i("axis", -1);
  if (axis != -1 && axis != t.rank - 1) return std::nullopt;
  bool has_b = n.in.size() > 2 && n.in[2] >= 0;
  return "layer_norm(" + in[0] + ", {" + std::to_string(w->size(0)) + "}, " + in[1] + ", " +
         (has_b ? in[2] : "{}") + ", " + number(n.f("epsilon", 1e-5), kF64) + ")";
}

Out reduce_mean(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  if (!t.known || !is_floating(t.dtype) || n.opset >= 18 || !n.has("axes")) return std::nullopt;
  auto axes = n.ints("axes");
  for (auto& a : axes)
    if (a < 0) a += t.rank;
  return "mean(" + in[0] + ", " + ints_list(axes) + ", " + (n.i("keepdims", 1) ? "true" : "false") +
         ")";
}

Out transpose(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  std::vector<int64_t> perm = n.ints("perm");
  if (perm.empty()) {
    if (!t.known) return std::nullopt;
    for (int64_t d = t.rank; d-- > 0;) perm.push_back(d);
  }
  return "permute(" + in[0] + ", " + ints_list(perm) + ")";
}

Out unsqueeze(const Node& n, const Args& in, const Emit& e) {
  auto axes = n.opset >= 13 ? const_ints(n, 1, e) : std::optional(n.ints("axes"));
  ValueType t = e.type(n.in[0]);
  if (!axes || axes->size() != 1 || !t.known) return std::nullopt;
  int64_t a = (*axes)[0] < 0 ? (*axes)[0] + t.rank + 1 : (*axes)[0];
  return "unsqueeze(" + in[0] + ", " + std::to_string(a) + ")";
}

Out reshape(const Node& n, const Args& in, const Emit& e) {
  auto shape = const_ints(n, 1, e);
  if (!shape || n.i("allowzero", 0)) return std::nullopt;
  std::string dims = "{";
  for (size_t k = 0; k < shape->size(); ++k) {
    int64_t d = (*shape)[k];
    dims +=
        (k ? ", " : "") + (d == 0 ? in[0] + ".size(" + std::to_string(k) + ")" : std::to_string(d));
  }
  return "reshape(" + in[0] + ", " + dims + "})";
}

Out flatten(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  int64_t axis = n.i("axis", 1);
  if (!t.known || axis != 1 || t.rank < 2) return std::nullopt;
  return "flatten(" + in[0] + ", 1)";
}

Out softmax(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  if (!t.known || n.opset < 13) return std::nullopt;
  return "softmax(" + in[0] + ", " + std::to_string(n.i("axis", -1)) + ")";
}

Out div_op(const Node& n, const Args& in, const Emit& e) {
  ValueType t = e.type(n.in[0]);
  if (!t.known || !is_floating(t.dtype)) return std::nullopt;
  return "div(" + in[0] + ", " + in[1] + ")";
}

Out concat(const Node& n, const Args& in, const Emit& e) {
  std::string s = "cat({";
  for (size_t k = 0; k < in.size(); ++k) s += (k ? ", " : "") + in[k];
  return s + "}, " + std::to_string(n.i("axis", 0)) + ")";
}

Out gather(const Node& n, const Args& in, const Emit& e) {
  const Tensor* idx = e.constant(n.in[1]);
  ValueType t = e.type(n.in[0]);
  if (!idx || idx->dim() != 0 || is_floating(idx->dtype()) || !t.known) return std::nullopt;
  int64_t i = idx->to_vector<int64_t>()[0], axis = n.i("axis", 0);
  if (i < 0) return std::nullopt;
  if (axis < 0) axis += t.rank;
  return in[0] + ".select(" + std::to_string(axis) + ", " + std::to_string(i) + ")";
}

Out squeeze(const Node& n, const Args& in, const Emit& e) {
  auto axes = n.opset >= 13 ? const_ints(n, 1, e) : std::optional(n.ints("axes"));
  ValueType t = e.type(n.in[0]);
  if (!axes || axes->size() != 1 || !t.known) return std::nullopt;
  int64_t a = (*axes)[0] < 0 ? (*axes)[0] + t.rank : (*axes)[0];
  return in[0] + ".squeeze(" + std::to_string(a) + ")";
}

Out cast(const Node& n, const Args& in, const Emit& e) {
  auto d = dtype_of(int32_t(n.i("to", 0)));
  if (!d) return std::nullopt;
  return in[0] + ".to(" + cpp_dtype(*d) + ")";
}

}  // namespace

std::optional<std::string> native_expr(const Node& n, const std::vector<std::string>& in,
                                       const Emit& e) {
  if (!n.domain.empty()) return std::nullopt;
  static const std::map<std::string, std::string, std::less<>> unary = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"}, {"Log", "log"},
      {"Sqrt", "sqrt"}, {"Neg", "neg"},         {"Abs", "abs"},   {"Erf", "erf"}};
  static const std::map<std::string, std::string, std::less<>> binary = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"MatMul", "matmul"}};
  if (auto it = unary.find(n.op_type); it != unary.end() && in.size() == 1)
    return it->second + "(" + in[0] + ")";
  if (auto it = binary.find(n.op_type); it != binary.end() && in.size() == 2)
    return it->second + "(" + in[0] + ", " + in[1] + ")";
  using Fn = Out (*)(const Node&, const Args&, const Emit&);
  static const std::map<std::string, Fn, std::less<>> table = {{"Conv", conv},
                                                               {"MaxPool", max_pool},
                                                               {"Gemm", gemm},
                                                               {"LayerNormalization", layer_norm},
                                                               {"ReduceMean", reduce_mean},
                                                               {"Transpose", transpose},
                                                               {"Unsqueeze", unsqueeze},
                                                               {"Reshape", reshape},
                                                               {"Flatten", flatten},
                                                               {"Softmax", softmax},
                                                               {"Div", div_op},
                                                               {"Concat", concat},
                                                               {"Cast", cast},
                                                               {"Gather", gather},
                                                               {"Squeeze", squeeze}};
  if (n.op_type == "Identity") return in[0];
  if (n.op_type == "GlobalAveragePool" && e.type(n.in[0]).known && e.type(n.in[0]).rank == 4)
    return "mean(" + in[0] + ", {2, 3}, true)";
  auto it = table.find(n.op_type);
  return it == table.end() ? std::nullopt : it->second(n, in, e);
}

}  // namespace ember::onnx::detail
