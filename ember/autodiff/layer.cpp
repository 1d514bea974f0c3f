// The autodiff layer: records a node for each op whose inputs require grad, and nothing otherwise
// (inference pays only a flag check). Ops without a VJP rule are recorded through their
// decomposition; non-differentiable ops produce tensors that do not require grad.
#include <atomic>

#include "ember/autodiff/engine.h"
#include "ember/autodiff/function.h"
#include "ember/error.h"

namespace ember {

namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }
bool grad_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool on) { t_grad_enabled = on; }
AutoGradMode::AutoGradMode(bool enabled) : prev_(t_grad_enabled) { t_grad_enabled = enabled; }
AutoGradMode::~AutoGradMode() { t_grad_enabled = prev_; }

namespace autodiff {

AutogradMeta* meta_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return static_cast<AutogradMeta*>(t.impl()->autograd.get());
}
std::shared_ptr<AutogradMeta> meta_ptr_of(const Tensor& t) {
  if (!t.defined() || !t.impl()->autograd) return nullptr;
  return std::static_pointer_cast<AutogradMeta>(t.impl()->autograd);
}
AutogradMeta& ensure_meta(const Tensor& t) {
  if (!t.impl()->autograd) t.impl()->autograd = std::make_shared<AutogradMeta>();
  return *static_cast<AutogradMeta*>(t.impl()->autograd.get());
}

namespace {

bool wants_grad(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  return m && m->requires_grad;
}

// Ops whose outputs are expensive to recompute: kept even under checkpointing.
bool compute_heavy(OpId op) {
  OpCategory c = op_def(op).category;
  return c == OpCategory::Matmul || c == OpCategory::Conv;
}

class AutodiffLayer final : public Layer {
 public:
  explicit AutodiffLayer(bool checkpointing) : checkpointing_(checkpointing) {}
  const char* name() const override { return checkpointing_ ? "autodiff(checkpointing)" : "autodiff"; }

  TensorList call(const OpCall& c, const Next& next) override {
    bool any = false;
    if (t_grad_enabled)
      for (const Tensor& t : c.inputs) any = any || wants_grad(t);
    if (!any) return next(c);
    const OpDef& d = op_def(c.op);
    if (c.op == OpId::copy && c.inputs.size() == 2) return record_inplace_copy(c, next);
    if (!d.differentiable) return next(c);
    if (!d.vjp) {
      if (d.decompose) return d.decompose(c.attrs, c.inputs);  // sub-ops are recorded
      detail::throw_not_implemented(d.name, "no VJP rule and no decomposition: cannot differentiate");
    }
    TensorList outs = next(c);
    record(c, outs);
    return outs;
  }

 private:
  Saved save_input(const Tensor& t) const {
    Saved s;
    if (!t.defined()) return s;
    AutogradMeta* m = meta_of(t);
    if (checkpointing_ && m && m->grad_fn && m->grad_fn->recompute &&
        !modified_since_made(t, *m)) {
      s.source = m->grad_fn;  // recompute the cheap producer instead of keeping its output
      s.source_nr = m->output_nr;
      return s;
    }
    // Detached: holding the handle would hold its meta, which an in-place op may later point
    // at a newer node, closing a reference cycle. The history a second-order backward needs
    // is the node's edge for this input (a snapshot of the meta when saved).
    s.tensor = t.detach();
    s.version = t.version();
    return s;
  }

  // Whether `t` was written in place after its producer made it: recomputing the producer would
  // then give the old values, so the tensor itself must be kept.
  static bool modified_since_made(const Tensor& t, const AutogradMeta& m) {
    const std::vector<Saved>& outs = m.grad_fn->outputs;
    return size_t(m.output_nr) >= outs.size() || outs[size_t(m.output_nr)].version != t.version();
  }

  void record(const OpCall& c, TensorList& outs) {
    auto node = std::make_shared<Node>();
    node->op = c.op;
    node->attrs = c.attrs;
    node->device = c.device;
    node->recompute = checkpointing_ && !compute_heavy(c.op) && op_def(c.op).category != OpCategory::Random;
    node->inputs.reserve(c.inputs.size());  // one allocation each: recording runs on every op
    node->next.reserve(c.inputs.size());
    node->needs.reserve(c.inputs.size());
    node->outputs.reserve(outs.size());
    for (const Tensor& t : c.inputs) {
      node->inputs.push_back(save_input(t));
      Edge e;
      AutogradMeta* m = meta_of(t);
      bool need = m && m->requires_grad && is_differentiable(t.dtype());
      if (need) {
        if (m->grad_fn) {
          e.fn = m->grad_fn;
          e.output_nr = m->output_nr;
        } else {
          e.leaf = meta_ptr_of(t);
        }
      }
      node->next.push_back(std::move(e));
      node->needs.push_back(need);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      Tensor& o = outs[i];
      // A kernel may hand back an input unchanged (contiguous of a contiguous tensor): give the
      // result its own implementation so its history does not overwrite the input's.
      for (const Tensor& in : c.inputs)
        if (in.defined() && o.impl() == in.impl()) o = detail::retag(o, o.device());
      Saved s;
      s.version = o.version();  // recomputed outputs too: see modified_since_made
      if (!node->recompute) s.tensor = o.detach();
      node->outputs.push_back(std::move(s));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!is_differentiable(outs[i].dtype())) continue;  // indices never carry gradients
      AutogradMeta& m = ensure_meta(outs[i]);
      m.requires_grad = true;
      m.grad_fn = node;
      m.output_nr = int(i);
    }
  }

