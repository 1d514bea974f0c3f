// Backward: walks the recorded graph from a root in topological order, runs each node's VJP rule
// and accumulates gradients into leaves. Saved tensors are checked against in-place edits and
// freed as soon as a node is done (unless the graph is retained).
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "ember/amp.h"
#include "ember/autodiff/engine.h"
#include "ember/autodiff/hooks.h"
#include "ember/autodiff/rules.h"
#include "ember/detail/capture.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"

namespace ember {

// --- Gradients ---
namespace {
const AutogradMeta* key_of(const Tensor& t, const char* op) {
  const AutogradMeta* m = autodiff::meta_of(t);
  if (!m || !m->requires_grad)
    detail::throw_value(op, "the tensor does not require grad (call requires_grad_() on it "
                            "before the forward pass)");
  return m;
}
}  // namespace

Tensor Gradients::get(const Tensor& t) const {
  auto it = grads_.find(key_of(t, "Gradients::get"));
  return it == grads_.end() ? Tensor() : it->second.grad;
}
bool Gradients::contains(const Tensor& t) const {
  const AutogradMeta* m = autodiff::meta_of(t);
  return m && grads_.count(m);
}
void Gradients::set(const Tensor& t, Tensor grad) {
  key_of(t, "Gradients::set");
  if (grad.defined() && grad.shape() != t.shape())
    detail::throw_shape("Gradients::set", "gradient of shape " + shape_str(grad.shape()) +
                                              " for a tensor of shape " + shape_str(t.shape()));
  grads_[autodiff::meta_of(t)] = Entry{autodiff::meta_ptr_of(t), std::move(grad)};
}
void Gradients::remove(const Tensor& t) { grads_.erase(autodiff::meta_of(t)); }
void Gradients::accumulate(const std::shared_ptr<AutogradMeta>& meta, const Tensor& g) {
  auto [it, fresh] = grads_.try_emplace(meta.get(), Entry{meta, g});
  if (!fresh) it->second.grad = it->second.grad.defined() ? add(it->second.grad, g) : g;
}

namespace autodiff {

namespace {
thread_local LeafReadyFn t_leaf_hook = nullptr;
thread_local void* t_leaf_ctx = nullptr;
}  // namespace
ScopedLeafHook::ScopedLeafHook(LeafReadyFn fn, void* ctx)
    : prev_fn_(t_leaf_hook), prev_ctx_(t_leaf_ctx) {
  t_leaf_hook = fn;
  t_leaf_ctx = ctx;
}
ScopedLeafHook::~ScopedLeafHook() {
  t_leaf_hook = prev_fn_;
  t_leaf_ctx = prev_ctx_;
}
const AutogradMeta* leaf_key(const Tensor& t) { return meta_of(t); }

std::unordered_set<const AutogradMeta*> reachable_leaves(const Tensor& root) {
  std::unordered_set<const AutogradMeta*> leaves;
  AutogradMeta* rm = meta_of(root);
  if (!rm || !rm->requires_grad) return leaves;
  if (!rm->grad_fn) return {rm};
  std::unordered_set<Node*> seen{rm->grad_fn.get()};
  std::vector<Node*> stack{rm->grad_fn.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf) leaves.insert(e.leaf.get());
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  return leaves;
}

// Checkpointing: runs a cheap node's forward again from its (recursively recomputed) inputs;
// the results are cached on the node for the rest of this backward pass.
const TensorList& recompute(Node& n, const char* op) {
  if (n.recomputed.empty()) {
    TensorList in;
    for (const Saved& x : n.inputs) in.push_back(x.source || x.tensor.defined() ? unpack(x, op) : Tensor());
    NoGradGuard ng;
    n.recomputed = dispatch(n.op, n.attrs, std::span<const Tensor>(in));
  }
  return n.recomputed;
}

Tensor unpack(const Saved& s, const char* op) {
  if (s.source) return recompute(*s.source, op)[size_t(s.source_nr)];
  if (s.tensor.defined() && s.tensor.version() != s.version)
    detail::throw_value("backward", std::string("a tensor saved by ") + op +
                                        " for the backward pass was modified in place (its version "
                                        "is " + std::to_string(s.tensor.version()) +
                                        ", it was " + std::to_string(s.version) +
                                        " when saved); clone it before modifying it");
  return s.tensor;
}

namespace {

// A node reachable from the root: the edges into it not yet run, and its outputs' cotangents.
struct Visit {
  int deps = 0;
  TensorList grads;
};

// When the backward pass is itself recorded (create_graph), a tensor a rule sees must carry the
// history of the forward tensor it stands for: output `nr` of `fn`.
Tensor attach(const Tensor& t, const std::shared_ptr<Node>& fn, int nr) {
  Tensor out = detail::retag(t, fn->device);
  AutogradMeta& m = ensure_meta(out);
  m.requires_grad = true;
  m.grad_fn = fn;
  m.output_nr = nr;
  return out;
}

// A view of a leaf's data carrying the leaf's own meta: gradients through it reach the leaf.
Tensor attach_leaf(const Tensor& t, const std::shared_ptr<AutogradMeta>& leaf, Device d) {
  Tensor out = detail::retag(t, d);
  out.impl()->autograd = leaf;
  return out;
}

void add_into(TensorList& slots, size_t i, const Tensor& g) {
  if (!g.defined()) return;
  if (slots.size() <= i) slots.resize(i + 1);
  slots[i] = slots[i].defined() ? add(slots[i], g) : g;
}

// Tensor::grad()'s slot, libtorch's accumulation: the first gradient is stored as it is (no
// copy, no add: the Gradients object holds the same tensor); later ones add to it. On a lazy
// device the adds queue like any op, and a queue runs once it holds a few thousand ops, so a
// loop that never clears the slot does not grow an unbounded pending graph. A gradient that
// carries history (create_graph) is stored without it: the slot would otherwise hold the graph
// that holds the leaf, a cycle never freed (PyTorch warns of it); autograd::grad or the returned
// Gradients keep the history.
void add_to_slot(AutogradMeta& m, const Tensor& g) {
  if (!g.defined()) return;
  NoGradGuard no_grad;
  const Tensor d = g.requires_grad() ? g.detach() : g;
  m.grad = m.grad.defined() ? add(m.grad, d) : d;
}

}  // namespace

Gradients run_backward(const Tensor& root, const BackwardOptions& o) {
  AutogradMeta* rm = meta_of(root);
  if (!rm || !rm->requires_grad)
    detail::throw_value("backward", "the tensor does not require grad: nothing it depends on "
                                    "requires grad, or it was computed under a NoGradGuard or on "
                                    "a device without .autodiff()");
  Tensor g0 = o.grad_output;
  if (!g0.defined()) {
    if (root.numel() != 1)
      detail::throw_shape("backward", "expected a scalar (one-element) output or a grad_output, "
                                      "found an output of shape " + shape_str(root.shape()));
    g0 = ones_like(root);
  } else if (g0.shape() != root.shape()) {
    detail::throw_shape("backward", "grad_output of shape " + shape_str(g0.shape()) +
                                        " for an output of shape " + shape_str(root.shape()));
  }
  Gradients local;
  Gradients& grads = o.accumulate_into ? *o.accumulate_into : local;
  const bool create = o.create_graph;
  const bool retain = o.retain_graph || create;
  // Gradients collected in accumulate_into go there only (ember's own accumulation). Inside
  // ember::capture the slots are left alone: a failed capture abandons what it queued, and a
  // slot holding such a tensor would fail every later backward.
  const bool slots = o.accumulate_grad && !o.accumulate_into && !detail::active_capture();
  std::unique_ptr<NoGradGuard> no_grad;
  if (!create) no_grad = std::make_unique<NoGradGuard>();
  const LeafReadyFn hook = t_leaf_hook;
  void* const hook_ctx = t_leaf_ctx;
  if (!rm->grad_fn) {  // the root is a leaf
    grads.accumulate(meta_ptr_of(root), g0);
    if (slots) add_to_slot(*rm, g0);
    if (hook) hook(hook_ctx, rm, grads);
    return o.accumulate_into ? Gradients(grads) : local;
  }
  // Count, for every node reachable from the root, how many edges lead into it (one map for
  // the walk and the pending cotangents: a lookup per edge, not three).
  std::unordered_map<Node*, Visit> graph;
  // With a leaf hook: the edges into each leaf not yet run, so the hook fires when its last ran.
  std::unordered_map<const AutogradMeta*, int> leaf_edges;
  std::vector<Node*> stack{rm->grad_fn.get()};
  graph.try_emplace(rm->grad_fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->released)
      detail::throw_value("backward", std::string("the graph through ") +
                                          (n->name ? n->name : op_name(n->op)) +
                                          " was already freed by an earlier backward; pass "
                                          "retain_graph = true to backward through it twice");
    for (const Edge& e : n->next) {
      if (hook && e.leaf) ++leaf_edges[e.leaf.get()];
      if (!e.fn) continue;
      auto [it, fresh] = graph.try_emplace(e.fn.get());
      ++it->second.deps;
      if (fresh) stack.push_back(e.fn.get());
    }
  }
  add_into(graph[rm->grad_fn.get()].grads, size_t(rm->output_nr), g0);
  std::vector<std::shared_ptr<Node>> ready{rm->grad_fn};
  std::vector<Node*> recomputed;
  amp::AutocastOff no_casts;  // the rules run in the dtypes the forward pass chose
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    TensorList gs = std::move(graph.find(node.get())->second.grads);
    gs.resize(node->outputs.size());
    // Every consumer of this node's outputs has run: their gradients are final.
    if (slots)
      for (size_t i = 0; i < node->retained.size() && i < gs.size(); ++i)
        if (auto m = node->retained[i].lock()) add_to_slot(*m, gs[i]);
    bool any = false;
    for (const Tensor& g : gs) any = any || g.defined();
    TensorList in_grads;
    if (any) {
      const char* name = node->name ? node->name : op_name(node->op);
      TensorList ins, outs;
      ins.reserve(node->inputs.size());
      outs.reserve(node->outputs.size());
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        const Saved& s = node->inputs[i];
        Tensor in = unpack(s, name);
        // Saved inputs carry no history (recomputed ones neither): re-attach them to where they
        // came from, or second-order terms through them would be lost.
        if (create && in.defined()) {
          const Edge& e = node->next[i];
          if (e.fn) in = attach(in, e.fn, e.output_nr);
          else if (e.leaf) in = attach_leaf(in, e.leaf, node->device);
          else if (s.source) in = attach(in, s.source, s.source_nr);
        }
        ins.push_back(in);
      }
      for (size_t i = 0; i < node->outputs.size(); ++i) {
        Tensor out = node->recompute ? recompute(*node, name)[i] : unpack(node->outputs[i], name);
        // re-attach so the rule's use of it is differentiable
        if (create && out.defined()) out = attach(out, node, int(i));
        outs.push_back(out);
      }
      if (node->recompute || !node->recomputed.empty()) recomputed.push_back(node.get());
      // VjpCtx takes bools; ops have a handful of inputs, so no allocation for them.
      bool needs_inline[8];
      std::unique_ptr<bool[]> needs_heap;
      bool* needs = needs_inline;
      if (node->needs.size() > std::size(needs_inline)) {
        needs_heap.reset(new bool[node->needs.size()]);
        needs = needs_heap.get();
      }
      for (size_t i = 0; i < node->needs.size(); ++i) needs[i] = node->needs[i];
      if (node->op == OpId::copy && node->inputs.size() == 2) {  // an in-place copy_
        // src was broadcast and cast into dst: its gradient is dst's, summed and cast back.
        in_grads = {Tensor(), node->needs[1] ? sum_to(gs[0], ins[1].shape()).to(ins[1].dtype())
                                             : Tensor()};
      } else {
        VjpCtx ctx{node->op, node->attrs, ins, outs, gs,
                   std::span<const bool>(needs, node->needs.size())};
        in_grads = node->function ? node->function(ctx) : op_def(node->op).vjp(ctx);
      }
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      Tensor g = i < in_grads.size() ? in_grads[i] : Tensor();
      if (e.leaf) {
        if (g.defined()) grads.accumulate(e.leaf, g);
        if (hook && --leaf_edges[e.leaf.get()] == 0) hook(hook_ctx, e.leaf.get(), grads);
      } else if (e.fn) {
        Visit& v = graph.find(e.fn.get())->second;
        add_into(v.grads, size_t(e.output_nr), g);
        if (--v.deps == 0) ready.push_back(e.fn);
      }
    }
    // Its consumers ran before it (reverse topological order): a recomputed result is done with.
    node->recomputed.clear();
    if (!retain) {
      node->released = true;
      node->inputs.clear();
      node->outputs.clear();
      node->function = nullptr;  // and what a function node kept for its backward
    }
  }
  for (Node* n : recomputed) n->recomputed.clear();
  if (o.accumulate_into) return grads;
  if (slots)
    for (auto& [key, e] : local.grads_) add_to_slot(*e.meta, e.grad);
  return local;
}

}  // namespace autodiff

