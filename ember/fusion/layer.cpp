// The fusion layer: on a lazy device it queues the ops fused kernels can cover and returns
// pending tensors; everything else runs at once below it. A read of a pending tensor (a host
// read, a kernel of another op, ember::synchronize) runs the queue.
#include "ember/fusion/layer.h"

#include "ember/backends/backend.h"
#include "ember/backends/fallback.h"
#include "ember/fusion/executor.h"
#include "ember/fusion/library.h"
#include "ember/fusion/queue.h"
#include "ember/ops/complex_route.h"

namespace ember::fusion {
namespace {

// A composite op the planner runs as one kernel of its own (a norm's backward): queued, not
// lowered, where the device's executor says it can.
bool planned_composite(const OpCall& c) {
  return (c.op == OpId::layer_norm_backward || c.op == OpId::rms_norm_backward) &&
         executor_for(c.device).plans_norm_backward();
}

class FusionLayer final : public Layer {
 public:
  const char* name() const override { return "fusion"; }
  bool defers() const override { return true; }
  TensorList call(const OpCall& c, const Next& next) override {
    const bool inplace = c.op == OpId::copy && c.inputs.size() == 2;
    const OpDef& def = op_def(c.op);
    const BackendImpl* b = backend_for(c.device.backend());
    if (def.category == OpCategory::Composite && def.decompose && c.out.empty() &&
        (!b->supports(c) || detail::runs_decomposition(*b, c.op)) && !planned_composite(c)) {
      // The backend would lower it anyway: lower it here, so its pieces queue and fuse (and
      // its checks wait for the queue instead of reading data now).
      LayerFloor floor(this);
      OriginScope origin(op_name(c.op));
      return def.decompose(c.attrs, c.inputs);
    }
    if ((!inplace && !queued_op(c.op) && !queued_library_call(c)) || !c.out.empty() || c.stream ||
        c.meta.variadic)
      return next(c);
    // Complex elements never enter a fused kernel: the kernel language has no complex type.
    // Only data movement sees them (arithmetic runs on the parts), and it runs eagerly.
    if (detail::call_is_complex(c)) [[unlikely]]
      return next(c);
    // bernoulli with tensor probabilities checks them before it draws: eagerly, as before.
    if (c.op == OpId::bernoulli && !c.attrs.b[0]) return next(c);
    for (int k = 0; k < c.meta.n; ++k)
      for (int64_t d : c.meta.m[k].shape)
        if (d < 0) return next(c);  // a size that depends on the data
    Queue& q = queue_for(c.device);
    if (inplace) {
      // A destination another thread's queue will write is written there first.
      const Storage& s = *c.inputs[0].impl()->storage;
      PendingWrite* p = s.pending.load(std::memory_order_acquire);
      if (p && p != &q) detail::ready(c.inputs[0]);
    }
    return q.record(c);
  }
  void sync(Device d) override { queue_for(d).flush(); }
};

}  // namespace

const std::shared_ptr<Layer>& fusion_layer() {
  static const std::shared_ptr<Layer> layer = std::make_shared<FusionLayer>();
  return layer;
}

}  // namespace ember::fusion
