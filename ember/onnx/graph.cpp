// The runtime graph: binding nodes to op functions (one error for every unsupported type),
// folding what only constants feed, dropping what no output needs, freeing each value after
// its last use, and running on the inputs' device.
#include "ember/onnx/graph.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ember/detail/text.h"

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

TensorList run_node(const Node& n, std::span<const Tensor> ins, Device device) {
  TensorList outs;
  try {
    outs = n.fn(OpArgs{n, ins, device});
  } catch (const Error& e) {
    rethrow_at(n, e);
  }
  for (size_t k = 0; k < n.out.size(); ++k)
    if (n.out[k] >= 0 && (k >= outs.size() || !outs[k].defined()))
      throw NotImplementedError("[onnx] " + n.where() + ": output " + std::to_string(k) +
                                " is not supported");
  return outs;
}

void check_supported(const Graph& g, const std::string& model) {
  struct Seen {
    int count = 0;
    std::string first;
  };
  std::map<std::string, Seen> missing;
  for (const auto& n : g.nodes) {
    if (n.fn) continue;
    auto& s = missing[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
    if (s.count++ == 0) s.first = n.name;
  }
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

}  // namespace

void prepare(Graph& g, const std::string& model) {
  for (auto& n : g.nodes)
    if (n.domain.empty()) n.fn = find_op(n.op_type);
  check_supported(g, model);

  // Fold: a node fed only by constants runs now, on the host; its outputs become constants.
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    bool constant = !is_nondeterministic(n.op_type);
    for (int id : n.in)
      if (id >= 0 && !g.constants[id].defined()) constant = false;
    if (!constant) {
      kept.push_back(std::move(n));
      continue;
    }
    TensorList ins;
    for (int id : n.in) ins.push_back(id >= 0 ? g.constants[id] : Tensor());
    TensorList outs = run_node(n, ins, Device::flex());
    for (size_t k = 0; k < n.out.size(); ++k)
      if (n.out[k] >= 0) g.constants[n.out[k]] = outs[k];
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
  for (size_t id = 0; id < g.constants.size(); ++id)
    if (!needed[id]) g.constants[id] = Tensor();

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

TensorList run_graph(const Graph& g, std::span<const Tensor> inputs, Device device) {
  std::vector<Tensor> slots(g.names.size());
  for (size_t id = 0; id < g.constants.size(); ++id)
    if (g.constants[id].defined()) slots[id] = g.constants[id].to(device);
  for (size_t k = 0; k < g.inputs.size(); ++k)
    slots[g.inputs[k]] = inputs[k].defined() ? inputs[k] : g.input_defaults[k].to(device);
  TensorList ins;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    ins.clear();
    for (int id : n.in) ins.push_back(id >= 0 ? slots[id] : Tensor());
    TensorList outs = run_node(n, ins, device);
    for (size_t j = 0; j < n.out.size(); ++j)
      if (n.out[j] >= 0) slots[n.out[j]] = std::move(outs[j]);
    for (int id : g.frees[k]) slots[id] = Tensor();
  }
  TensorList out;
  for (int id : g.outputs) out.push_back(slots[id]);
  return out;
}

}  // namespace ember::onnx::detail

namespace ember::onnx {
namespace {

void check_input(const ValueInfo& v, const Tensor& t) {
  if (v.known_dtype && t.dtype() != v.dtype)
    throw DTypeError("[onnx.run] input '" + v.name + "': the model declares " +
                     std::string(dtype_name(v.dtype)) + ", got " +
                     std::string(dtype_name(t.dtype())));
  if (v.known_rank && size_t(t.dim()) != v.dims.size())
    throw ShapeError("[onnx.run] input '" + v.name + "': the model declares " +
                     std::to_string(v.dims.size()) + " dims, got " + std::to_string(t.dim()));
}

}  // namespace

TensorList Model::run(const TensorList& inputs) const {
  if (!impl_) throw ValueError("[onnx.run] the Model is empty (default-constructed, not loaded)");
  const auto& g = impl_->graph;
  if (inputs.size() > g.inputs.size())
    throw ValueError("[onnx.run] the model takes " + std::to_string(g.inputs.size()) +
                     " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> ins(g.inputs.size());
  std::string missing;
  std::optional<Device> device;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    if (k < inputs.size() && inputs[k].defined()) {
      check_input(impl_->inputs[k], inputs[k]);
      ins[k] = inputs[k];
      if (!device) device = inputs[k].device();
    } else if (!g.input_defaults[k].defined()) {
      missing += (missing.empty() ? "'" : ", '") + impl_->inputs[k].name + "'";
    }
  }
  if (!missing.empty()) throw ValueError("[onnx.run] missing inputs: " + missing);
  return detail::run_graph(g, ins, device.value_or(resolve_device({})));
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
