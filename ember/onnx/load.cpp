// Loading: bytes to ONNX's ModelProto (protobuf's generated parser), ONNX's checker, then the
// graph converted to ember's runtime form (graph.h) and prepared (folded, planned).
#include <onnx/checker.h>

#include <climits>
#include <filesystem>
#include <set>

#include "ember/detail/file.h"
#include "ember/detail/text.h"
#include "ember/onnx/graph.h"
#include "ember/onnx/proto.h"

namespace ember::onnx {
namespace detail {
namespace {

using ember::detail::shorten;

ValueInfo value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo out;
  out.name = v.name();
  const ::onnx::TypeProto* type = &v.type();
  if (type->has_optional_type()) {
    out.type = ValueInfo::Type::Optional;
    type = &type->optional_type().elem_type();
  } else if (type->has_sequence_type()) {
    out.type = ValueInfo::Type::Sequence;
  }
  if (type->has_tensor_type()) {
    const auto& tt = type->tensor_type();
    if (auto d = dtype_of(tt.elem_type())) {
      out.dtype = *d;
      out.known_dtype = true;
    }
    if (tt.has_shape()) {
      out.known_rank = true;
      for (const auto& d : tt.shape().dim()) {
        out.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        out.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
      }
    }
  }
  return out;
}

Attr attr_from_proto(const ::onnx::AttributeProto& a, const DataDir& where) {
  using A = ::onnx::AttributeProto;
  Attr out;
  switch (a.type()) {
    case A::FLOAT: out.kind = Attr::Float; out.f = a.f(); break;
    case A::INT: out.kind = Attr::Int; out.i = a.i(); break;
    case A::STRING: out.kind = Attr::String; out.s = a.s(); break;
    case A::TENSOR: out.kind = Attr::TensorValue; out.t = tensor_from_proto(a.t(), where); break;
    case A::FLOATS: out.kind = Attr::Floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case A::INTS: out.kind = Attr::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case A::STRINGS: out.kind = Attr::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    default: out.kind = Attr::Other; break;  // graphs (converted by the builder), sparse tensors, types
  }
  return out;
}

// Converts one graph. Values are numbered by name; every node input must name a graph input,
// an initializer, an earlier node's output (ONNX's topological order) or, in a subgraph, a
// value of an enclosing graph, which becomes one of the subgraph's captures.
class GraphBuilder {
 public:
  GraphBuilder(const DataDir& where, const std::map<std::string, int64_t>& opsets, Graph& out,
               GraphBuilder* outer)
      : where_(where), opsets_(opsets), out_(out), outer_(outer) {}

  // The id of a defined value named `name` here or in an enclosing graph (captured), or -1.
  int lookup(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end() && defined_.count(it->second)) return it->second;
    if (!outer_ || outer_->lookup(name) < 0) return -1;
    int id = id_of(name);
    defined_.insert(id);
    out_.captures.push_back(id);
    capture_names_.push_back(name);
    return id;
  }
  const std::vector<std::string>& capture_names() const { return capture_names_; }

  // Inputs (with their initializer defaults), initializers, nodes and outputs of `g`.
  void build(const ::onnx::GraphProto& g, std::vector<ValueInfo>* inputs,
             std::vector<ValueInfo>* outputs) {
    std::map<std::string, Tensor, std::less<>> inits;
    for (const auto& t : g.initializer()) inits[t.name()] = tensor_from_proto(t, where_);
    if (g.sparse_initializer_size() > 0)
      throw UnsupportedError(message(where_.model, "sparse initializers are not supported"));
    std::set<std::string, std::less<>> declared_inputs;
    for (const auto& v : g.input()) {
      declared_inputs.insert(v.name());
      int id = id_of(v.name());
      defined_.insert(id);
      out_.inputs.push_back(id);
      auto it = inits.find(v.name());
      out_.input_defaults.push_back(it == inits.end() ? Tensor() : it->second);
      if (inputs) inputs->push_back(value_info(v));
    }
    for (auto& [name, t] : inits)
      if (!declared_inputs.count(name)) {
        int id = id_of(name);
        out_.constants[id] = t;
        out_.initializer[size_t(id)] = true;
        defined_.insert(id);
      }
    for (const auto& n : g.node()) out_.nodes.push_back(node(n));
    for (const auto& v : g.output()) {
      int id = lookup(v.name());
      if (id < 0)
        throw ModelError(message(where_.model, "graph output '" + shorten(v.name(), 80) +
                                                   "' is not produced by any node"));
      out_.outputs.push_back(id);
      if (outputs) outputs->push_back(value_info(v));
    }
  }

