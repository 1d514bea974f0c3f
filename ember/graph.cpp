// ember::capture (ember/graph.h): on CUDA the step becomes a graph (ember/backends/cuda/graph.cpp);
// on devices without graphs each replay runs fn eagerly and copies its results into the static
// outputs, so a program written for replays runs unchanged there.
#include "ember/graph.h"

#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/detail/capture.h"
#ifdef EMBER_CUDA
#include "ember/backends/cuda/graph.h"
#endif

namespace ember {

namespace detail {

std::atomic<Capture*> g_capture{nullptr};

void throw_capture(const char* op, const std::string& msg) {
  throw CaptureError(std::string("[") + op + "] " + msg);
}

void forbid_in_capture(Device d, const char* op, const char* what) {
  Capture* c = active_capture();
  if (!c || !c->place.same_place(d)) [[likely]] return;
  if (!op) op = current_op();
  throw_capture(op ? op : "capture",
                std::string(what) + " inside ember::capture: the captured step must stay on the " +
                    "device (no item(), to_vector(), printing, data-dependent shapes or ops " +
                    "without a device kernel); do it outside the step, on its outputs");
}

}  // namespace detail

struct CapturedStep::Impl {
  std::function<TensorList()> fn;  // what eager replays run (a graph keeps it for what it holds)
  TensorList inputs, outputs;
  std::vector<const Storage*> input_storages;
  std::vector<Shape> input_shapes;
  std::unique_ptr<detail::GraphExec> graph;
  int64_t replays = 0;
};

CapturedStep::CapturedStep() = default;
CapturedStep::CapturedStep(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

void check_inputs(const CapturedStep::Impl& m) {
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Tensor& t = m.inputs[i];
    if (t.impl()->storage.get() != m.input_storages[i] || t.shape() != m.input_shapes[i])
      detail::throw_capture("CapturedStep::replay",
                            "expected static input " + std::to_string(i) + " of shape " +
                                shape_str(m.input_shapes[i]) + " on its captured storage, found " +
                                shape_str(t.shape()) +
                                (t.impl()->storage.get() != m.input_storages[i]
                                     ? " on another storage"
                                     : "") +
                                ": capture the step again");
  }
}

}  // namespace

void CapturedStep::replay() {
  if (!impl_) detail::throw_capture("CapturedStep::replay", "expected a captured step, found an empty one");
  Impl& m = *impl_;
  check_inputs(m);
  if (m.graph) {
    m.graph->replay();
  } else {
    TensorList outs = m.fn();
    NoGradGuard no_grad;
    if (m.replays == 0) {
      m.outputs.clear();
      for (const Tensor& t : outs) m.outputs.push_back(t.defined() ? t.detach().clone() : t);
    } else {
      if (outs.size() != m.outputs.size())
        detail::throw_capture("CapturedStep::replay",
                              "expected fn to return " + std::to_string(m.outputs.size()) +
                                  " tensors, as on its first replay, found " +
                                  std::to_string(outs.size()));
      for (size_t i = 0; i < outs.size(); ++i)
        if (outs[i].defined()) m.outputs[i].copy_(outs[i].detach());
    }
  }
  ++m.replays;
}

const TensorList& CapturedStep::inputs() const {
  static const TensorList none;
  return impl_ ? impl_->inputs : none;
}
const TensorList& CapturedStep::outputs() const {
  static const TensorList none;
  return impl_ ? impl_->outputs : none;
}
Tensor CapturedStep::input(size_t i) const {
  const TensorList& v = inputs();
  if (i >= v.size())
    detail::throw_index("CapturedStep::input", "index " + std::to_string(i) + " of " +
                                                   std::to_string(v.size()) + " static inputs");
  return v[i];
}
Tensor CapturedStep::output(size_t i) const {
  const TensorList& v = outputs();
  if (i >= v.size())
    detail::throw_index("CapturedStep::output",
                        "index " + std::to_string(i) + " of " + std::to_string(v.size()) +
                            " outputs" + (impl_ && !impl_->graph && impl_->replays == 0
                                              ? " (an eager step has its outputs after its first replay)"
                                              : ""));
  return v[i];
}
bool CapturedStep::graph() const { return impl_ && impl_->graph; }
int64_t CapturedStep::pool_bytes() const { return impl_ && impl_->graph ? impl_->graph->pool_bytes() : 0; }
int64_t CapturedStep::replays() const { return impl_ ? impl_->replays : 0; }

CapturedStep capture(std::function<TensorList()> fn, TensorList inputs,
                     const CaptureOptions& options) {
  detail::init();
  if (!fn) detail::throw_value("capture", "expected a function, found an empty one");
  Device d = options.device ? *options.device : default_device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined())
      detail::throw_value("capture", "expected defined static inputs, found an undefined one at " +
                                         std::to_string(i));
    if (!options.device && i == 0) d = inputs[0].device();
    if (!inputs[i].device().same_place(d))
      detail::throw_device("capture", "expected static inputs on " + d.str() + ", found " +
                                          inputs[i].device().str() + " at " + std::to_string(i));
  }
  if (detail::active_capture())
    detail::throw_capture("capture", "expected no capture in progress, found one (captures do not nest)");
  auto m = std::make_shared<CapturedStep::Impl>();
  m->inputs = std::move(inputs);
  for (const Tensor& t : m->inputs) {
    m->input_storages.push_back(t.impl()->storage.get());
    m->input_shapes.push_back(t.shape());
  }
#ifdef EMBER_CUDA
  if (d.backend() == Backend::Cuda) {
    m->graph = cuda::capture_graph(fn, d, m->outputs);
    m->fn = std::move(fn);  // kept: tensors it holds by value are ones the graph reads
    return CapturedStep(std::move(m));
  }
#endif
  if (d.backend() == Backend::Cuda)
    detail::throw_device("capture", d.str() + " requested, but this build of ember has no CUDA backend");
  m->fn = std::move(fn);  // no graphs here: each replay runs the step
  return CapturedStep(std::move(m));
}

}  // namespace ember
