#pragma once
// The runtime graph: nodes in topological order over numbered values, each node bound at load
// to the function that runs its ONNX op as ember ops. No protobuf type appears here, so the op
// files compile without ONNX's headers. Private to ember::onnx.
#include <map>
#include <memory>
#include <mutex>
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

/// What an op on sequences, optionals or subgraphs sees: its inputs as values (the explicit
/// ones first, then the outer values its subgraphs capture).
struct ValueArgs {
  const Node& node;
  std::span<const Value> in;
  Device device;
  bool has(size_t i) const { return i < in.size() && !in[i].is_none(); }
  /// Input i as a tensor; ModelError naming the node when it is missing or not a tensor.
  const Tensor& tensor(size_t i) const;
  /// Input i as a sequence; ModelError naming the node otherwise.
  const std::vector<Tensor>& sequence(size_t i) const;
};
using ValueFn = std::vector<Value> (*)(const ValueArgs&);

struct Graph;
/// A subgraph attribute (If's branches, Loop's and Scan's body): its graph, and where in the
/// node's inputs the outer values it captures begin (one per entry of its `captures`).
struct Subgraph {
  std::shared_ptr<Graph> graph;
  size_t first_capture = 0;
};

struct Node {
  std::string op_type, name, domain;
  int64_t opset = 0;  // the version imported for the node's domain
  std::map<std::string, Attr, std::less<>> attrs;
  std::vector<int> in, out;  // value ids; -1 = an omitted optional input/output
  size_t explicit_in = 0;    // in[explicit_in:] are the outer values subgraphs capture
  std::map<std::string, Subgraph, std::less<>> graphs;
  OpFn fn = nullptr;
  ValueFn vfn = nullptr;  // set instead of fn for ops on values other than tensors

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

/// A graph's constants copied to the devices it ran on, made at the first run on each place
/// (the weights would otherwise be copied from flex's memory to cpu's on every run).
struct PlacedConstants {
  std::mutex mu;
  std::vector<std::shared_ptr<const std::vector<Tensor>>> places;  // one per device place
};

struct Graph {
  std::vector<std::string> names;       // per value id
  std::vector<Tensor> constants;        // per value id: defined for initializers and folded values
  std::vector<bool> initializer;        // per value id: an initializer of the model
  std::vector<int> inputs, outputs;     // graph inputs (needing a value at run) and outputs
  std::vector<Tensor> input_defaults;   // per graph input: an initializer of the same name, or {}
  std::vector<Node> nodes;              // topological order, after folding
  std::vector<std::vector<int>> frees;  // per node: values whose last use it is
  std::vector<int> captures;            // a subgraph's values that come from an outer graph
  std::shared_ptr<PlacedConstants> placed = std::make_shared<PlacedConstants>();
  /// `constants` on `device`'s place (flex's are `constants` themselves), kept for later runs.
  std::shared_ptr<const std::vector<Tensor>> constants_on(Device device) const;
  /// The subgraph named `name` of node n; ModelError when it has none.
  static const Subgraph& of(const Node& n, std::string_view name);
};

/// The ember dtype of an ONNX TensorProto.DataType, or nothing when ember has none (strings,
/// unsigned 16/32/64-bit, complex).
std::optional<DType> dtype_of(int32_t onnx_type);

/// The op function for `op_type` in the default domain, or nullptr.
OpFn find_op(std::string_view op_type);
/// The value op (sequences, optionals, control flow) for `op_type`, or nullptr.
ValueFn find_value_op(std::string_view op_type);
/// Ops that must not be folded at load though their inputs are constant (random ones).
bool is_nondeterministic(std::string_view op_type);

/// Folds every node whose inputs are all constant, drops nodes no output depends on, and plans
/// when each value is freed. Throws UnsupportedError listing every op type without a function.
void prepare(Graph& g, const std::string& model);
/// Runs a prepared graph: `inputs` per g.inputs (None = use the default), `captures` per
/// g.captures. Values are freed after their last use.
std::vector<Value> run_graph(const Graph& g, std::span<const Value> inputs,
                             std::span<const Value> captures, Device device);
/// Runs subgraph `name` of the node whose value inputs are `a`, with the given inputs.
std::vector<Value> run_subgraph(const ValueArgs& a, std::string_view name,
                                std::span<const Value> inputs);

}  // namespace ember::onnx::detail

namespace ember::onnx {
struct Model::Impl {
  detail::Graph graph;
  std::vector<ValueInfo> inputs, outputs;
  bool tensors_only = true;  // no input or output is a sequence or optional
  std::map<std::string, int64_t> opsets;
  int64_t ir_version = 0;
  std::string producer, name;
  std::map<std::string, std::string> metadata;
};
}  // namespace ember::onnx
