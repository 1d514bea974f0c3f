// The table of export's op mappings, and which calls the tracing layer leaves whole.
#include "ember/onnx/export_ops.h"

#include "ember/ops/modes.h"

namespace ember::onnx::detail {

std::string with_const(Emitter& e, const char* type, const std::string& x, double c, DType d) {
  return e.node1(type, {x, e.scalar(c, d)});
}

namespace {
const EmitTable& table() {
  static const EmitTable t = [] {
    EmitTable t{};
    add_emit_math(t);
    add_emit_reduce(t);
    add_emit_layout(t);
    add_emit_nn(t);
    return t;
  }();
  return t;
}
}  // namespace

EmitFn find_emit(OpId op) { return table()[size_t(op)]; }

bool exportable(const OpCall& c, int64_t opset) {
  if (!find_emit(c.op)) return false;
  switch (c.op) {
    case OpId::layer_norm:
      return opset >= 17;
    case OpId::batch_norm:
      return !c.attrs.b[0] && c.inputs.size() >= 3 && c.inputs[1].defined() &&
             c.inputs[2].defined();
    case OpId::norm:
      return c.attrs.f[0] == 1 || c.attrs.f[0] == 2;
    case OpId::tril:
    case OpId::triu:
      return opset >= 14;  // Trilu; before, the decomposition
    case OpId::pad:
      return ops::PadMode(c.attrs.mode) != ops::PadMode::Circular;
    default:
      return true;
  }
}

}  // namespace ember::onnx::detail