// --- Tensor methods ---
Tensor& Tensor::requires_grad_(bool r) {
  if (!defined()) detail::throw_value("requires_grad_", "the tensor is undefined");
  autodiff::ensure_meta(*this);
  AutogradMeta& m = autodiff::ensure_meta(*this);
  if (m.grad_fn && !r)
    detail::throw_value("requires_grad_", "only leaf tensors can stop requiring grad (use detach())");
  if (r && !is_differentiable(dtype()))
    detail::throw_dtype("requires_grad_", "only floating and complex tensors can require gradients, found " +
                                              std::string(dtype_name(dtype())));
  m.requires_grad = r;
  if (r && !impl()->device.has_autodiff()) impl()->device = impl()->device.autodiff();
  return *this;
}
bool Tensor::requires_grad() const {
  const AutogradMeta* m = autodiff::meta_of(*this);
  return m && m->requires_grad;
}
bool Tensor::is_leaf() const {
  const AutogradMeta* m = autodiff::meta_of(*this);
  return !m || !m->grad_fn;
}
Gradients Tensor::backward() const { return autodiff::run_backward(*this, {}); }
Gradients Tensor::backward(const BackwardOptions& o) const { return autodiff::run_backward(*this, o); }
Gradients Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                           bool create_graph) const {
  BackwardOptions o;
  o.grad_output = gradient;
  o.retain_graph = retain_graph.value_or(create_graph);
  o.create_graph = create_graph;
  return autodiff::run_backward(*this, o);
}
Tensor Tensor::grad(const Gradients& g) const { return g.get(*this); }
Tensor Tensor::grad() const {
  const AutogradMeta* m = autodiff::meta_of(*this);
  return m ? m->grad : Tensor();
}
Tensor& Tensor::mutable_grad() const {
  if (!defined()) detail::throw_value("mutable_grad", "the tensor is undefined");
  return autodiff::ensure_meta(*this).grad;
}
void Tensor::retain_grad() const {
  AutogradMeta* m = autodiff::meta_of(*this);
  if (!m || !m->requires_grad)
    detail::throw_value("retain_grad", "the tensor does not require grad");
  if (!m->grad_fn || m->retains_grad) return;  // a leaf's slot is filled anyway
  m->retains_grad = true;
  auto& r = m->grad_fn->retained;
  if (r.size() <= size_t(m->output_nr)) r.resize(size_t(m->output_nr) + 1);
  r[size_t(m->output_nr)] = autodiff::meta_ptr_of(*this);
}
bool Tensor::retains_grad() const {
  const AutogradMeta* m = autodiff::meta_of(*this);
  return m && m->retains_grad;
}

