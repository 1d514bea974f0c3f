#pragma once
// What the code generator's files share: C++ spelling of names, numbers and tensors, and the
// per-op renderers. Private to ember::onnx.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/onnx/graph.h"

namespace ember::onnx::detail {

/// An ONNX name as a C++ identifier ("enc.layers.0/fc" -> "enc_layers_0_fc").
std::string identifier(std::string_view name);
/// Hands out identifiers once each ("w", "w_2", ...).
class Namer {
 public:
  std::string take(const std::string& base);

 private:
  std::set<std::string> used_;
};
std::string cpp_dtype(DType d);                        // "kF32"
std::string number(double v, DType d);                 // a literal of that dtype's precision
std::string ints_list(const std::vector<int64_t>& v);  // "{1, 2}"
/// tensor(std::vector<float>{...}, {..}, kF32[, device]); `device` is an expression or "".
/// tensor(std::vector<float>{...}, {..}, kF32[, device]), `device` being an expression or "".
std::string tensor_literal(const Tensor& t, const std::string& device = "");
std::string string_literal(const std::string& s);

/// A value's dtype and rank as the trace saw them (known = false without a trace).
struct ValueType {
  bool known = false;
  DType dtype = DType::F32;
  int64_t rank = 0;
};
/// The generator's state while it renders nodes.
struct Emit {
  const Graph& g;
  std::vector<ValueType> types;   // per value id (empty: no trace)
  std::vector<std::string> expr;  // per value id: how the code names it
  ValueType type(int id) const {
    return id >= 0 && size_t(id) < types.size() ? types[size_t(id)] : ValueType{};
  }
  const Tensor* constant(int id) const {
    return id >= 0 && g.constants[size_t(id)].defined() ? &g.constants[size_t(id)] : nullptr;
  }
};
/// The ember expression computing node n's only output from its inputs' expressions, or
/// nothing when no single ember call renders it exactly (onnx::call then runs it).
std::optional<std::string> native_expr(const Node& n, const std::vector<std::string>& in,
                                       const Emit& e);

}  // namespace ember::onnx::detail