  // copy_(dst, src): dst's storage now holds src, so its history becomes "copy of src".
  TensorList record_inplace_copy(const OpCall& c, const Next& next) {
    const Tensor& dst = c.inputs[0];
    AutogradMeta* dm = meta_of(dst);
    if (dm && dm->requires_grad && !dm->grad_fn)
      detail::throw_value("copy_", "a leaf tensor that requires grad cannot be modified in place "
                                   "(wrap the update in a NoGradGuard)");
    // Writing through a view would have to rewrite the base tensor's history too (PyTorch's
    // CopySlices); until ember does that, refuse rather than return wrong gradients.
    if (dst.impl()->is_view)
      detail::throw_not_implemented(
          "copy_", "in-place writes into a view (slice, select, ...) of a tensor with autograd "
                   "history are not supported yet; build the result out of place instead "
                   "(cat, index_put, where, pad), or write under a NoGradGuard");
    TensorList outs = next(c);
    auto node = std::make_shared<Node>();
    node->op = OpId::copy;
    node->attrs = c.attrs;
    node->device = c.device;
    node->inputs.push_back(Saved{});  // the overwritten value: no gradient flows to it
    node->inputs.push_back(save_input(c.inputs[1]));
    node->next.resize(2);
    node->needs = {0, 0};
    const Tensor& src = c.inputs[1];
    AutogradMeta* sm = meta_of(src);
    if (sm && sm->requires_grad && is_differentiable(src.dtype())) {
      node->needs[1] = 1;
      if (sm->grad_fn) node->next[1] = Edge{sm->grad_fn, sm->output_nr, nullptr};
      else node->next[1].leaf = meta_ptr_of(src);
    }
    node->outputs.push_back(Saved{});
    AutogradMeta& m = ensure_meta(dst);
    m.requires_grad = node->needs[1] != 0;
    m.grad_fn = m.requires_grad ? node : nullptr;
    m.output_nr = 0;
    return outs;
  }

  bool checkpointing_;
};

}  // namespace

bool function_needs_grad(std::span<const Tensor> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (wants_grad(t) && is_differentiable(t.dtype())) return true;
  return false;
}

bool record_function(const char* name, std::span<const Tensor> inputs, TensorList& outputs,
                     FunctionVjp vjp) {
  if (!function_needs_grad(inputs)) return false;
  auto node = std::make_shared<Node>();
  node->op = OpId::user_op;
  node->name = name;
  node->function = std::move(vjp);
  bool placed = false;
  for (const Tensor& t : inputs) {
    Saved s;
    Edge e;
    AutogradMeta* m = meta_of(t);
    const bool need = m && m->requires_grad && is_differentiable(t.dtype());
    if (t.defined()) {
      if (!placed) node->device = t.device(), placed = true;
      s.tensor = t.detach();
      s.version = t.version();
    }
    if (need) {
      if (m->grad_fn) e.fn = m->grad_fn, e.output_nr = m->output_nr;
      else e.leaf = meta_ptr_of(t);
    }
    node->inputs.push_back(std::move(s));
    node->next.push_back(std::move(e));
    node->needs.push_back(need);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    for (const Tensor& in : inputs)
      if (in.defined() && o.defined() && o.impl() == in.impl()) o = detail::retag(o, o.device());
    Saved s;
    if (o.defined()) s.tensor = o.detach(), s.version = o.version();
    node->outputs.push_back(std::move(s));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !is_differentiable(outputs[i].dtype())) continue;
    AutogradMeta& m = ensure_meta(outputs[i]);
    m.requires_grad = true;
    m.grad_fn = node;
    m.output_nr = int(i);
  }
  return true;
}

std::shared_ptr<Layer> layer(bool checkpointing) {
  static auto plain = std::make_shared<AutodiffLayer>(false);
  static auto ckpt = std::make_shared<AutodiffLayer>(true);
  return checkpointing ? ckpt : plain;
}

}  // namespace autodiff

Device Device::autodiff() const {
  if (has_autodiff()) return *this;
  return with_layer(autodiff::layer(false), /*outermost=*/true);  // autodiff sees ops first
}

Device Device::gradient_checkpointing() const {
  if (!has_autodiff()) return with_layer(autodiff::layer(true), /*outermost=*/true);
  return replace_layer(autodiff::layer(false).get(), autodiff::layer(true));
}

bool Device::has_autodiff() const {
  for (Layer* l : layers())
    if (l == autodiff::layer(false).get() || l == autodiff::layer(true).get()) return true;
  return false;
}

}  // namespace ember
