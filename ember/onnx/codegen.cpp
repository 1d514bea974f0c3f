// The code generator: a prepared graph rendered as an nn::Module subclass. Initializers become
// parameters (floating) or buffers, named after the ONNX names made into C++ identifiers; small
// folded constants are written inline; each node becomes one statement, an ember call where one
// function renders the op exactly (codegen_ops.cpp), onnx::call otherwise. The graph is traced
// once on example inputs (symbolic dims taken as 1) so that dtype- and rank-dependent ops can be
// rendered natively.
#include "ember/onnx/codegen.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "ember/ember.h"

namespace ember::onnx {
namespace detail {
namespace {

bool is_keyword(const std::string& s) {
  static const std::set<std::string> k = {
      "auto",       "bool",    "break",  "case",     "char",    "class",  "const",    "continue",
      "default",    "delete",  "do",     "double",   "else",    "enum",   "float",    "for",
      "if",         "int",     "long",   "new",      "private", "public", "return",   "short",
      "signed",     "sizeof",  "static", "struct",   "switch",  "this",   "template", "throw",
      "try",        "typedef", "union",  "unsigned", "using",   "void",   "while",    "Tensor",
      "TensorList", "ember",   "onnx",   "nn",       "std"};
  return k.count(s) > 0;
}

}  // namespace

std::string identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) out = "v";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  if (is_keyword(out)) out += "_v";
  return out;
}

