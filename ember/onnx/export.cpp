// Export: trace the callable on its example inputs through the tracing layer (twice when some
// input dims are dynamic), map the recorded ops to ONNX nodes, then let ONNX's checker and
// strict shape inference judge the model before it is written atomically.
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <set>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/onnx/export_emit.h"
#include "ember/store/atomic_file.h"
#include "ember/tensor_impl.h"

namespace ember::onnx {
namespace detail {
namespace {

std::string msg(const std::string& m) { return "[onnx] export: " + m; }

// The module's parameters and buffers pass through the tracing layer while this is alive: their
// implementations are re-tagged in place (and restored after), so tensors that an optimizer or
// the module holds keep their identity.
class TagState {
 public:
  explicit TagState(const nn::Module* m) {
    if (!m) return;
    for (const auto& [name, t] : m->named_parameters()) tag(t);
    for (const auto& [name, t] : m->named_buffers()) tag(t);
  }
  ~TagState() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->device = it->second;
  }
  TagState(const TagState&) = delete;
  TagState& operator=(const TagState&) = delete;

 private:
  void tag(const Tensor& t) {
    if (!t.defined()) return;
    saved_.push_back({t.impl_ptr(), t.device()});
    t.impl()->device = TraceLayer::traced(t.device());
  }
  std::vector<std::pair<std::shared_ptr<TensorImpl>, Device>> saved_;
};

// Eval mode for the export, each module's own mode restored after.
class EvalMode {
 public:
  explicit EvalMode(nn::Module* m) {
    if (!m) return;
    for (auto& [name, sub] : m->named_modules()) saved_.push_back({sub, sub->is_training()});
    m->eval();
  }
  ~EvalMode() {
    for (auto& [m, on] : saved_) m->train(on);  // parents first: children end as they were
  }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  std::vector<std::pair<nn::Module*, bool>> saved_;
};

struct Traced {
  Recording rec;
  TensorList inputs, outputs;
};

Traced trace(const ExportFunction& f, const TensorList& inputs, const nn::Module* m,
             int64_t opset) {
  Traced r;
  r.rec.opset = opset;
  for (const Tensor& x : inputs) {
    if (!x.defined()) throw ValueError(msg("an example input is undefined"));
    r.inputs.push_back(ember::detail::retag(x, TraceLayer::traced(x.device())));
  }
  TagState tag(m);
  NoGradGuard no_grad;
  DeviceGuard dev(TraceLayer::traced(inputs.empty() ? default_device() : inputs[0].device()));
  TraceLayer::Scope scope(r.rec);
  r.outputs = f(r.inputs);
  return r;
}

// The second inputs the user gave: the dims whose sizes differ are the symbolic ones.
TensorList given(const TensorList& inputs, const std::vector<std::string>& names,
                 const ExportOptions& o, std::vector<SymbolicDim>& symbols) {
  if (o.second_inputs.size() != inputs.size())
    throw ValueError(msg("expected " + std::to_string(inputs.size()) + " second_inputs, found " +
                         std::to_string(o.second_inputs.size())));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &x = inputs[i], &y = o.second_inputs[i];
    if (!y.defined() || y.dim() != x.dim() || y.dtype() != x.dtype())
      throw ValueError(msg("second_inputs[" + std::to_string(i) +
                           "] must have the example's rank " + std::to_string(x.dim()) +
                           " and dtype " + std::string(dtype_name(x.dtype()))));
    auto axes = o.dynamic_axes.find(names[i]);
    for (int64_t k = 0; k < x.dim(); ++k) {
      if (x.size(k) == y.size(k)) continue;
      std::string symbol;
      if (axes != o.dynamic_axes.end())
        for (const auto& [d, s] : axes->second)
          if ((d < 0 ? d + x.dim() : d) == k) symbol = s;
      for (const SymbolicDim& s : symbols)
        if (symbol.empty() && s.a == x.size(k) && s.b == y.size(k)) symbol = s.symbol;
      if (symbol.empty()) symbol = names[i] + "_dim" + std::to_string(k);
      symbols.push_back({names[i], symbol, k, x.size(k), y.size(k)});
    }
  }
  return o.second_inputs;
}

// Inputs with the dynamic dims grown, one step more per symbol, so no two symbols meet the same
// pair of sizes.
TensorList grown(const TensorList& inputs, const std::vector<std::string>& names,
                 const ExportOptions& o, std::vector<SymbolicDim>& symbols) {
  for (const auto& [name, axes] : o.dynamic_axes)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ValueError(
          msg("dynamic_axes names input '" + name + "', which the graph does not have"));
  if (!o.second_inputs.empty()) return given(inputs, names, o, symbols);
  std::map<std::string, std::pair<int64_t, int64_t>> by_symbol;  // symbol -> sizes a, b
  TensorList out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    auto it = o.dynamic_axes.find(names[i]);
    if (it == o.dynamic_axes.end()) {
      out.push_back(x);
      continue;
    }
    Shape s = x.shape();
    for (const auto& [dim0, symbol] : it->second) {
      const int64_t dim = dim0 < 0 ? dim0 + x.dim() : dim0;
      if (dim < 0 || dim >= x.dim())
        throw ValueError(msg("dynamic_axes: input '" + names[i] + "' has " +
                             std::to_string(x.dim()) + " dims, found dim " + std::to_string(dim0)));
      const int64_t a = x.size(dim);
      auto [pos, fresh] = by_symbol.insert({symbol, {a, a + 1 + int64_t(by_symbol.size())}});
      if (!fresh && pos->second.first != a)
        throw ValueError(msg("dynamic_axes: symbol '" + symbol + "' is " +
                             std::to_string(pos->second.first) + " in one input and " +
                             std::to_string(a) + " in input '" + names[i] + "'"));
      s[size_t(dim)] = pos->second.second;
      symbols.push_back({names[i], symbol, dim, a, pos->second.second});
    }
    TensorOptions to{x.dtype(), x.device()};
    out.push_back(is_floating(x.dtype()) ? randn(s, to) : zeros(s, to));
  }
  return out;
}

