#pragma once
// ONNX models in ember (library ember::onnx, built when libonnx-dev is found): load a model
// file (ONNX's own protobuf classes and checker read it), then run it as a graph of ember ops on
// any device. Every ONNX or protobuf header stays inside the library.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::nn {
class Module;
}

namespace ember::onnx {

/// A file that is not a valid ONNX model: unparsable or truncated bytes, the checker's verdict,
/// a tensor whose bytes do not match its shape, external data outside its file.
class ModelError : public ValueError { using ValueError::ValueError; };
/// A model file (or its external data) that cannot be read.
class IOError : public Error { using Error::Error; };
/// A model using op types ember cannot run; the one message lists every such type with its node
/// count and the first node's name.
class UnsupportedError : public NotImplementedError { using NotImplementedError::NotImplementedError; };

/// A value of a graph that need not be a tensor: ONNX's sequences (of tensors) and optionals
/// (a tensor or sequence, or nothing). Model::run_values takes and returns these.
struct Value {
  enum class Kind : uint8_t { Tensor, Sequence, None };
  Kind kind = Kind::None;
  Tensor tensor;                  // kind Tensor
  std::vector<Tensor> sequence;   // kind Sequence
  Value() = default;
  Value(Tensor t) : kind(Kind::Tensor), tensor(std::move(t)) {}  // NOLINT: a tensor is a value
  static Value of_sequence(std::vector<Tensor> s) {
    Value v;
    v.kind = Kind::Sequence;
    v.sequence = std::move(s);
    return v;
  }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_none() const { return kind == Kind::None; }
};

/// A graph input or output as the model declares it (dims < 0 are symbolic or unknown).
struct ValueInfo {
  std::string name;
  /// What the type proto says: a tensor, a sequence, or an optional (of either).
  enum class Type : uint8_t { Tensor, Sequence, Optional } type = Type::Tensor;
  DType dtype = DType::F32;
  bool known_dtype = false;  // false: a type ember has no dtype for, or none given
  std::vector<int64_t> dims;
  bool known_rank = false;
  std::vector<std::string> dim_names;  // symbolic dims ("batch"), "" where fixed or unnamed
};

class Model {
 public:
  struct Impl;
  Model() = default;
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  /// Runs the graph on the inputs' device (all inputs share one). Every input without an
  /// initializer default must be given; returns every graph output by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  /// Positional form: inputs in the order of inputs(), outputs in the order of outputs().
  TensorList run(const TensorList& inputs) const;
  /// As run, for models whose inputs or outputs are sequences or optionals (an input of kind
  /// None is an absent optional, or uses its initializer default).
  std::vector<Value> run_values(const std::vector<Value>& inputs) const;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  /// The opset version imported for a domain ("" is the default ai.onnx domain); 0 if none.
  int64_t opset(const std::string& domain = "") const;
  int64_t ir_version() const;
  std::string producer() const;
  /// metadata_props of the model.
  const std::map<std::string, std::string>& metadata() const;
  /// Nodes left to run after constant folding at load.
  size_t num_nodes() const;
  /// The prepared graph (ember/onnx's own use: the code generator reads it).
  const Impl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<const Impl> impl_;
};

/// Reads, checks and prepares `path`; external data is read relative to the model's folder.
Model load(const std::string& path);
/// As load, from the bytes of a model (external data is refused: it has no folder).
Model load_bytes(const std::string& bytes, const std::string& name = "<bytes>");
/// The op types a model file's main graph uses (sorted, unique; "domain.Op" outside the
/// default domain), read without checking or preparing the model.
std::vector<std::string> list_op_types(const std::string& path);
/// A tensor from a serialized ONNX TensorProto (the .pb files of ONNX's test data).
Tensor load_tensor(const std::string& path);
Tensor load_tensor_bytes(const std::string& bytes, const std::string& name = "<bytes>");
/// A value from a serialized TensorProto, SequenceProto or OptionalProto (`type` says which).
Value load_value(const std::string& path, ValueInfo::Type type);

/// One attribute value of an ONNX node, for onnx::call.
using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, Tensor>;
using Attributes = std::vector<std::pair<std::string, Attribute>>;
/// Runs one op of the default ONNX domain at `opset` on `inputs` (an undefined Tensor is an
/// omitted optional input), as the runtime graph would, and returns its first `num_outputs`
/// outputs. Generated code calls it for ops ember has no single function for.
TensorList call(const std::string& op_type, const TensorList& inputs, const Attributes& attrs = {},
                int64_t opset = 17, size_t num_outputs = 1);

/// What `generate_module` writes: a header and a source defining an nn::Module subclass, the
/// weights its state_dict loads (store::load_into), and notes on what it could not render.
struct GeneratedModule {
  std::string header, source;
  std::vector<std::pair<std::string, Tensor>> weights;
  /// One line per node that fell back to onnx::call, for the user to see.
  std::vector<std::string> fallbacks;
};
struct GenerateOptions {
  std::string class_name = "Model";
  std::string name_space = "generated";
  std::string header_name = "model.h";  // what the source includes
};
/// Renders a loaded model as readable ember C++ (one statement per node of the prepared graph).
/// UnsupportedError for models with control flow, sequences or optionals.
GeneratedModule generate_module(const Model& m, const GenerateOptions& o = {});

/// How export writes a model.
struct ExportOptions {
  /// The opset of the default domain to write: 13 to 17.
  int64_t opset = 17;
  /// Dims of the inputs that stay symbolic, by input name: {{"input_0", {{0, "batch"}}}}.
  /// Export traces twice (the second time with those dims grown) and computes every size that
  /// follows them from the inputs' shapes in the graph.
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes = {};
  /// Instead of growing the dynamic_axes, trace the second time on these inputs: every dim
  /// whose size differs from the example's is symbolic (named by dynamic_axes where it names
  /// the dim, else "<input>_dim<k>").
  TensorList second_inputs = {};
  /// Names of the graph's inputs and outputs (default input_0, ..., output_0, ...).
  std::vector<std::string> input_names = {}, output_names = {};
};
/// What export traces: example inputs in, outputs out.
using ExportFunction = std::function<TensorList(const TensorList&)>;

/// Traces `m.forward(example_inputs[0])` (in eval mode, without gradients) and writes it to
/// `path` atomically as an ONNX model checked by ONNX's checker and strict shape inference;
/// parameters and buffers are initializers named by their state_dict keys. UnsupportedError
/// lists every ember op the trace ran that has no ONNX form at the opset.
void export_module(nn::Module& m, const TensorList& example_inputs, const std::string& path,
                   const ExportOptions& o = {});
/// As export_module for any callable; `m`, when given, names the parameters it reads (and runs
/// in eval mode while traced).
void export_function(const ExportFunction& f, const TensorList& example_inputs,
                     const std::string& path, const ExportOptions& o = {}, nn::Module* m = nullptr);
/// The bytes export_function would write.
std::string export_bytes(const ExportFunction& f, const TensorList& example_inputs,
                         const ExportOptions& o = {}, nn::Module* m = nullptr);
/// The bytes export_module would write.
std::string export_bytes(nn::Module& m, const TensorList& example_inputs,
                         const ExportOptions& o = {});

}  // namespace ember::onnx
