// The runtime graph: binding nodes to op functions (one error for every unsupported type),
// folding what only constants feed, dropping what no output needs, freeing each value after
// its last use, and running on the inputs' device.
#include "ember/onnx/graph.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ember/detail/text.h"
#include "ember/tensor_impl.h"

namespace ember::onnx::detail {

using ember::detail::shorten;

// --- Node attributes ---
int64_t Node::i(std::string_view a, int64_t def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.i;
}
double Node::f(std::string_view a, double def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.f;
}
std::string Node::s(std::string_view a, const std::string& def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.s;
}
std::vector<int64_t> Node::ints(std::string_view a, std::vector<int64_t> def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.ints;
}
std::vector<double> Node::floats(std::string_view a, std::vector<double> def) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? def : it->second.floats;
}
Tensor Node::tensor(std::string_view a) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? Tensor() : it->second.t;
}
std::string Node::where() const {
  return op_type + " node" + (name.empty() ? "" : " '" + shorten(name, 80) + "'");
}

const Tensor& OpArgs::operator[](size_t i) const {
  if (!has(i))
    throw ModelError("[onnx] " + node.where() + ": input " + std::to_string(i) +
                     " is required but missing");
  return in[i];
}

const Tensor& ValueArgs::tensor(size_t i) const {
  if (i >= in.size() || !in[i].is_tensor())
    throw ModelError("[onnx] " + node.where() + ": input " + std::to_string(i) + " must be a " +
                     "tensor, got " + (i >= in.size() || in[i].is_none() ? "nothing" : "a sequence"));
  return in[i].tensor;
}

const std::vector<Tensor>& ValueArgs::sequence(size_t i) const {
  if (i >= in.size() || !in[i].is_sequence())
    throw ModelError("[onnx] " + node.where() + ": input " + std::to_string(i) + " must be a " +
                     "sequence, got " + (i >= in.size() || in[i].is_none() ? "nothing" : "a tensor"));
  return in[i].sequence;
}

const Subgraph& Graph::of(const Node& n, std::string_view name) {
  auto it = n.graphs.find(name);
  if (it == n.graphs.end() || !it->second.graph)
    throw ModelError("[onnx] " + n.where() + ": the graph attribute '" + std::string(name) +
                     "' is missing");
  return it->second;
}

namespace {

// Rethrows the error in flight with the node prefixed, keeping its class.
[[noreturn]] void rethrow_at(const Node& n, const Error& e) {
  std::string w = e.what();
  std::string m = w.rfind("[onnx] ", 0) == 0 ? w : "[onnx] " + n.where() + ": " + w;
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(m);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(m);
  if (dynamic_cast<const IndexError*>(&e)) throw IndexError(m);
  if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(m);
  if (dynamic_cast<const OutOfMemory*>(&e)) throw OutOfMemory(m);
  if (dynamic_cast<const NotImplementedError*>(&e)) throw NotImplementedError(m);
  if (dynamic_cast<const ModelError*>(&e)) throw;
  throw ValueError(m);
}

std::vector<Value> run_node(const Node& n, std::span<const Value> ins, Device device) {
  std::vector<Value> outs;
  if (n.vfn) {
    try {
      outs = n.vfn(ValueArgs{n, ins, device});
    } catch (const Error& e) {
      rethrow_at(n, e);
    }
    if (outs.size() < n.out.size()) outs.resize(n.out.size());
    return outs;
  }
  TensorList tins, touts;
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].is_sequence())
      throw ModelError("[onnx] " + n.where() + ": input " + std::to_string(k) +
                       " is a sequence, expected a tensor");
    tins.push_back(ins[k].tensor);
  }
  try {
    touts = n.fn(OpArgs{n, tins, device});
  } catch (const Error& e) {
    rethrow_at(n, e);
  }
  for (size_t k = 0; k < n.out.size(); ++k)
    if (n.out[k] >= 0 && (k >= touts.size() || !touts[k].defined()))
      throw NotImplementedError("[onnx] " + n.where() + ": output " + std::to_string(k) +
                                " is not supported");
  for (auto& t : touts) outs.push_back(t.defined() ? Value(std::move(t)) : Value());
  return outs;
}

struct Seen {
  int count = 0;
  std::string first;
};