void set_type(::onnx::ValueInfoProto& v, const std::string& name, DType d, const Shape& a,
              const Shape& b, const Emitter& e, const std::map<int64_t, std::string>* axes) {
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_dtype(d));
  auto* shape = tt->mutable_shape();
  for (size_t k = 0; k < a.size(); ++k) {
    auto* dim = shape->add_dim();
    std::string symbol;
    if (axes)
      for (const auto& [d0, s] : *axes)
        if ((d0 < 0 ? d0 + int64_t(a.size()) : d0) == int64_t(k)) symbol = s;
    if (symbol.empty() && k < b.size() && a[k] != b[k]) {
      symbol = e.symbol_for(a[k], b[k]);
      if (symbol.empty()) symbol = name + "_dim" + std::to_string(k);
    }
    if (symbol.empty())
      dim->set_dim_value(a[k]);
    else
      dim->set_dim_param(symbol);
  }
}

std::vector<std::string> io_names(const std::vector<std::string>& given, size_t n,
                                  const char* prefix, const char* what) {
  if (given.empty()) {
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
  }
  if (given.size() != n)
    throw ValueError(msg(std::string("expected ") + std::to_string(n) + " " + what +
                         " names, found " + std::to_string(given.size())));
  return given;
}

// Renames the node output `from` (and every read of it) to `to`.
void rename(::onnx::GraphProto& g, const std::string& from, const std::string& to) {
  for (auto& n : *g.mutable_node()) {
    for (auto& s : *n.mutable_input())
      if (s == from) s = to;
    for (auto& s : *n.mutable_output())
      if (s == from) s = to;
  }
}

bool made_by_node(const ::onnx::GraphProto& g, const std::string& v) {
  for (const auto& n : g.node())
    for (const auto& s : n.output())
      if (s == v) return true;
  return false;
}

// The sizes a dynamic graph computes are inferred from two traces; the graph, run by ember's
// importer at the second trace's sizes, must give that trace's outputs.
void verify(const std::string& bytes, const Traced& b) {
  Model m = load_bytes(bytes, "<exported>");
  TensorList got = m.run(TensorList(b.inputs));
  for (size_t j = 0; j < got.size() && j < b.outputs.size(); ++j) {
    const Tensor& want = b.outputs[j];
    bool same = got[j].shape() == want.shape();
    double err = 0;
    if (same && want.numel() > 0) {
      Tensor g = got[j].to(kF64), w = want.to(kF64);
      err = max(abs(g - w) - (abs(w) * 1e-3 + 1e-4)).item<double>();
      same = !(err > 0);
    }
    if (!same)
      throw ValueError(
          msg("the exported graph, run at the dynamic axes' second sizes, gives "
              "output " +
              std::to_string(j) + " " + shape_str(got[j].shape()) + " where the model gives " +
              shape_str(want.shape()) +
              (err > 0 ? " (values off by up to " + std::to_string(err) + ")" : "") +
              ": a size follows the dynamic dims differently than the model's; "
              "export with that dim fixed"));
  }
}