std::string Namer::take(const std::string& base) {
  std::string name = base;
  for (int k = 2; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

std::string cpp_dtype(DType d) {
  switch (d) {
    case DType::Bool:
      return "kBool";
    case DType::U8:
      return "kU8";
    case DType::I8:
      return "kI8";
    case DType::I16:
      return "kI16";
    case DType::I32:
      return "kI32";
    case DType::I64:
      return "kI64";
    case DType::F16:
      return "kF16";
    case DType::BF16:
      return "kBF16";
    case DType::F32:
      return "kF32";
    case DType::F64:
      return "kF64";
  }
  return "kF32";
}

std::string number(double v, DType d) {
  if (std::isnan(v)) return "std::nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[40];
  if (is_floating(d)) {
    std::snprintf(buf, sizeof buf, d == DType::F64 ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

std::string ints_list(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "}";
}

std::string tensor_literal(const Tensor& t, const std::string& device) {
  std::vector<double> vals = t.to_vector<double>();
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  DType d = t.dtype();
  std::string elem = d == DType::F64 ? "double" : is_floating(d) ? "float" : "int64_t";
  std::string s = "tensor(std::vector<" + elem + ">{";
  for (size_t k = 0; k < vals.size(); ++k) {
    if (k) s += ", ";
    if (elem == "int64_t")
      s += std::to_string(int64_t(vals[k]));
    else
      s += number(vals[k], d) + (elem == "float" && std::isfinite(vals[k]) ? "f" : "");
  }
  return s + "}, " + ints_list(shape) + ", " + cpp_dtype(d) +
         (device.empty() ? "" : ", " + device) + ")";
}

std::string string_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace detail

namespace {

using detail::Graph;
using detail::Node;

bool uses_values(const Graph& g) {
  for (const auto& n : g.nodes)
    if (n.vfn || !n.graphs.empty()) return true;
  return false;
}

// Runs the graph once on example inputs, recording every value's dtype and rank.
std::vector<detail::ValueType> trace(const Model::Impl& m) {
  const Graph& g = m.graph;
  std::vector<detail::ValueType> types(g.names.size());
  std::vector<Tensor> slots(g.names.size());
  for (size_t id = 0; id < g.constants.size(); ++id) slots[id] = g.constants[id];
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& v = m.inputs[k];
    if (!v.known_dtype || !v.known_rank) return {};
    std::vector<int64_t> dims;
    for (int64_t d : v.dims) dims.push_back(d < 0 ? 1 : d);
    slots[g.inputs[k]] = zeros(Shape(dims), {.dtype = v.dtype, .device = Device::flex()});
  }
  try {
    for (const Node& n : g.nodes) {
      TensorList ins;
      for (int id : n.in) ins.push_back(id >= 0 ? slots[id] : Tensor());
      TensorList outs = n.fn(detail::OpArgs{n, ins, Device::flex()});
      for (size_t j = 0; j < n.out.size() && j < outs.size(); ++j)
        if (n.out[j] >= 0) slots[n.out[j]] = outs[j];
    }
  } catch (const Error&) {
    return {};
  }
  for (size_t id = 0; id < slots.size(); ++id)
    if (slots[id].defined()) types[id] = {true, slots[id].dtype(), slots[id].dim()};
  return types;
}

std::string attr_value(const detail::Attr& a) {
  using detail::Attr;
  auto doubles = [](const std::vector<double>& v) {
    std::string s = "std::vector<double>{";
    for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + detail::number(v[k], kF64);
    return s + "}";
  };
  switch (a.kind) {
    case Attr::Int:
      return "int64_t{" + std::to_string(a.i) + "}";
    case Attr::Float:
      return detail::number(a.f, kF64);
    case Attr::String:
      return "std::string(" + detail::string_literal(a.s) + ")";
    case Attr::Ints:
      return "std::vector<int64_t>" + detail::ints_list(a.ints);
    case Attr::Floats:
      return doubles(a.floats);
    case Attr::Strings: {
      std::string s = "std::vector<std::string>{";
      for (size_t k = 0; k < a.strings.size(); ++k)
        s += (k ? ", " : "") + detail::string_literal(a.strings[k]);
      return s + "}";
    }
    case Attr::TensorValue:
      return detail::tensor_literal(a.t);
    case Attr::Other:
      break;
  }
  throw UnsupportedError("[onnx.generate] an attribute of a kind the generator cannot write");
}

}  // namespace

GeneratedModule generate_module(const Model& model, const GenerateOptions& o) {
  const Model::Impl* m = model.impl();
  if (!m) throw ValueError("[onnx.generate] the Model is empty");
  const Graph& g = m->graph;
  if (!m->tensors_only || uses_values(g))
    throw UnsupportedError(
        "[onnx.generate] the model has control flow, sequences or optionals, which the "
        "generator does not render: run it with onnx::load");
  detail::Emit e{g, trace(*m)};
  detail::Namer names;
  // The ember functions generated code calls stay unshadowed.
  for (const char* f :
       {"relu",    "sigmoid",   "tanh",       "exp",     "log",        "sqrt",       "neg",
        "abs",     "erf",       "add",        "sub",     "mul",        "div",        "matmul",
        "linear",  "conv1d",    "conv2d",     "conv3d",  "max_pool2d", "layer_norm", "mean",
        "permute", "unsqueeze", "reshape",    "flatten", "softmax",    "cat",        "tensor",
        "zeros",   "forward",   "forward_all"})
    names.take(f);
  e.expr.assign(g.names.size(), "");
  GeneratedModule out;

  // The inputs; inline constants are made on the first one's device.
  std::vector<std::string> params;
  for (int id : g.inputs) {
    std::string name = names.take(detail::identifier(g.names[size_t(id)]));
    e.expr[size_t(id)] = name;
    params.push_back(name);
  }
  const std::string device = params.empty() ? "" : params[0] + ".device()";
  // Members: the constants nodes read (graph inputs with defaults are plain inputs).
  std::vector<std::string> members, ctor;
  std::vector<bool> read(g.names.size(), false);
  for (const Node& n : g.nodes)
    for (int id : n.in)
      if (id >= 0) read[size_t(id)] = true;
  for (int id : g.outputs) read[size_t(id)] = true;
  for (size_t id = 0; id < g.names.size(); ++id) {
    const Tensor& c = g.constants[id];
    if (!c.defined() || !read[id]) continue;
    bool param = is_floating(c.dtype()) && (g.initializer[id] || c.numel() > 8);
    if (!param && c.numel() <= 16) {
      e.expr[id] = detail::tensor_literal(c, device);
      continue;
    }
    std::string name = names.take(detail::identifier(g.names[id]));
    e.expr[id] = name;
    std::vector<int64_t> shape(c.shape().begin(), c.shape().end());
    members.push_back("  Tensor " + name + ";  // " + (param ? "" : "buffer ") + "'" + g.names[id] +
                      "' " + detail::ints_list(shape));
    ctor.push_back("  " + std::string(param ? "register_parameter" : "register_buffer") + "(\"" +
                   name + "\", " + name + " = zeros(" + detail::ints_list(shape) +
                   ", {.dtype = " + detail::cpp_dtype(c.dtype()) + ", .device = {}}));");
    out.weights.emplace_back(name, c);
  }
  // The statements, one per node.
  std::vector<std::string> body;
  for (const Node& n : g.nodes) {
    std::vector<std::string> in;
    for (int id : n.in) in.push_back(id >= 0 ? e.expr[size_t(id)] : "Tensor()");
    size_t used = 0;
    for (size_t k = 0; k < n.out.size(); ++k)
      if (n.out[k] >= 0) used = k + 1;
    std::optional<std::string> native = used == 1 ? detail::native_expr(n, in, e) : std::nullopt;
    // torch names outputs "/c1/Conv_output_0": the node's path is name enough.
    std::string base = detail::identifier(g.names[size_t(n.out[0] >= 0 ? n.out[0] : 0)]);
    if (base.size() > 9 && base.ends_with("_output_0")) base.resize(base.size() - 9);
    std::string first = names.take(base);
    if (native) {
      body.push_back("    Tensor " + first + " = " + *native + ";");
      e.expr[size_t(n.out[0])] = first;
      continue;
    }
    std::string call = "onnx::call(\"" + n.op_type + "\", {";
    for (size_t k = 0; k < in.size(); ++k) call += (k ? ", " : "") + in[k];
    call += "}, {";
    bool firsta = true;
    for (const auto& [name, a] : n.attrs) {
      call += std::string(firsta ? "" : ", ") + "{\"" + name + "\", " + attr_value(a) + "}";
      firsta = false;
    }
    call += "}, " + std::to_string(n.opset) + ", " + std::to_string(used) + ")";
    out.fallbacks.push_back(n.where() + " -> onnx::call");
    if (used == 1) {
      body.push_back("    Tensor " + first + " = " + call + "[0];");
      e.expr[size_t(n.out[0])] = first;
    } else {
      std::string list = first + "_outs";
      body.push_back("    TensorList " + list + " = " + call + ";");
      for (size_t k = 0; k < n.out.size(); ++k)
        if (n.out[k] >= 0) e.expr[size_t(n.out[k])] = list + "[" + std::to_string(k) + "]";
    }
  }
  std::vector<std::string> results;
  for (int id : g.outputs) results.push_back(e.expr[size_t(id)]);

  // The files.
  const std::string& cls = o.class_name;
  std::string h = "#pragma once\n// Generated by ember-onnx from " +
                  (m->name.empty() ? std::string("a model") : "'" + m->name + "'") + " (" +
                  (m->producer.empty() ? "unknown producer" : m->producer) +
                  ").\n// Load the weights with store::load_into(module.state_dict(), \"" +
                  o.header_name.substr(0, o.header_name.rfind('.')) +
                  ".safetensors\").\n"
                  "#include <ember/ember.h>\n\nnamespace " +
                  o.name_space + " {\n\nclass " + cls +
                  " : public ember::nn::Module {\n public:\n  " + cls + "();\n";
  auto signature = [&](const std::string& ns) {
    std::string sig;
    for (size_t k = 0; k < params.size(); ++k)
      sig += (k ? ", const " : "const ") + ns + "Tensor& " + params[k];
    return sig;
  };
  const std::string sig = signature("ember::"), src_sig = signature("");
  bool plain = params.size() == 1 && results.size() == 1;
  if (plain) {
    h += "  ember::Tensor forward(" + sig + ") override;\n";
  } else {
    h += "  /// Every output of the graph, in order.\n  ember::TensorList forward_all(" + sig +
         ");\n";
    if (params.size() == 1)
      h += "  ember::Tensor forward(" + sig + ") override { return forward_all(" +
           e.expr[size_t(g.inputs[0])] + ")[0]; }\n";
  }
  for (auto& s : members) {
    auto pos = s.find("Tensor ");
    s.replace(pos, 7, "ember::Tensor ");
    h += s + "\n";
  }
  h += "};\n\n}  // namespace " + o.name_space + "\n";
  std::string s =
      "// Generated by ember-onnx: one statement per node of the ONNX graph (after constant\n"
      "// folding); onnx::call runs the ops that no single ember function renders.\n"
      "#include \"" +
      o.header_name + "\"\n\n" + (out.fallbacks.empty() ? "" : "#include <ember/onnx.h>\n\n") +
      "namespace " + o.name_space + " {\n\nusing namespace ember;\n\n" + cls + "::" + cls +
      "() {\n";
  for (const auto& c : ctor) s += c + "\n";
  s += "}\n\n";
  s += plain ? "Tensor " + cls + "::forward(" + src_sig + ") {\n"
             : "TensorList " + cls + "::forward_all(" + src_sig + ") {\n";
  for (const auto& b : body) s += b.substr(2) + "\n";
  if (plain) {
    s += "  return " + results[0] + ";\n";
  } else {
    s += "  return {";
    for (size_t k = 0; k < results.size(); ++k) s += (k ? ", " : "") + results[k];
    s += "};\n";
  }
  s += "}\n\n}  // namespace " + o.name_space + "\n";
  out.header = std::move(h);
  out.source = std::move(s);
  return out;
}

}  // namespace ember::onnx