// Binds every node (subgraphs too) to its function, noting the op types without one.
void bind(Graph& g, std::map<std::string, Seen>& missing) {
  for (auto& n : g.nodes) {
    if (n.domain.empty()) {
      n.vfn = find_value_op(n.op_type);
      if (!n.vfn) n.fn = find_op(n.op_type);
    } else if (n.domain == "ai.onnx.preview.training") {
      n.fn = find_op(n.domain + "." + n.op_type);
    }
    if (!n.fn && !n.vfn) {
      auto& s = missing[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
      if (s.count++ == 0) s.first = n.name;
    }
    for (auto& [name, sub] : n.graphs) bind(*sub.graph, missing);
  }
}

void check_supported(const std::map<std::string, Seen>& missing, const std::string& model) {
  if (missing.empty()) return;
  std::string m = "[onnx] " + model + ": " + std::to_string(missing.size()) + " op type" +
                  (missing.size() > 1 ? "s" : "") + " not supported:";
  bool first = true;
  for (const auto& [type, s] : missing) {
    m += std::string(first ? " " : ", ") + type + " (" + std::to_string(s.count) + " node" +
         (s.count > 1 ? "s" : "") + ", first '" + shorten(s.first, 60) + "')";
    first = false;
  }
  throw UnsupportedError(m);
}

// Folds, drops dead nodes and plans frees in g and every subgraph.
void plan(Graph& g) {
  // Fold: a node fed only by constants runs now, on the host; its outputs become constants
  // (unless one is a sequence or an absent optional, which stay computed at run).
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    for (auto& [name, sub] : n.graphs) plan(*sub.graph);
    bool constant = !is_nondeterministic(n.op_type);
    for (int id : n.in)
      if (id >= 0 && !g.constants[id].defined()) constant = false;
    if (constant) {
      std::vector<Value> ins;
      for (int id : n.in) ins.push_back(id >= 0 ? Value(g.constants[id]) : Value());
      std::vector<Value> outs = run_node(n, ins, Device::flex());
      for (size_t k = 0; k < n.out.size(); ++k)
        if (n.out[k] >= 0 && !outs[k].is_tensor()) constant = false;
      if (constant)
        for (size_t k = 0; k < n.out.size(); ++k)
          if (n.out[k] >= 0) g.constants[n.out[k]] = outs[k].tensor;
    }
    if (!constant) kept.push_back(std::move(n));
  }
  // Drop nodes no output depends on, walking back from the outputs.
  std::vector<bool> needed(g.names.size(), false);
  for (int id : g.outputs) needed[id] = true;
  std::vector<Node> live;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    bool any = std::any_of(it->out.begin(), it->out.end(),
                           [&](int id) { return id >= 0 && needed[id]; });
    if (!any) continue;
    for (int id : it->in)
      if (id >= 0) needed[id] = true;
    live.push_back(std::move(*it));
  }
  std::reverse(live.begin(), live.end());
  g.nodes = std::move(live);
  // What stays is read-only for the model's life: the cpu backend may keep oneDNN's blocked
  // copies of the conv weights among them (ember::detail::freeze).
  for (size_t id = 0; id < g.constants.size(); ++id) {
    if (!needed[id]) g.constants[id] = Tensor();
    ember::detail::freeze(g.constants[id]);
  }

  // Each value is freed after the last node that reads it (outputs are kept).
  std::vector<int> last(g.names.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int id : g.nodes[k].in)
      if (id >= 0) last[id] = int(k);
  for (int id : g.outputs) last[id] = -1;
  g.frees.assign(g.nodes.size(), {});
  for (size_t id = 0; id < last.size(); ++id)
    if (last[id] >= 0) g.frees[last[id]].push_back(int(id));
}


}  // namespace

void prepare(Graph& g, const std::string& model) {
  std::map<std::string, Seen> missing;
  bind(g, missing);
  check_supported(missing, model);
  plan(g);
}

std::shared_ptr<const std::vector<Tensor>> Graph::constants_on(Device device) const {
  std::lock_guard lock(placed->mu);
  for (const auto& p : placed->places) {
    for (const Tensor& t : *p)
      if (t.defined()) {
        if (t.device().same_place(device)) return p;
        break;
      }
  }
  auto p = std::make_shared<std::vector<Tensor>>(constants.size());
  bool any = false;
  for (size_t id = 0; id < constants.size(); ++id)
    if (constants[id].defined()) {
      (*p)[id] = constants[id].to(device);
      ember::detail::freeze((*p)[id]);
      any = true;
    }
  if (any) placed->places.push_back(p);
  return p;
}

std::vector<Value> run_graph(const Graph& g, std::span<const Value> inputs,
                             std::span<const Value> captures, Device device) {
  std::vector<Value> slots(g.names.size());
  const auto constants = g.constants_on(device);
  for (size_t id = 0; id < constants->size(); ++id)
    if ((*constants)[id].defined()) slots[id] = (*constants)[id].to(device);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    bool given = k < inputs.size() && !inputs[k].is_none();
    if (given) slots[g.inputs[k]] = inputs[k];
    else if (k < g.input_defaults.size() && g.input_defaults[k].defined())
      slots[g.inputs[k]] = g.input_defaults[k].to(device);
  }
  for (size_t k = 0; k < g.captures.size() && k < captures.size(); ++k)
    slots[g.captures[k]] = captures[k];
  std::vector<Value> ins;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    ins.clear();
    for (int id : n.in) ins.push_back(id >= 0 ? slots[id] : Value());
    std::vector<Value> outs = run_node(n, ins, device);
    for (size_t j = 0; j < n.out.size(); ++j)
      if (n.out[j] >= 0) slots[n.out[j]] = std::move(outs[j]);
    for (int id : g.frees[k]) slots[id] = Value();
  }
  std::vector<Value> out;
  for (int id : g.outputs) out.push_back(slots[id]);
  return out;
}