 private:
  int id_of(const std::string& name) {
    auto [it, fresh] = ids_.emplace(name, int(out_.names.size()));
    if (fresh) {
      out_.names.push_back(name);
      out_.constants.emplace_back();
      out_.initializer.push_back(false);
    }
    return it->second;
  }

  Node node(const ::onnx::NodeProto& n) {
    Node node;
    node.op_type = n.op_type();
    node.name = n.name();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto op = opsets_.find(node.domain);
    node.opset = op == opsets_.end() ? 0 : op->second;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        node.in.push_back(-1);
        continue;
      }
      int id = lookup(name);
      if (id < 0)
        throw ModelError(message(where_.model, node.where() + " reads '" + shorten(name, 80) +
                                                   "', which no earlier node, input or "
                                                   "initializer defines"));
      node.in.push_back(id);
    }
    node.explicit_in = node.in.size();
    for (const auto& a : n.attribute()) {
      if (a.type() == ::onnx::AttributeProto::GRAPH) {
        // The subgraph's captures become the node's extra inputs, so folding, dead-node
        // removal and freeing see them as reads of the outer values.
        auto sub = std::make_shared<Graph>();
        GraphBuilder b(where_, opsets_, *sub, this);
        b.build(a.g(), nullptr, nullptr);
        Subgraph sg{sub, node.in.size()};
        for (const auto& name : b.capture_names()) node.in.push_back(lookup(name));
        node.graphs[a.name()] = std::move(sg);
        continue;
      }
      node.attrs[a.name()] = attr_from_proto(a, where_);
    }
    for (const auto& name : n.output()) {
      if (name.empty()) {
        node.out.push_back(-1);
        continue;
      }
      int id = id_of(name);
      defined_.insert(id);
      node.out.push_back(id);
    }
    return node;
  }

  const DataDir& where_;
  const std::map<std::string, int64_t>& opsets_;
  Graph& out_;
  GraphBuilder* outer_;
  std::map<std::string, int, std::less<>> ids_;
  std::set<int> defined_;
  std::vector<std::string> capture_names_;
};

void build_graph(const ::onnx::ModelProto& m, const DataDir& where, Model::Impl& impl) {
  GraphBuilder b(where, impl.opsets, impl.graph, nullptr);
  b.build(m.graph(), &impl.inputs, &impl.outputs);
  for (const auto* list : {&impl.inputs, &impl.outputs})
    for (const auto& v : *list)
      if (v.type != ValueInfo::Type::Tensor) impl.tensors_only = false;
}

// `path`: the file the model came from ("" for bytes); ONNX's checker then also checks its
// external data files (it reads the file again for that).
Model from_proto(::onnx::ModelProto& m, const DataDir& where, const std::string& path) {
  for (const auto& t : m.graph().initializer()) check_external_data(t, where);
  try {
    if (path.empty()) ::onnx::checker::check_model(m);
    else ::onnx::checker::check_model(path);
  } catch (const std::exception& e) {
    throw ModelError(message(where.model, std::string("the ONNX checker rejects the model: ") +
                                              shorten(e.what(), 600)));
  }
  auto impl = std::make_shared<Model::Impl>();
  for (const auto& o : m.opset_import())
    impl->opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  impl->ir_version = m.ir_version();
  impl->producer = m.producer_name();
  impl->name = where.model;
  for (const auto& p : m.metadata_props()) impl->metadata[p.key()] = p.value();
  build_graph(m, where, *impl);
  prepare(impl->graph, where.model);
  return Model(std::move(impl));
}

// protobuf reads at most INT_MAX bytes in one message.
constexpr uint64_t kMaxModelBytes = INT_MAX;

::onnx::ModelProto parse_model(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) throw ModelError(message(name, "empty file, not an ONNX model"));
  if (bytes.size() > kMaxModelBytes)
    throw ModelError(message(name, "over 2 GiB: protobuf cannot read it (large weights belong "
                                   "in external data)"));
  ::onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), int(bytes.size())))
    throw ModelError(message(name, "not a valid ONNX model: the protobuf bytes do not parse "
                                   "(a truncated or corrupt file?)"));
  if (!m.has_graph())
    throw ModelError(message(name, "not an ONNX model: it has no graph"));
  return m;
}

}  // namespace
}  // namespace detail

