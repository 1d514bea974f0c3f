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
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
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
    default: out.kind = Attr::Other; break;  // graphs, sparse tensors, type protos
  }
  return out;
}

// Converts the main graph. Values are numbered by name; every node input must name a graph
// input, an initializer or an earlier node's output (ONNX's topological order).
void build_graph(const ::onnx::ModelProto& m, const DataDir& where, Model::Impl& impl) {
  const auto& g = m.graph();
  Graph& out = impl.graph;
  std::map<std::string, int, std::less<>> ids;
  auto id_of = [&](const std::string& name) {
    auto [it, fresh] = ids.emplace(name, int(out.names.size()));
    if (fresh) {
      out.names.push_back(name);
      out.constants.emplace_back();
    }
    return it->second;
  };
  std::map<std::string, Tensor, std::less<>> inits;
  for (const auto& t : g.initializer()) inits[t.name()] = tensor_from_proto(t, where);
  if (g.sparse_initializer_size() > 0)
    throw UnsupportedError(message(where.model, "sparse initializers are not supported"));
  std::set<std::string, std::less<>> declared_inputs;
  for (const auto& v : g.input()) {
    declared_inputs.insert(v.name());
    int id = id_of(v.name());
    out.inputs.push_back(id);
    auto it = inits.find(v.name());
    out.input_defaults.push_back(it == inits.end() ? Tensor() : it->second);
    impl.inputs.push_back(value_info(v));
  }
  for (auto& [name, t] : inits)
    if (!declared_inputs.count(name)) out.constants[id_of(name)] = t;

  std::set<int> defined(out.inputs.begin(), out.inputs.end());
  for (size_t k = 0; k < out.constants.size(); ++k)
    if (out.constants[k].defined()) defined.insert(int(k));
  for (const auto& n : g.node()) {
    Node node;
    node.op_type = n.op_type();
    node.name = n.name();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto op = impl.opsets.find(node.domain);
    node.opset = op == impl.opsets.end() ? 0 : op->second;
    for (const auto& a : n.attribute()) node.attrs[a.name()] = attr_from_proto(a, where);
    for (const auto& name : n.input()) {
      if (name.empty()) {
        node.in.push_back(-1);
        continue;
      }
      int id = id_of(name);
      if (!defined.count(id))
        throw ModelError(message(where.model, node.where() + " reads '" + shorten(name, 80) +
                                                  "', which no earlier node, input or "
                                                  "initializer defines"));
      node.in.push_back(id);
    }
    for (const auto& name : n.output()) {
      if (name.empty()) {
        node.out.push_back(-1);
        continue;
      }
      int id = id_of(name);
      defined.insert(id);
      node.out.push_back(id);
    }
    out.nodes.push_back(std::move(node));
  }
  for (const auto& v : g.output()) {
    int id = id_of(v.name());
    if (!defined.count(id))
      throw ModelError(message(where.model, "graph output '" + shorten(v.name(), 80) +
                                                "' is not produced by any node"));
    out.outputs.push_back(id);
    impl.outputs.push_back(value_info(v));
  }
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