std::vector<Value> run_subgraph(const ValueArgs& a, std::string_view name,
                                std::span<const Value> inputs) {
  const Subgraph& sub = Graph::of(a.node, name);
  const Graph& g = *sub.graph;
  if (inputs.size() != g.inputs.size())
    throw ModelError("[onnx] " + a.node.where() + ": subgraph '" + std::string(name) +
                     "' takes " + std::to_string(g.inputs.size()) + " inputs, the op passes " +
                     std::to_string(inputs.size()));
  return run_graph(g, inputs, a.in.subspan(sub.first_capture, g.captures.size()), a.device);
}

}  // namespace ember::onnx::detail

namespace ember::onnx {
namespace {

void check_input(const ValueInfo& v, const Value& x) {
  using T = ValueInfo::Type;
  if (x.is_sequence() && v.type == T::Tensor)
    throw ValueError("[onnx.run] input '" + v.name + "': the model declares a tensor, got a sequence");
  if (x.is_tensor() && v.type == T::Sequence)
    throw ValueError("[onnx.run] input '" + v.name + "': the model declares a sequence, got a tensor");
  if (!x.is_tensor() || v.type != T::Tensor) return;
  const Tensor& t = x.tensor;
  if (v.known_dtype && t.dtype() != v.dtype)
    throw DTypeError("[onnx.run] input '" + v.name + "': the model declares " +
                     std::string(dtype_name(v.dtype)) + ", got " +
                     std::string(dtype_name(t.dtype())));
  if (v.known_rank && size_t(t.dim()) != v.dims.size())
    throw ShapeError("[onnx.run] input '" + v.name + "': the model declares " +
                     std::to_string(v.dims.size()) + " dims, got " + std::to_string(t.dim()));
}

}  // namespace

std::vector<Value> Model::run_values(const std::vector<Value>& inputs) const {
  if (!impl_) throw ValueError("[onnx.run] the Model is empty (default-constructed, not loaded)");
  const auto& g = impl_->graph;
  if (inputs.size() > g.inputs.size())
    throw ValueError("[onnx.run] the model takes " + std::to_string(g.inputs.size()) +
                     " inputs, got " + std::to_string(inputs.size()));
  std::string missing;
  std::optional<Device> device;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& v = impl_->inputs[k];
    if (k < inputs.size() && !inputs[k].is_none()) {
      check_input(v, inputs[k]);
      if (!device && inputs[k].is_tensor()) device = inputs[k].tensor.device();
      if (!device && inputs[k].is_sequence() && !inputs[k].sequence.empty())
        device = inputs[k].sequence[0].device();
    } else if (!g.input_defaults[k].defined() && v.type != ValueInfo::Type::Optional) {
      missing += (missing.empty() ? "'" : ", '") + v.name + "'";
    }
  }
  if (!missing.empty()) throw ValueError("[onnx.run] missing inputs: " + missing);
  return detail::run_graph(g, inputs, {}, device.value_or(resolve_device({})));
}

TensorList Model::run(const TensorList& inputs) const {
  if (!impl_) throw ValueError("[onnx.run] the Model is empty (default-constructed, not loaded)");
  std::vector<Value> ins;
  for (const auto& t : inputs) ins.push_back(t.defined() ? Value(t) : Value());
  std::vector<Value> outs = run_values(ins);
  TensorList out;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].is_sequence())
      throw ValueError("[onnx.run] output '" + impl_->outputs[k].name +
                       "' is a sequence: use run_values");
    out.push_back(outs[k].tensor);
  }
  return out;
}
std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) const {
  if (!impl_) throw ValueError("[onnx.run] the Model is empty (default-constructed, not loaded)");
  TensorList ins(impl_->inputs.size());
  size_t used = 0;
  for (size_t k = 0; k < ins.size(); ++k) {
    auto it = inputs.find(impl_->inputs[k].name);
    if (it != inputs.end()) {
      ins[k] = it->second;
      ++used;
    }
  }
  if (used != inputs.size()) {
    std::string unknown;
    for (const auto& in : inputs) {
      const std::string& name = in.first;  // (clang 14 cannot capture a structured binding)
      bool known = std::any_of(impl_->inputs.begin(), impl_->inputs.end(),
                               [&](const ValueInfo& v) { return v.name == name; });
      if (!known) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
    }
    throw ValueError("[onnx.run] the model has no inputs named " + unknown);
  }
  TensorList outs = run(ins);
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < outs.size(); ++k) out[impl_->outputs[k].name] = outs[k];
  return out;
}

}  // namespace ember::onnx