Model load(const std::string& path) {
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, detail::kMaxModelBytes, bytes, error))
    throw IOError(detail::message(path, error));
  auto m = detail::parse_model(bytes, path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return detail::from_proto(m, {dir.empty() ? "." : dir, path}, path);
}

Model load_bytes(const std::string& bytes, const std::string& name) {
  auto m = detail::parse_model(bytes, name);
  return detail::from_proto(m, {"", name}, "");
}

std::vector<std::string> list_op_types(const std::string& path) {
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, detail::kMaxModelBytes, bytes, error))
    throw IOError(detail::message(path, error));
  auto m = detail::parse_model(bytes, path);
  std::set<std::string> types;
  for (const auto& n : m.graph().node()) {
    bool core = n.domain().empty() || n.domain() == "ai.onnx";
    types.insert(core ? n.op_type() : n.domain() + "." + n.op_type());
  }
  return {types.begin(), types.end()};
}

Tensor load_tensor_bytes(const std::string& bytes, const std::string& name) {
  ::onnx::TensorProto t;
  if (bytes.size() > detail::kMaxModelBytes ||
      !t.ParseFromArray(bytes.data(), int(bytes.size())))
    throw ModelError(detail::message(name, "not a valid ONNX TensorProto"));
  return detail::tensor_from_proto(t, {"", name});
}

namespace {

Value value_from_sequence(const ::onnx::SequenceProto& s, const detail::DataDir& where) {
  if (s.elem_type() != ::onnx::SequenceProto::TENSOR)
    throw UnsupportedError(detail::message(where.model, "only sequences of tensors are supported"));
  std::vector<Tensor> items;
  for (const auto& t : s.tensor_values()) items.push_back(detail::tensor_from_proto(t, where));
  return Value::of_sequence(std::move(items));
}

}  // namespace

Value load_value(const std::string& path, ValueInfo::Type type) {
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, detail::kMaxModelBytes, bytes, error))
    throw IOError(detail::message(path, error));
  const detail::DataDir where{"", path};
  if (type == ValueInfo::Type::Tensor) return load_tensor_bytes(bytes, path);
  if (type == ValueInfo::Type::Sequence) {
    ::onnx::SequenceProto s;
    if (!s.ParseFromArray(bytes.data(), int(bytes.size())))
      throw ModelError(detail::message(path, "not a valid ONNX SequenceProto"));
    return value_from_sequence(s, where);
  }
  ::onnx::OptionalProto o;
  if (!o.ParseFromArray(bytes.data(), int(bytes.size())))
    throw ModelError(detail::message(path, "not a valid ONNX OptionalProto"));
  if (o.elem_type() == ::onnx::OptionalProto::TENSOR && o.has_tensor_value())
    return detail::tensor_from_proto(o.tensor_value(), where);
  if (o.elem_type() == ::onnx::OptionalProto::SEQUENCE && o.has_sequence_value())
    return value_from_sequence(o.sequence_value(), where);
  return Value();
}

Tensor load_tensor(const std::string& path) {
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, detail::kMaxModelBytes, bytes, error))
    throw IOError(detail::message(path, error));
  return load_tensor_bytes(bytes, path);
}

// --- Model accessors ---
namespace {
const Model::Impl& need(const std::shared_ptr<const Model::Impl>& p) {
  if (!p) throw ValueError("[onnx] the Model is empty (default-constructed, not loaded)");
  return *p;
}
}  // namespace
const std::vector<ValueInfo>& Model::inputs() const { return need(impl_).inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return need(impl_).outputs; }
int64_t Model::opset(const std::string& domain) const {
  const auto& o = need(impl_).opsets;
  auto it = o.find(domain == "ai.onnx" ? "" : domain);
  return it == o.end() ? 0 : it->second;
}
int64_t Model::ir_version() const { return need(impl_).ir_version; }
std::string Model::producer() const { return need(impl_).producer; }
const std::map<std::string, std::string>& Model::metadata() const { return need(impl_).metadata; }
size_t Model::num_nodes() const { return need(impl_).graph.nodes.size(); }

}  // namespace ember::onnx
