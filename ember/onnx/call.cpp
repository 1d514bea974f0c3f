// onnx::call: one ONNX op run outside a graph, through the same op functions as the runtime
// graph (generated code uses it where no single ember function renders the op).
#include "ember/onnx/graph.h"

namespace ember::onnx {
namespace {

detail::Attr to_attr(const Attribute& v) {
  detail::Attr a;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          a.kind = detail::Attr::Int, a.i = x;
        else if constexpr (std::is_same_v<T, double>)
          a.kind = detail::Attr::Float, a.f = x;
        else if constexpr (std::is_same_v<T, std::string>)
          a.kind = detail::Attr::String, a.s = x;
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          a.kind = detail::Attr::Ints, a.ints = x;
        else if constexpr (std::is_same_v<T, std::vector<double>>)
          a.kind = detail::Attr::Floats, a.floats = x;
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          a.kind = detail::Attr::Strings, a.strings = x;
        else
          a.kind = detail::Attr::TensorValue, a.t = x;
      },
      v);
  return a;
}

}  // namespace

TensorList call(const std::string& op_type, const TensorList& inputs, const Attributes& attrs,
                int64_t opset, size_t num_outputs) {
  detail::OpFn fn = detail::find_op(op_type);
  if (!fn) throw UnsupportedError("[onnx] call: op type '" + op_type + "' is not supported");
  detail::Node n;
  n.op_type = op_type;
  n.opset = opset;
  for (const auto& [name, v] : attrs) n.attrs[name] = to_attr(v);
  for (size_t k = 0; k < inputs.size(); ++k) n.in.push_back(inputs[k].defined() ? int(k) : -1);
  for (size_t k = 0; k < num_outputs; ++k) n.out.push_back(int(k));
  n.explicit_in = inputs.size();
  Device device = resolve_device({});
  for (const auto& t : inputs)
    if (t.defined()) {
      device = t.device();
      break;
    }
  TensorList out = fn(detail::OpArgs{n, inputs, device});
  if (out.size() < num_outputs)
    throw NotImplementedError("[onnx] call: " + op_type + " gave " + std::to_string(out.size()) +
                              " outputs, " + std::to_string(num_outputs) + " were asked for");
  out.resize(num_outputs);
  return out;
}

}  // namespace ember::onnx