std::string build(const ExportFunction& f, const TensorList& inputs, nn::Module* m,
                  const ExportOptions& o) {
  if (o.opset < 13 || o.opset > 17)
    throw ValueError(msg("expected opset 13 to 17, found " + std::to_string(o.opset)));
  const auto in_names = io_names(o.input_names, inputs.size(), "input_", "input");
  EvalMode eval(m);
  std::vector<SymbolicDim> symbols;
  TensorList alt = grown(inputs, in_names, o, symbols);
  Traced a = trace(f, inputs, m, o.opset);
  Traced b = symbols.empty() ? Traced{} : trace(f, alt, m, o.opset);
  const Traced& twin = symbols.empty() ? a : b;
  if (twin.rec.ops.size() != a.rec.ops.size() || twin.outputs.size() != a.outputs.size())
    throw ValueError(msg("the traces at two sizes of the dynamic axes ran " +
                         std::to_string(a.rec.ops.size()) + " and " +
                         std::to_string(twin.rec.ops.size()) +
                         " ops: what the model runs depends on a dynamic size (export it with "
                         "that dim fixed)"));
  for (size_t k = 0; k < a.rec.ops.size(); ++k)
    if (a.rec.ops[k].op != twin.rec.ops[k].op)
      throw ValueError(msg("the traces at two sizes of the dynamic axes differ at op " +
                           std::to_string(k) + " (" + op_name(a.rec.ops[k].op) + " and " +
                           op_name(twin.rec.ops[k].op) +
                           "): what the model runs depends on a dynamic size"));
  const auto out_names = io_names(o.output_names, a.outputs.size(), "output_", "output");

  ::onnx::ModelProto model;
  model.set_ir_version(o.opset >= 15 ? 8 : 7);
  model.set_producer_name("ember");
  auto* imp = model.add_opset_import();
  imp->set_domain("");
  imp->set_version(o.opset);
  ::onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("ember");
  Emitter e(g, o.opset, symbols);
  if (m) {
    for (const auto& [name, t] : m->named_parameters()) e.add_parameter(t, name);
    for (const auto& [name, t] : m->named_buffers()) e.add_parameter(t, name);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    e.bind_input(a.inputs[i], in_names[i]);
    auto axes = o.dynamic_axes.find(in_names[i]);
    set_type(*g.add_input(), in_names[i], inputs[i].dtype(), inputs[i].shape(),
             twin.inputs[i].shape(), e, axes == o.dynamic_axes.end() ? nullptr : &axes->second);
  }
  for (size_t k = 0; k < a.rec.ops.size(); ++k) {
    e.begin(a.rec.ops[k], twin.rec.ops[k], k);
    EmitFn fn = find_emit(a.rec.ops[k].op);
    if (!fn)
      e.unsupported();
    else
      fn(e);
    e.finish_op();
  }
  std::set<std::string> used;
  for (size_t j = 0; j < a.outputs.size(); ++j) {
    const Tensor& t = a.outputs[j];
    if (!t.defined()) throw ValueError(msg("output " + std::to_string(j) + " is undefined"));
    std::string v = e.value(t, t.dtype(), false);
    if (v != "<unsupported>") {
      if (made_by_node(g, v) && !used.count(v)) {
        rename(g, v, out_names[j]);
      } else {
        auto* n = g.add_node();
        n->set_op_type("Identity");
        n->set_name("output_" + std::to_string(j) + "/Identity");
        n->add_input(v);
        n->add_output(out_names[j]);
      }
      used.insert(out_names[j]);
    }
    set_type(*g.add_output(), out_names[j], t.dtype(), t.shape(), twin.outputs[j].shape(), e,
             nullptr);
  }
  if (!e.unsupported_ops().empty()) {
    std::string list;
    for (const auto& [name, count] : e.unsupported_ops())
      list += (list.empty() ? "" : "; ") + name + ": " + std::to_string(count) +
              (count == 1 ? " call" : " calls");
    const size_t n = e.unsupported_ops().size();
    if (e.saw_random())
      list +=
          " (random ops: is a module in training mode? export_module, and export_function "
          "given the module, trace it in eval mode)";
    throw UnsupportedError(msg(std::to_string(n) + (n == 1 ? " ember op has" : " ember ops have") +
                               " no ONNX form at opset " + std::to_string(o.opset) + ": " + list));
  }
  try {
    ::onnx::checker::check_model(model);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& ex) {
    throw ModelError(
        msg(std::string("ONNX's checker rejects the exported model (an ember bug): ") + ex.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw ModelError(msg("protobuf could not serialize the model (over 2 GiB?)"));
  if (!symbols.empty()) verify(bytes, b);
  return bytes;
}

TensorList forward_one(nn::Module& m, const TensorList& in) {
  if (in.size() != 1)
    throw ValueError(msg("export_module runs forward(x) on one example input, found " +
                         std::to_string(in.size()) + " (use export_function for several)"));
  return {m.forward(in[0])};
}

}  // namespace
}  // namespace detail

std::string export_bytes(const ExportFunction& f, const TensorList& example_inputs,
                         const ExportOptions& o, nn::Module* m) {
  return detail::build(f, example_inputs, m, o);
}

std::string export_bytes(nn::Module& m, const TensorList& example_inputs, const ExportOptions& o) {
  return detail::build([&m](const TensorList& in) { return detail::forward_one(m, in); },
                       example_inputs, &m, o);
}

void export_function(const ExportFunction& f, const TensorList& example_inputs,
                     const std::string& path, const ExportOptions& o, nn::Module* m) {
  store::write_file_atomic(path, export_bytes(f, example_inputs, o, m));
}

void export_module(nn::Module& m, const TensorList& example_inputs, const std::string& path,
                   const ExportOptions& o) {
  store::write_file_atomic(path, export_bytes(m, example_inputs, o));
}

}  // namespace ember::onnx
