// The tracing layer (trace.h). It is the outermost layer of the device a module is traced on, so
// it sees each op as the user called it; sub-ops that a kernel runs below the layers are not
// seen, and those of a decomposition it expands itself pass through it again (LayerFloor).
#include "ember/onnx/trace.h"

#include "ember/error.h"

namespace ember::onnx::detail {

namespace {
// Set while a recorded op runs below this layer: whatever it dispatches is part of it.
thread_local int t_inside = 0;
thread_local Recording* t_recording = nullptr;
struct Inside {
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
};
}  // namespace

const std::shared_ptr<TraceLayer>& TraceLayer::instance() {
  static const auto layer = std::make_shared<TraceLayer>();
  return layer;
}

Device TraceLayer::traced(Device d) {
  for (Layer* l : d.layers())
    if (l == instance().get()) return d;
  return d.with_layer(instance(), /*outermost=*/true);
}

TraceLayer::Scope::Scope(Recording& r) : prev_(t_recording) { t_recording = &r; }
TraceLayer::Scope::~Scope() { t_recording = prev_; }

TensorList TraceLayer::call(const OpCall& c, const Next& next) {
  if (!t_recording || t_inside > 0) return next(c);
  const OpDef& d = op_def(c.op);
  if (!exportable(c, t_recording->opset) && d.decompose) {
    LayerFloor floor(this);  // the sub-ops start at this layer, and are recorded
    return d.decompose(c.attrs, c.inputs);
  }
  TensorList outs;
  {
    Inside inside;
    outs = next(c);
  }
  TracedOp t;
  t.op = c.op;
  t.attrs = c.attrs;
  t.inputs.assign(c.inputs.begin(), c.inputs.end());
  t.outputs = outs;
  t.compute = c.meta.compute;
  t_recording->ops.push_back(std::move(t));
  return outs;
}

}  // namespace ember::onnx::detail
