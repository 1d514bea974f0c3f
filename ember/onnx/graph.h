#pragma once
// The runtime graph: nodes in topological order over numbered values, each node bound at load
// to the function that runs its ONNX op as ember ops. No protobuf type appears here, so the op
// files compile without ONNX's headers. Private to ember::onnx.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/onnx.h"

namespace ember::onnx::detail {

/// One attribute of a node, converted from its AttributeProto at load.
struct Attr {
  enum Kind { Float, Int, String, TensorValue, Floats, Ints, Strings, Other } kind = Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node;
/// What an op function sees: the node (attributes, opset) and its inputs; an input the model
/// leaves out ("" in the node's input list) is an undefined Tensor.
struct OpArgs {
  const Node& node;
  std::span<const Tensor> in;
  Device device;  // where the graph runs (creation ops place their results here)
  size_t size() const { return in.size(); }
  bool has(size_t i) const { return i < in.size() && in[i].defined(); }
  /// Input i; throws ModelError naming the node when it is missing.
  const Tensor& operator[](size_t i) const;
};
/// Runs one ONNX op; returns its outputs in order (fewer than the node lists is an error unless
/// the missing ones are unused).
using OpFn = TensorList (*)(const OpArgs&);

struct Node {
  std::string op_type, name, domain;
  int64_t opset = 0;  // the version imported for the node's domain
  std::map<std::string, Attr, std::less<>> attrs;
  std::vector<int> in, out;  // value ids; -1 = an omitted optional input/output
  OpFn fn = nullptr;

  bool has(std::string_view a) const { return attrs.find(a) != attrs.end(); }
  int64_t i(std::string_view a, int64_t def) const;
  double f(std::string_view a, double def) const;
  std::string s(std::string_view a, const std::string& def) const;
  std::vector<int64_t> ints(std::string_view a, std::vector<int64_t> def = {}) const;
  std::vector<double> floats(std::string_view a, std::vector<double> def = {}) const;
  /// A tensor attribute, or an undefined Tensor.
  Tensor tensor(std::string_view a) const;
  /// "Conv node 'conv1'" for messages.
  std::string where() const;
};

struct Graph {
  std::vector<std::string> names;       // per value id
  std::vector<Tensor> constants;        // per value id: defined for initializers and folded values
  std::vector<int> inputs, outputs;     // graph inputs (needing a value at run) and outputs
  std::vector<Tensor> input_defaults;   // per graph input: an initializer of the same name, or {}
  std::vector<Node> nodes;              // topological order, after folding
  std::vector<std::vector<int>> frees;  // per node: values whose last use it is
};

/// The ember dtype of an ONNX TensorProto.DataType, or nothing when ember has none (strings,
/// unsigned 16/32/64-bit, complex).
std::optional<DType> dtype_of(int32_t onnx_type);

/// The op function for `op_type` in the default domain, or nullptr.
OpFn find_op(std::string_view op_type);
/// Ops that must not be folded at load though their inputs are constant (random ones).
bool is_nondeterministic(std::string_view op_type);

/// Folds every node whose inputs are all constant, drops nodes no output depends on, and plans
/// when each value is freed. Throws UnsupportedError listing every op type without a function.
void prepare(Graph& g, const std::string& model);
/// Runs a prepared graph: `inputs` per g.inputs (undefined = use the default). Values are freed
/// after their last use.
TensorList run_graph(const Graph& g, std::span<const Tensor> inputs, Device device);

}  // namespace ember::onnx::detail

namespace ember::onnx {
struct Model::Impl {
  detail::Graph graph;
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, int64_t> opsets;
  int64_t ir_version = 0;
  std::string producer, name;
  std::map<std::string, std::string> metadata;
};
}  // namespace ember::onnx
