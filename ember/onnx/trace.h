#pragma once
// Export's tracing layer: a device layer that records every op a module runs as the ember call it
// is (op, attributes, input and output tensors). Ops that export has no ONNX mapping for but
// that decompose are expanded here, so their sub-ops are recorded instead. No protobuf type
// appears here. Private to ember::onnx.
#include <memory>
#include <vector>

#include "ember/ops/registry.h"

namespace ember::onnx::detail {

/// One recorded call. Tensors are held so no implementation is freed (and its address reused)
/// while the trace is read.
struct TracedOp {
  OpId op{};
  Attrs attrs;
  TensorList inputs, outputs;
  DType compute = DType::F32;  // binary and ternary ops: the dtype inputs are promoted to
};

/// Whether export maps `call` to ONNX nodes at `opset` (else the layer expands its
/// decomposition, or records it for the unsupported-op error).
bool exportable(const OpCall& call, int64_t opset);

/// What one export's trace holds: the opset it maps to and the calls in order.
struct Recording {
  int64_t opset = 17;
  std::vector<TracedOp> ops;
};

/// One layer for every export (devices intern their layer stacks, so a layer per export would
/// leak one stack each); it records only on a thread inside a Scope.
class TraceLayer final : public Layer {
 public:
  static const std::shared_ptr<TraceLayer>& instance();
  /// `d` with this layer outermost (unchanged when it has it).
  static Device traced(Device d);
  /// While alive, ops on this thread that reach the layer are recorded into `r`.
  class Scope {
   public:
    explicit Scope(Recording& r);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Recording* prev_;
  };
  const char* name() const override { return "onnx-trace"; }
  TensorList call(const OpCall& c, const Next& next) override;
};

}  // namespace ember::onnx::detail