namespace detail {
void zero_grad_slot(const Tensor& t, bool set_to_none) {
  AutogradMeta* m = autodiff::meta_of(t);
  if (!m || !m->grad.defined()) return;
  NoGradGuard no_grad;
  // A new tensor, not zero_() in place: a slot may be an expanded view or alias a gradient
  // another slot or a Gradients object holds.
  m->grad = set_to_none ? Tensor() : zeros_like(m->grad);
}
Gradients slot_gradients(const std::vector<Tensor>& ts) {
  Gradients g;
  for (const Tensor& t : ts)
    if (const AutogradMeta* m = autodiff::meta_of(t); m && m->requires_grad && m->grad.defined())
      g.set(t, m->grad);
  return g;
}
}  // namespace detail

namespace autograd {
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs, std::optional<bool> retain_graph,
                bool create_graph, bool allow_unused) {
  if (outputs.empty()) detail::throw_value("autograd::grad", "expected at least one output");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    detail::throw_value("autograd::grad", "expected one grad_output per output (" +
                                              std::to_string(outputs.size()) + "), found " +
                                              std::to_string(grad_outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad())
      detail::throw_value("autograd::grad", "input " + std::to_string(i) +
                                                " does not require grad");
    if (!inputs[i].is_leaf())
      detail::throw_value("autograd::grad", "input " + std::to_string(i) +
                                                " is not a leaf (ember differentiates with "
                                                "respect to leaves)");
  }
  Gradients acc;
  for (size_t i = 0; i < outputs.size(); ++i) {
    BackwardOptions o;
    if (!grad_outputs.empty()) o.grad_output = grad_outputs[i];
    // The outputs may share a graph: keep it until the last one has run through it.
    o.retain_graph = i + 1 < outputs.size() || retain_graph.value_or(create_graph);
    o.create_graph = create_graph;
    o.accumulate_into = &acc;
    o.accumulate_grad = false;
    autodiff::run_backward(outputs[i], o);
  }
  TensorList out;
  out.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor g = acc.get(inputs[i]);
    if (!g.defined() && !allow_unused)
      detail::throw_value("autograd::grad", "input " + std::to_string(i) +
                                                " was not used to compute the outputs (pass "
                                                "allow_unused = true to get an undefined "
                                                "gradient for it)");
    out.push_back(std::move(g));
  }
  return out;
}
}  // namespace autograd

}  // namespace ember
