#include "ember/fusion/plan.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "ember/fusion.h"
#include "ember/fusion/executor.h"
#include "ember/fusion/library.h"
#include "ember/fusion/multi.h"
#include "ember/fusion/pointwise.h"
#include "ember/fusion/row.h"
#include "ember/fusion/simplify.h"
#include "ember/fusion/stats.h"
#include "ember/kl/render.h"
#include "ember/kl/serialize.h"
#include "ember/kl/trace_op.h"
#include "ember/ops/conv.h"

namespace ember::fusion {
namespace {

std::atomic<bool> g_wait{[] {
  const char* e = std::getenv("EMBER_FUSION_WAIT");
  return e && std::strcmp(e, "1") == 0;
}()};
std::atomic<bool> g_enabled{true};
std::atomic<int> g_max_ops{GroupLimits{}.ops}, g_max_inputs{GroupLimits{}.inputs},
    g_max_outputs{GroupLimits{}.outputs};

int debug_level() {
  static const int level = [] {
    const char* e = std::getenv("EMBER_FUSION_DEBUG");
    return e ? std::atoi(e) : 0;
  }();
  return level;
}

// Gives a pending storage its memory: the backend's block moves into the storage object that
// every view of it already shares.
void fill(Storage& s, BackendImpl* b) {
  if (s.data) return;
  std::shared_ptr<Storage> block = b->allocate(s.nbytes, s.place);
  s.data = block->data;
  s.free_fn = block->free_fn;
  s.free_ctx = block->free_ctx;
  block->free_fn = nullptr;
  block->data = nullptr;
}

// A contiguous tensor of `m` over storage `st`.
Tensor over(std::shared_ptr<Storage> st, const TensorMeta& m, Device d) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = m.shape;
  impl->strides = contiguous_strides(m.shape);
  impl->numel = numel_of(m.shape);
  impl->dtype = m.dtype;
  impl->device = d;
  impl->storage = std::move(st);
  return Tensor(std::move(impl));
}

// A value's tensor for this flush: its own storage when something outside the queue still holds
// it, else a temporary (channels-last when `last`: mark_channels_last).
Tensor value_tensor(const Value& v, const Node& n, BackendImpl* b, bool last = false) {
  const TensorMeta& m = n.meta.m[v.out];
  if (auto st = v.storage.lock()) {
    fill(*st, b);
    return over(std::move(st), m, n.device);
  }
  if (last) return ops::empty_channels_last(m.shape, m.dtype, n.device.without_layers());
  return detail::empty_tensor(m.shape, m.dtype, n.device.without_layers());
}

struct Step {
  int32_t node = -1;   // an eager node (with `epi`: a library call and its epilogue), or
  int32_t group = -1;  // a pointwise group, or
  int32_t row = -1;    // a row group
  int32_t epi = -1;    // the activation node a library call `node` applies as its epilogue
  int32_t res = -1;    // an add of the call's value and another (a convolution's residual),
                       // applied before `epi`
  int32_t multi = -1;  // a multi-tensor group (pointwise groups sharing one body)
};

struct Plan {
  std::vector<Step> steps;
  std::vector<std::unique_ptr<PointwiseGroup>> groups;
  std::vector<std::unique_ptr<RowGroup>> rows;
  std::vector<std::unique_ptr<MultiGroup>> multis;
  std::vector<char> stored;  // per value: written to memory (by its node, step or kernel)
  std::vector<char> live;    // per step: something outside the queue sees what it does
  std::vector<char> last;    // per value: laid out channels-last (mark_channels_last)
  // The nodes of a step, in program order.
  std::vector<int32_t> nodes_of(const Step& st) const {
    if (st.group >= 0) return groups[size_t(st.group)]->chain.nodes;
    if (st.row >= 0) {
      const RowGroup& r = *rows[size_t(st.row)];
      std::vector<int32_t> n = r.chain.nodes;
      n.push_back(r.tail);
      n.insert(n.end(), r.epilogue.begin(), r.epilogue.end());
      if (r.sibling >= 0) n.push_back(r.sibling);
      return n;
    }
    if (st.multi >= 0) {
      std::vector<int32_t> n;
      for (const PointwiseGroup* g : multis[size_t(st.multi)]->members)
        n.insert(n.end(), g->chain.nodes.begin(), g->chain.nodes.end());
      return n;
    }
    std::vector<int32_t> n = {st.node};
    if (st.res >= 0) n.push_back(st.res);
    if (st.epi >= 0) n.push_back(st.epi);
    return n;
  }
  // The values a kernel step writes.
  std::vector<int32_t> stores_of(const Step& st) const {
    if (st.group >= 0) return groups[size_t(st.group)]->stores;
    if (st.row >= 0) return rows[size_t(st.row)]->stores;
    std::vector<int32_t> v;
    if (st.multi >= 0)
      for (const PointwiseGroup* g : multis[size_t(st.multi)]->members)
        v.insert(v.end(), g->stores.begin(), g->stores.end());
    return v;
  }
};

// --- the signature of a flush: everything planning looks at, so equal signatures share a plan
class Signature {
 public:
  void add(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void add_shape(const Shape& s) {
    add(s.size());
    for (int64_t d : s) add(uint64_t(d));
  }
  void reserve(size_t n) { bytes_.reserve(n); }
  const std::string& bytes() const { return bytes_; }
  std::string take() && { return std::move(bytes_); }

 private:
  std::string bytes_;
};

std::string signature(const std::vector<Node>& nodes, const std::vector<Value>& values) {
  Signature s;
  s.reserve(nodes.size() * 64);
  s.add(uint64_t(g_max_ops.load()) | uint64_t(g_max_inputs.load()) << 20 |
        uint64_t(g_max_outputs.load()) << 40);
  std::unordered_map<const TensorImpl*, uint64_t> ids;
  std::unordered_map<const Storage*, uint64_t> storages;
  for (const Node& n : nodes) {
    s.add(uint64_t(n.op) | uint64_t(n.attrs.mode) << 16 | uint64_t(n.meta.n) << 24 |
          uint64_t(n.meta.compute) << 32 | uint64_t(n.target.defined()) << 40 |
          uint64_t(kl::is_elementwise(n.op) ? kl::static_attrs(n.op, n.attrs) : 0) << 48);
    // Other ops' attributes (dims, flags) decide their kernels: all of them are the signature's,
    // but for a random draw's state, which its kernel takes as parameters (each step draws anew).
    if (random_node(n)) {
      Attrs a = n.attrs;
      a.seed = a.offset = 0;
      s.add(uint64_t(a.hash()));
    } else if (!kl::is_elementwise(n.op)) {
      s.add(uint64_t(n.attrs.hash()));
    }
    for (int k = 0; k < n.meta.n; ++k) {
      s.add(uint64_t(n.meta.m[k].dtype));
      s.add_shape(n.meta.m[k].shape);
    }
    for (const NodeInput& in : n.inputs) {
      s.add(uint64_t(in.defined) | uint64_t(in.dtype) << 8 | uint64_t(uint32_t(in.value)) << 32);
      if (in.value >= 0 || !in.defined) continue;
      const TensorImpl* t = in.tensor.impl();
      // try_emplace: a tensor met before (most inputs, in a loop) allocates no map node.
      auto [it, fresh] = ids.try_emplace(t, ids.size());
      s.add(it->second << 1 | uint64_t(t->is_constant));
      if (t->is_constant) continue;
      s.add_shape(t->shape);
      s.add_shape(t->strides);
      // Which tensors share memory decides what a kernel may read after it writes.
      auto [sit, sfresh] = storages.try_emplace(t->storage.get(), storages.size());
      s.add(sit->second);
      s.add(uint64_t(t->offset));
    }
    for (int32_t v : n.outputs) s.add(values[size_t(v)].storage.expired() ? 0 : 1);
  }
  return std::move(s).take();
}

// --- planning

// Whether a row tail takes the open pointwise group as its prologue: the group makes the tail's
// input 0, over the same shape. Values of the group that something else needs (a holder outside
// the queue, a later reader) go to `side`: a tail that broadcasts back over the row (softmax, the
// norms) writes them too, as extra full-shape outputs (a residual add before a norm); a
// reduction cannot, so then the group stays a kernel of its own.
bool absorbs(const std::vector<int32_t>& members, const Shape& shape, const Node& tail,
             int32_t tail_index, const std::vector<Node>& nodes, const std::vector<Value>& values,
             const std::vector<std::vector<int32_t>>& readers, std::vector<int32_t>& side) {
  side.clear();
  const NodeInput& x = tail.inputs[0];
  if (x.value < 0 || members.empty()) return false;
  for (int32_t ni : members)  // random draws need the elements' positions (see Chain)
    if (random_node(nodes[size_t(ni)])) return false;
  const Value& xv = values[size_t(x.value)];
  if (nodes[size_t(xv.node)].meta.m[xv.out].shape != shape) return false;
  bool made = false;
  for (int32_t ni : members)
    for (int32_t v : nodes[size_t(ni)].outputs) {
      made = made || v == x.value;
      bool needed = !values[size_t(v)].storage.expired();
      for (int32_t r : readers[size_t(v)])
        if (r != tail_index && std::find(members.begin(), members.end(), r) == members.end())
          needed = true;
      if (needed) side.push_back(v);
    }
  if (!made) return false;
  if (!side.empty() && !row_broadcasts_back(tail)) return false;
  for (size_t j = 1; j < tail.inputs.size(); ++j)  // weight and bias come from memory
    if (tail.inputs[j].value >= 0)
      for (int32_t ni : members)
        for (int32_t v : nodes[size_t(ni)].outputs)
          if (v == tail.inputs[j].value) return false;
  return true;
}

Shape input_shape(const Node& n, const std::vector<Node>& nodes, const std::vector<Value>& values) {
  const NodeInput& x = n.inputs[0];
  if (x.value < 0) return x.tensor.shape();
  const Value& v = values[size_t(x.value)];
  return nodes[size_t(v.node)].meta.m[v.out].shape;
}

std::string kernel_name(const kl::Kernel& k) {
  const kl::Hash128 h = kl::canonical_hash(k);
  char hex[40];
  std::snprintf(hex, sizeof hex, "k%016llx%016llx", (unsigned long long)h.hi,
                (unsigned long long)h.lo);
  return hex;
}

// Finds or compiles the kernels of a new plan: one source for those this process has not seen.
void compile(std::vector<Compiled*> todo, Executor& exec, Device place) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::pair<kl::KernelHandle, int>> known;
  const kl::Renderer* renderer = &exec.renderer(place);
  const std::string target = renderer->cache_id() + "/";
  std::vector<kl::Kernel> batch;
  std::vector<std::string> names;
  std::vector<Compiled*> waiting;
  {
    std::lock_guard lock(mu);
    for (Compiled* c : todo) {
      c->kernel.name = kernel_name(c->kernel);
      auto it = known.find(target + c->kernel.name);
      if (it != known.end()) {
        c->handle = it->second.first;
        c->fn = it->second.second;
        continue;
      }
      if (std::find(names.begin(), names.end(), c->kernel.name) == names.end()) {
        names.push_back(c->kernel.name);
        batch.push_back(c->kernel);
      }
      waiting.push_back(c);
    }
  }
  if (batch.empty()) return;
  for (const kl::Kernel& k : batch) notify_kernel(k);
  std::string source = renderer->render(batch);
  std::string key = "fusion-v1-" + renderer->cache_id();
  for (const std::string& nm : names) key += "-" + nm;
  kl::KernelHandle h = exec.cache(place).request(key, source, names);
  if (debug_level() >= 2) std::fprintf(stderr, "[fusion] source:\n%s\n", source.c_str());
  std::lock_guard lock(mu);
  for (size_t k = 0; k < names.size(); ++k) known[target + names[k]] = {h, int(k)};
  for (Compiled* c : waiting) {
    const auto& e = known[target + c->kernel.name];
    c->handle = e.first;
    c->fn = e.second;
  }
}

// Removes the steps marked in `absorbed` (they run within another step now).
void drop_steps(Plan& plan, const std::vector<char>& absorbed) {
  size_t w = 0;
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (absorbed[si]) continue;
    plan.steps[w] = plan.steps[si];
    plan.live[w++] = plan.live[si];
  }
  plan.steps.resize(w);
  plan.live.resize(w);
}

// The first live step after step `si` (or the step count).
size_t next_live(const Plan& plan, size_t si) {
  size_t j = si + 1;
  while (j < plan.steps.size() && !plan.live[j]) ++j;
  return j;
}

// A row group's sum or mean that only the pointwise group of the next live step reads: that
// group becomes the row kernel's epilogue (the reduced value broadcast back over the row), and
// leaves the step list. A pointwise group of the step before, which makes the tail's input
// and whose values only the tail and the epilogue read, becomes its prologue too.
void merge_epilogues(Plan& plan, std::vector<char>& built,
                     const std::vector<std::vector<int32_t>>& readers,
                     const std::vector<Node>& nodes, const std::vector<Value>& values,
                     const kl::Target& target) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::vector<char> absorbed(plan.steps.size(), 0);
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (!plan.live[si] || plan.steps[si].row < 0) continue;
    const size_t pj = next_live(plan, si);
    if (pj >= plan.steps.size() || plan.steps[pj].group < 0 ||
        !built[size_t(plan.steps[pj].group)])
      continue;
    RowGroup& r = *plan.rows[size_t(plan.steps[si].row)];
    const PointwiseGroup& p = *plan.groups[size_t(plan.steps[pj].group)];
    auto in_p = [&](int32_t n) {
      return std::find(p.chain.nodes.begin(), p.chain.nodes.end(), n) != p.chain.nodes.end();
    };
    const int32_t tv = nodes[size_t(r.tail)].outputs[0];
    if (!values[size_t(tv)].storage.expired() || readers[size_t(tv)].empty()) continue;
    bool only = true;
    for (int32_t rd : readers[size_t(tv)]) only = only && in_p(rd);
    if (!only) continue;
    // The prologue candidate: the live step before, a pointwise group making the tail's input.
    size_t bj = si;
    while (bj > 0 && !plan.live[bj - 1]) --bj;
    const PointwiseGroup* before = nullptr;
    const int32_t xv = nodes[size_t(r.tail)].inputs[0].value;
    if (bj > 0 && !absorbed[bj - 1] && r.chain.nodes.empty() && xv >= 0 &&
        plan.steps[bj - 1].group >= 0 && built[size_t(plan.steps[bj - 1].group)]) {
      const PointwiseGroup* q = plan.groups[size_t(plan.steps[bj - 1].group)].get();
      bool fits = q->chain.makes(nodes, xv);
      for (int32_t ni : q->chain.nodes)
        for (int32_t v : nodes[size_t(ni)].outputs) {
          fits = fits && values[size_t(v)].storage.expired();
          for (int32_t rd : readers[size_t(v)])
            fits = fits && (rd == r.tail || in_p(rd) ||
                            std::find(q->chain.nodes.begin(), q->chain.nodes.end(), rd) !=
                                q->chain.nodes.end());
        }
      if (fits) before = q;
    }
    if (before && build_row_epilogue(r, before, p, nodes, values, target)) {
      absorbed[bj - 1] = 1;
      built[size_t(plan.steps[bj - 1].group)] = 0;
    } else if (!build_row_epilogue(r, nullptr, p, nodes, values, target)) {
      continue;
    }
    absorbed[pj] = 1;
    built[size_t(plan.steps[pj].group)] = 0;
  }
  drop_steps(plan, absorbed);
}

// A row group's log_softmax that the nll_loss of the next live step reads: the loss joins the row
// kernel, which writes the log-probabilities too only when something else needs them (a holder
// outside the queue, as the tape of a training step is, or another reader).
void merge_losses(Plan& plan, const std::vector<std::vector<int32_t>>& readers,
                  const std::vector<Node>& nodes, const std::vector<Value>& values,
                  const kl::Target& target) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::vector<char> absorbed(plan.steps.size(), 0);
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (!plan.live[si] || plan.steps[si].row < 0) continue;
    const size_t pj = next_live(plan, si);
    if (pj >= plan.steps.size() || plan.steps[pj].node < 0 || plan.steps[pj].epi >= 0 ||
        plan.steps[pj].res >= 0 || plan.steps[pj].group >= 0 || plan.steps[pj].row >= 0 ||
        plan.steps[pj].multi >= 0)
      continue;
    RowGroup& r = *plan.rows[size_t(plan.steps[si].row)];
    const int32_t nll = plan.steps[pj].node;
    const int32_t tv = nodes[size_t(r.tail)].outputs[0];
    const std::vector<int32_t>& rd = readers[size_t(tv)];
    if (std::find(rd.begin(), rd.end(), nll) == rd.end()) continue;
    const bool keep = !values[size_t(tv)].storage.expired() || rd.size() > 1;
    if (!build_row_loss(r, nll, keep, nodes, values, target)) continue;
    absorbed[pj] = 1;
  }
  drop_steps(plan, absorbed);
}

// Consecutive live row groups reducing the same rows (a norm's affine gradients) become one
// kernel with two combiners.
void merge_siblings(Plan& plan, const std::vector<Node>& nodes, const std::vector<Value>& values,
                    const kl::Target& target) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::vector<char> absorbed(plan.steps.size(), 0);
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (!plan.live[si] || absorbed[si] || plan.steps[si].row < 0) continue;
    const size_t pj = next_live(plan, si);
    if (pj >= plan.steps.size() || plan.steps[pj].row < 0) continue;
    RowGroup& a = *plan.rows[size_t(plan.steps[si].row)];
    const RowGroup& b = *plan.rows[size_t(plan.steps[pj].row)];
    if (build_row_sibling(a, b, nodes, values, target)) absorbed[pj] = 1;
  }
  // An absorbed row group is compiled no more.
  std::vector<std::unique_ptr<RowGroup>> rows;
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (plan.steps[si].row < 0) continue;
    if (absorbed[si]) continue;
    rows.push_back(std::move(plan.rows[size_t(plan.steps[si].row)]));
    plan.steps[si].row = int32_t(rows.size() - 1);
  }
  plan.rows = std::move(rows);
  drop_steps(plan, absorbed);
}

// A softmax or log_softmax row group with nothing fused into it (no prologue, epilogue, loss,
// sibling or side values) runs as the op itself: the backend's kernel takes one exp an element
// (it keeps the exponentials it sums), where the row kernel's online combiner and its
// broadcast-back epilogue take two. On devices that want a kernel even for one op (cuda) it
// stays.
void lone_softmax_rows_run_eagerly(Plan& plan, const std::vector<Node>& nodes, bool single) {
  if (single) return;
  std::vector<std::unique_ptr<RowGroup>> rows;
  for (Step& st : plan.steps) {
    if (st.row < 0) continue;
    std::unique_ptr<RowGroup>& r = plan.rows[size_t(st.row)];
    const OpId op = nodes[size_t(r->tail)].op;
    if ((op == OpId::softmax || op == OpId::log_softmax) && r->chain.nodes.empty() &&
        r->epilogue.empty() && !r->loss && r->sibling < 0 && r->side.empty() && r->split <= 1) {
      st = Step{r->tail, -1, -1};
      continue;
    }
    rows.push_back(std::move(r));
    st.row = int32_t(rows.size() - 1);
  }
  plan.rows = std::move(rows);
}

// Runs of live pointwise groups (dead steps between them do not count) whose bodies are one
// multi-tensor kernel and which touch each other's memory nowhere become one step: the groups
// of an optimizer step, one per parameter, run as one kernel. The groups after the first of a
// run leave the step list (they run with it, earlier than their place, which independence
// allows).
void merge_multi(Plan& plan, const std::vector<char>& built, const std::vector<Node>& nodes,
                 const std::vector<Value>& values, const kl::Target& target) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::vector<char> absorbed(plan.steps.size(), 0);
  std::unique_ptr<MultiGroup> open;
  kl::Hash128 open_hash{};
  size_t open_step = 0;
  auto close = [&] {
    if (open && open->members.size() > 1) {
      plan.steps[open_step] = Step{};
      plan.steps[open_step].multi = int32_t(plan.multis.size());
      plan.multis.push_back(std::move(open));
    }
    open.reset();
  };
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    if (!plan.live[si]) continue;
    const Step& st = plan.steps[si];
    kl::MultiTensorKey key;
    kl::Kernel k;
    if (st.group < 0 || !built[size_t(st.group)] ||
        !multi_tensor_body(*plan.groups[size_t(st.group)], nodes, values, key, k, target)) {
      close();
      continue;
    }
    const PointwiseGroup* g = plan.groups[size_t(st.group)].get();
    const kl::Hash128 h = kl::canonical_hash(k);
    if (open && h == open_hash && multi_tensor_independent(*open, *g, nodes)) {
      open->members.push_back(g);
      absorbed[si] = 1;
      continue;
    }
    close();
    open = std::make_unique<MultiGroup>();
    open->members.push_back(g);
    open->key = std::move(key);
    open->code.kernel = std::move(k);
    open_hash = h;
    open_step = si;
  }
  close();
  drop_steps(plan, absorbed);
}

// The values that pass from one convolution to the next, laid out channels-last: oneDNN's
// direct kernels read and write that layout, so none of them is reordered on the way (into the
// NCHW layout and back, which cost MobileNetV2 half of its time at batch 1). A value qualifies
// when a convolution step makes it (its own value, or its epilogue's), nothing outside the queue
// holds it, and every reader is a convolution step that takes it as its input or as the
// residual summed into its output: those take any strides, and whatever else reads a value
// (a fused kernel, a view) expects it contiguous.
void mark_channels_last(Plan& plan, const std::vector<Node>& nodes,
                        const std::vector<Value>& values,
                        const std::vector<std::vector<int32_t>>& readers) {
  plan.last.assign(values.size(), 0);
  std::vector<int32_t> step_of_node(nodes.size(), -1);
  for (size_t si = 0; si < plan.steps.size(); ++si)
    for (int32_t ni : plan.nodes_of(plan.steps[si])) step_of_node[size_t(ni)] = int32_t(si);
  auto conv_step = [&](const Step& st) {
    return st.node >= 0 && st.group < 0 && st.row < 0 && st.multi < 0 &&
           channels_last_conv(nodes[size_t(st.node)]);
  };
  for (const Step& st : plan.steps) {
    if (!conv_step(st)) continue;
    const Node& made = nodes[size_t(st.epi >= 0 ? st.epi : st.res >= 0 ? st.res : st.node)];
    if (made.outputs.size() != 1 || made.meta.m[0].shape.size() != 4) continue;
    const int32_t v = made.outputs[0];
    if (!values[size_t(v)].storage.expired() || readers[size_t(v)].empty()) continue;
    bool ok = true;
    for (int32_t r : readers[size_t(v)]) {
      const int32_t rs = step_of_node[size_t(r)];
      if (rs < 0 || !conv_step(plan.steps[size_t(rs)])) {
        ok = false;
        break;
      }
      const Step& s2 = plan.steps[size_t(rs)];
      const Node& rn = nodes[size_t(r)];
      bool as_input = s2.node == r && rn.inputs[0].value == v;
      for (size_t k = 1; k < rn.inputs.size(); ++k) as_input = as_input && rn.inputs[k].value != v;
      ok = ok && (as_input || s2.res == r);  // the add's other operand is the convolution's own
    }
    plan.last[size_t(v)] = ok;
  }
}

std::unique_ptr<Plan> make_plan(const std::vector<Node>& nodes, const std::vector<Value>& values,
                                Executor& exec, Device place) {
  auto plan = std::make_unique<Plan>();
  const kl::Target& target = exec.target(place);
  const bool single = exec.single_op_kernels();
  const size_t nv = values.size();
  const bool on = g_enabled.load(std::memory_order_relaxed);
  std::vector<std::vector<int32_t>> readers(nv);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const NodeInput& in : nodes[i].inputs)
      if (in.value >= 0) readers[size_t(in.value)].push_back(int32_t(i));
  std::vector<int32_t> step_of_value(nv, -1);
  std::vector<std::vector<int32_t>> members;  // per pointwise group: its nodes
  std::vector<Shape> shapes;
  std::vector<std::vector<Tensor>> reads;     // per group: the memory its nodes read
  std::vector<std::vector<int32_t>> copies;   // per group: its in-place copies
  std::vector<std::vector<Chain::Forward>> forwards;
  std::vector<std::vector<int32_t>> outside;  // per group: values of other steps it reads
  std::vector<int> writes;                    // per group: values held outside, and copies
  const int max_ops = g_max_ops.load(), max_inputs = g_max_inputs.load(),
            max_outputs = g_max_outputs.load();
  int32_t open = -1;
  auto close = [&] {
    if (open < 0) return;
    if (members[size_t(open)].size() == 1 && !single) {  // one op: its own kernel is as good
      plan->steps.back() = Step{members[size_t(open)][0], -1, -1};
      members[size_t(open)].clear();
    }
    open = -1;
  };
  auto mark = [&](const Node& n) {
    for (int32_t v : n.outputs) step_of_value[size_t(v)] = int32_t(plan->steps.size() - 1);
  };
  auto geometry = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.strides() == b.strides() && a.offset() == b.offset() &&
           a.dtype() == b.dtype();
  };
  auto same_storage = [](const Tensor& a, const Tensor& b) {
    return a.impl()->storage == b.impl()->storage;
  };
  // Whether pointwise node i can join the open group: each of its reads of memory the group
  // copies into takes the copied value (same geometry and dtype), or it cannot.
  std::unordered_map<const Storage*, int32_t> value_of_storage;
  for (size_t v = 0; v < nv; ++v) value_of_storage[values[v].raw] = int32_t(v);
  auto joinable = [&](size_t i, std::vector<Chain::Forward>& fwd) {
    const Node& n = nodes[i];
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const NodeInput& in = n.inputs[j];
      if (in.value >= 0 || !in.tensor.defined() || in.tensor.impl()->is_constant) continue;
      // A view of a value the group makes is memory the kernel writes while it would read it.
      auto vs = value_of_storage.find(in.tensor.impl()->storage.get());
      if (vs != value_of_storage.end() &&
          step_of_value[size_t(vs->second)] == int32_t(plan->steps.size() - 1))
        return false;
      const std::vector<int32_t>& cs = copies[size_t(open)];
      for (size_t k = cs.size(); k-- > 0;) {
        const Node& c = nodes[size_t(cs[k])];
        if (!same_storage(c.target, in.tensor)) continue;
        const Value& src = values[size_t(c.inputs[1].value)];
        if (!geometry(c.target, in.tensor) ||
            nodes[size_t(src.node)].meta.m[src.out].dtype != c.target.dtype())
          return false;
        fwd.push_back({int32_t(i), int32_t(j), c.inputs[1].value});
        break;
      }
    }
    return true;
  };
  // Whether in-place copy i can be a store of the open group: it copies one of the group's
  // values, of the group's shape, into memory the group reads (if at all) element by element.
  auto copy_joins = [&](size_t i) {
    const Node& c = nodes[i];
    if (open < 0 || c.op != OpId::copy || c.inputs.size() != 2 || c.inputs[1].value < 0)
      return false;
    if (step_of_value[size_t(c.inputs[1].value)] != int32_t(plan->steps.size() - 1)) return false;
    const Value& src = values[size_t(c.inputs[1].value)];
    const Shape& shape = shapes[size_t(open)];
    if (nodes[size_t(src.node)].meta.m[src.out].shape != shape || c.target.shape() != shape)
      return false;
    for (const Tensor& r : reads[size_t(open)])
      if (same_storage(r, c.target) && !geometry(r, c.target)) return false;
    for (int32_t k : copies[size_t(open)])
      if (same_storage(nodes[size_t(k)].target, c.target) &&
          !geometry(nodes[size_t(k)].target, c.target))
        return false;
    return true;
  };
  // Whether node i keeps the open group under the limits on its size and operands.
  auto fits = [&](size_t i) {
    const Node& n = nodes[i];
    if (int(members[size_t(open)].size()) >= max_ops) return false;
    int in = int(reads[size_t(open)].size() + outside[size_t(open)].size());
    for (const NodeInput& x : n.inputs) {
      if (x.value >= 0) {
        const std::vector<int32_t>& o = outside[size_t(open)];
        in += step_of_value[size_t(x.value)] != int32_t(plan->steps.size() - 1) &&
              std::find(o.begin(), o.end(), x.value) == o.end();
      } else if (x.tensor.defined() && !x.tensor.impl()->is_constant) {
        in += std::none_of(reads[size_t(open)].begin(), reads[size_t(open)].end(),
                           [&](const Tensor& r) { return r.impl() == x.tensor.impl(); });
      }
    }
    int out = writes[size_t(open)];
    for (int32_t v : n.outputs) out += !values[size_t(v)].storage.expired();
    return in <= max_inputs && out <= max_outputs;
  };
  // Whether row tail t should run before the open group: the group copies into nothing, t
  // writes into no tensor and reads no value the group makes (nor memory of one), and a
  // pointwise op after it reads both its value and one of the group's (so that op can join the
  // group, and the group become the row's epilogue; otherwise the order stays as queued).
  auto independent_of_open = [&](const Node& t) {
    if (open < 0 || !copies[size_t(open)].empty() || t.target.defined()) return false;
    const int32_t gs = int32_t(plan->steps.size() - 1);
    bool meets = false;
    for (int32_t v : t.outputs)
      for (int32_t rd : readers[size_t(v)]) {
        const Node& m = nodes[size_t(rd)];
        if (!pointwise_node(m)) continue;
        for (const NodeInput& x : m.inputs)
          meets = meets || (x.value >= 0 && step_of_value[size_t(x.value)] == gs);
      }
    if (!meets) return false;
    for (const NodeInput& x : t.inputs) {
      if (x.value >= 0) {
        if (step_of_value[size_t(x.value)] == gs) return false;
      } else if (x.tensor.defined() && !x.tensor.impl()->is_constant) {
        auto vs = value_of_storage.find(x.tensor.impl()->storage.get());
        if (vs != value_of_storage.end() && step_of_value[size_t(vs->second)] == gs) return false;
      }
    }
    return true;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (on && n.target.defined() && copy_joins(i) &&
        int(members[size_t(open)].size()) < max_ops && writes[size_t(open)] < max_outputs) {
      ++writes[size_t(open)];
      members[size_t(open)].push_back(int32_t(i));
      copies[size_t(open)].push_back(int32_t(i));
      continue;
    }
    if (on && open < 0 && !plan->steps.empty() && !n.inputs.empty() && n.inputs[0].value >= 0) {
      // An activation right after the library call that makes its only tensor input (clamp's
      // bounds are constants), which nothing else reads: the call's epilogue.
      Step& prev = plan->steps.back();
      const int32_t v = n.inputs[0].value;
      const int32_t tail = prev.res >= 0 ? prev.res : prev.node;
      if (prev.node >= 0 && prev.group < 0 && prev.row < 0 && prev.epi < 0 &&
          values[size_t(v)].node == tail && values[size_t(v)].storage.expired() &&
          readers[size_t(v)].size() == 1 && epilogue_pair(nodes[size_t(prev.node)], n)) {
        prev.epi = int32_t(i);
        mark(n);
        continue;
      }
      // An add of a convolution's value (read by nothing else) and a value made before it or
      // a tensor: the convolution's residual, summed into its output by oneDNN.
      if (prev.node >= 0 && prev.group < 0 && prev.row < 0 && prev.epi < 0 && prev.res < 0 &&
          n.inputs.size() == 2) {
        const NodeInput* mine = nullptr;
        int from_prev = 0;
        for (const NodeInput& in : n.inputs)
          if (in.value >= 0 && values[size_t(in.value)].node == prev.node) mine = &in, ++from_prev;
        if (from_prev == 1 && residual_pair(nodes[size_t(prev.node)], n) &&
            values[size_t(mine->value)].storage.expired() &&
            readers[size_t(mine->value)].size() == 1) {
          prev.res = int32_t(i);
          mark(n);
          continue;
        }
      }
    }
    if (on && pointwise_node(n)) {
      const Shape& shape = n.meta.m[0].shape;
      std::vector<Chain::Forward> fwd;
      bool join = open >= 0 && shapes[size_t(open)] == shape && fits(i) && joinable(i, fwd);
      if (!join) {
        close();
        open = int32_t(members.size());
        members.emplace_back();
        shapes.push_back(shape);
        reads.emplace_back();
        copies.emplace_back();
        forwards.emplace_back();
        outside.emplace_back();
        writes.push_back(0);
        plan->steps.push_back(Step{-1, open, -1});
        fwd.clear();
      }
      members[size_t(open)].push_back(int32_t(i));
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const NodeInput& in = n.inputs[j];
        const bool forwarded = std::any_of(fwd.begin(), fwd.end(), [&](const Chain::Forward& f) {
          return f.input == int32_t(j);
        });
        std::vector<Tensor>& rd = reads[size_t(open)];
        if (in.value < 0 && in.tensor.defined() && !in.tensor.impl()->is_constant && !forwarded &&
            std::none_of(rd.begin(), rd.end(),
                         [&](const Tensor& r) { return r.impl() == in.tensor.impl(); }))
          rd.push_back(in.tensor);
        std::vector<int32_t>& o = outside[size_t(open)];
        if (in.value >= 0 && step_of_value[size_t(in.value)] != int32_t(plan->steps.size() - 1) &&
            std::find(o.begin(), o.end(), in.value) == o.end())
          o.push_back(in.value);
      }
      for (int32_t v : n.outputs) writes[size_t(open)] += !values[size_t(v)].storage.expired();
      forwards[size_t(open)].insert(forwards[size_t(open)].end(), fwd.begin(), fwd.end());
      mark(n);
      continue;
    }
    if (on && norm_backward_node(n)) {
      auto r = std::make_unique<RowGroup>();
      r->tail = int32_t(i);
      r->shape = input_shape(n, nodes, values);
      const int32_t xhat = n.outputs[1];
      const bool want = !values[size_t(xhat)].storage.expired() || !readers[size_t(xhat)].empty();
      if (build_row_norm_backward(*r, want, nodes, values, target)) {
        close();
        plan->steps.push_back(Step{-1, -1, int32_t(plan->rows.size())});
        plan->rows.push_back(std::move(r));
        mark(n);
        continue;
      }
    }
    if (on && row_tail(n)) {
      auto r = std::make_unique<RowGroup>();
      r->tail = int32_t(i);
      r->shape = input_shape(n, nodes, values);
      const bool take = open >= 0 && copies[size_t(open)].empty() &&
                        absorbs(members[size_t(open)], shapes[size_t(open)], n, int32_t(i),
                                nodes, values, readers, r->side);
      if (take) r->chain.nodes = members[size_t(open)];
      else r->side.clear();
      if (build_row(*r, nodes, values, target)) {
        if (take) {  // the open group becomes this row group's prologue
          members[size_t(open)].clear();
          open = -1;
          plan->steps.back() = Step{-1, -1, int32_t(plan->rows.size())};
        } else if (independent_of_open(n)) {
          // The open group feeds nothing in this row, and the row reads and writes nothing the
          // group makes: the row runs first and the group stays open after it, so the pointwise
          // ops after the row join it (and the whole group can become the row's epilogue),
          // whatever order the ops were queued in.
          const int32_t gs = int32_t(plan->steps.size() - 1);
          plan->steps.insert(plan->steps.end() - 1, Step{-1, -1, int32_t(plan->rows.size())});
          plan->rows.push_back(std::move(r));
          for (int32_t ni : plan->nodes_of(plan->steps[size_t(gs)]))
            for (int32_t v : nodes[size_t(ni)].outputs) step_of_value[size_t(v)] = gs;
          for (int32_t ni : members[size_t(open)])
            for (int32_t v : nodes[size_t(ni)].outputs) step_of_value[size_t(v)] = gs + 1;
          continue;
        } else {
          close();
          plan->steps.push_back(Step{-1, -1, int32_t(plan->rows.size())});
        }
        plan->rows.push_back(std::move(r));
        for (int32_t ni : plan->nodes_of(plan->steps.back())) mark(nodes[size_t(ni)]);
        continue;
      }
    }
    close();
    plan->steps.push_back(Step{int32_t(i), -1, -1});
    mark(n);
  }
  close();
  // Pointwise groups in the order of their steps.
  std::vector<std::unique_ptr<PointwiseGroup>> groups;
  for (Step& st : plan->steps) {
    if (st.group < 0) continue;
    auto g = std::make_unique<PointwiseGroup>();
    g->chain.nodes = members[size_t(st.group)];
    g->chain.forwards = forwards[size_t(st.group)];
    g->shape = shapes[size_t(st.group)];
    // The last copy into each tensor is the one the kernel stores.
    const std::vector<int32_t>& cs = copies[size_t(st.group)];
    for (size_t k = 0; k < cs.size(); ++k) {
      bool later = false;
      for (size_t q = k + 1; q < cs.size(); ++q)
        later = later || same_storage(nodes[size_t(cs[q])].target, nodes[size_t(cs[k])].target);
      if (!later) g->targets.push_back(cs[k]);
    }
    st.group = int32_t(groups.size());
    groups.push_back(std::move(g));
  }
  plan->groups = std::move(groups);
  // A value lives in memory when something outside the queue holds it, an eager step or a row
  // group makes it, or a step other than its own reads it.
  plan->stored.assign(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const int32_t st = step_of_value[v];
    plan->stored[v] = !values[v].storage.expired() || plan->steps[size_t(st)].group < 0;
  }
  for (const Step& st : plan->steps) {
    if (st.epi >= 0 || st.res >= 0)  // the product goes straight into its epilogue
      for (int32_t v : nodes[size_t(st.node)].outputs) plan->stored[size_t(v)] = 0;
    if (st.epi >= 0 && st.res >= 0)
      for (int32_t v : nodes[size_t(st.res)].outputs) plan->stored[size_t(v)] = 0;
  }
  for (const Step& st : plan->steps)
    if (st.row >= 0) {  // a prologue's values stay in registers, but for those it writes
      const RowGroup& r = *plan->rows[size_t(st.row)];
      for (int32_t ni : r.chain.nodes)
        for (int32_t v : nodes[size_t(ni)].outputs)
          plan->stored[size_t(v)] = std::find(r.side.begin(), r.side.end(), v) != r.side.end();
    }
  for (size_t si = 0; si < plan->steps.size(); ++si)
    for (int32_t ni : plan->nodes_of(plan->steps[si]))
      for (const NodeInput& in : nodes[size_t(ni)].inputs)
        if (in.value >= 0 && step_of_value[size_t(in.value)] != int32_t(si))
          plan->stored[size_t(in.value)] = 1;
  // Dead code: a step none of whose values is held outside the queue or read by a live step,
  // and which writes into no existing tensor, does not run (queued ops have no other effects).
  plan->live.assign(plan->steps.size(), 0);
  {
    std::vector<char> needed(nv, 0);
    for (size_t si = plan->steps.size(); si-- > 0;) {
      const Step& st = plan->steps[si];
      // An eager step may raise an error of its data (integer division by zero): it runs.
      bool live = st.group < 0 && st.row < 0 && !library_op(nodes[size_t(st.node)].op) &&
                  !pointwise_node(nodes[size_t(st.node)]) && !row_tail(nodes[size_t(st.node)]);
      for (int32_t ni : plan->nodes_of(st)) {
        const Node& n = nodes[size_t(ni)];
        live = live || n.target.defined();
        for (int32_t v : n.outputs) live = live || needed[size_t(v)] || !values[size_t(v)].storage.expired();
      }
      plan->live[si] = live;
      if (!live) continue;
      for (int32_t ni : plan->nodes_of(plan->steps[si]))
        for (const NodeInput& in : nodes[size_t(ni)].inputs)
          if (in.value >= 0) needed[size_t(in.value)] = 1;
    }
  }
  // Kernels.
  std::vector<char> built(plan->groups.size(), 0);
  for (size_t gi = 0; gi < plan->groups.size(); ++gi) {
    PointwiseGroup& g = *plan->groups[gi];
    for (int32_t ni : g.chain.nodes)
      for (int32_t v : nodes[size_t(ni)].outputs)
        if (plan->stored[size_t(v)]) g.stores.push_back(v);
    if (g.stores.empty() && g.targets.empty()) continue;  // nothing reads what it makes
    build_pointwise(g, nodes, values, target);
    built[gi] = 1;
  }
  merge_epilogues(*plan, built, readers, nodes, values, target);
  merge_losses(*plan, readers, nodes, values, target);
  merge_siblings(*plan, nodes, values, target);
  lone_softmax_rows_run_eagerly(*plan, nodes, single);
  merge_multi(*plan, built, nodes, values, target);
  mark_channels_last(*plan, nodes, values, readers);
  std::vector<Compiled*> todo;
  for (const Step& st : plan->steps)
    if (st.group >= 0 && built[size_t(st.group)]) todo.push_back(&plan->groups[size_t(st.group)]->code);
  for (auto& r : plan->rows) {
    todo.push_back(&r->code);
    if (r->loss) todo.push_back(&r->finish);
  }
  for (auto& m : plan->multis) todo.push_back(&m->code);
  compile(std::move(todo), exec, place);
  if (debug_level() >= 1) {
    for (const Step& st : plan->steps) {
      if (st.node >= 0 && debug_level() >= 3) {  // what runs op by op, and why it may not fuse
        const Node& n = nodes[size_t(st.node)];
        std::string ins;
        for (const NodeInput& in : n.inputs)
          ins += !in.defined ? " -" : in.value >= 0 ? " value" : in.tensor.impl()->is_constant ? " const"
                 : detail::is_pending(in.tensor) ? (in.tensor.is_contiguous() ? " pending" : " pending-strided")
                 : in.tensor.is_contiguous() ? " memory" : " memory-strided";
        std::fprintf(stderr, "[fusion] op %s over %s%s (inputs:%s)\n", op_name(n.op),
                     shape_str(n.meta.m[0].shape).c_str(),
                     st.epi >= 0 ? (std::string(" + ") + op_name(nodes[size_t(st.epi)].op)).c_str() : "",
                     ins.c_str());
      }
      if (st.group < 0) continue;
      const auto& g = plan->groups[size_t(st.group)];
      std::string ops;
      for (int32_t ni : g->chain.nodes) ops += std::string(" ") + op_name(nodes[size_t(ni)].op);
      std::fprintf(stderr, "[fusion] pointwise %s over %s:%s (%zu stored)\n",
                   g->code.kernel.name.c_str(), shape_str(g->shape).c_str(), ops.c_str(),
                   g->stores.size());
    }
    for (const auto& m : plan->multis)
      std::fprintf(stderr, "[fusion] multi-tensor %s: %zu groups of%s\n", m->code.kernel.name.c_str(),
                   m->members.size(), [&] {
                     std::string ops;
                     for (int32_t ni : m->members[0]->chain.nodes)
                       ops += std::string(" ") + op_name(nodes[size_t(ni)].op);
                     return ops;
                   }().c_str());
    for (const auto& r : plan->rows) {
      std::string ops;
      for (int32_t ni : r->chain.nodes) ops += std::string(" ") + op_name(nodes[size_t(ni)].op);
      std::string epi;
      for (int32_t ni : r->epilogue) epi += std::string(" ") + op_name(nodes[size_t(ni)].op);
      if (r->sibling >= 0) epi += std::string(" +") + op_name(nodes[size_t(r->sibling)].op);
      std::fprintf(stderr, "[fusion] row %s over %s:%s -> %s%s%s%s\n", r->code.kernel.name.c_str(),
                   shape_str(r->shape).c_str(), ops.c_str(), op_name(nodes[size_t(r->tail)].op),
                   epi.empty() ? "" : " ->", epi.c_str(),
                   r->split > 1 ? (" (split " + std::to_string(r->split) + ")").c_str() : "");
    }
  }
  return plan;
}

std::shared_ptr<Plan> plan_for(const std::vector<Node>& nodes, const std::vector<Value>& values,
                               Executor& exec, Device place) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<Plan>> cache;
  // Plans are per target: the device kind and the target's name.
  std::string sig = signature(nodes, values) + exec.target(place).name + char(place.backend());
  {
    std::lock_guard lock(mu);
    auto it = cache.find(sig);
    if (it != cache.end()) {
      stats_plan(true);
      return it->second;
    }
  }
  std::shared_ptr<Plan> p = make_plan(nodes, values, exec, place);
  stats_plan(false);
  std::lock_guard lock(mu);
  if (cache.size() >= 1024) cache.clear();  // a program that never repeats itself
  cache.emplace(std::move(sig), p);
  return p;
}

// Runs node n on its own; `last` (or null): the values laid out channels-last.
void run_eager(Node& n, const std::vector<Value>& values, std::vector<Tensor>& vals, BackendImpl* b,
               const std::vector<char>* last = nullptr) {
  TensorList ins;
  ins.reserve(n.inputs.size());
  for (const NodeInput& in : n.inputs)
    ins.push_back(in.value >= 0 ? vals[size_t(in.value)] : in.tensor);
  TensorList placed;
  for (int32_t v : n.outputs)
    placed.push_back(value_tensor(values[size_t(v)], n, b, last && (*last)[size_t(v)]));
  OpCall call{n.op, n.attrs, ins, n.meta, n.device, nullptr, placed};
  TensorList got = run_on_backend(call);
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    // A kernel that made its own output instead of writing the placed one: its result is moved
    // into the placed storage (which the tensors the program holds already point at).
    if (k < got.size() && got[k].defined() && got[k].impl()->storage != placed[k].impl()->storage)
      detail::retag(placed[k], n.device.without_layers()).copy_(got[k]);
    vals[size_t(n.outputs[k])] = placed[k];
  }
}

}  // namespace

void set_wait_for_kernels(bool on) { g_wait.store(on); }
void set_enabled(bool on) { g_enabled.store(on); }
void set_group_limits(const GroupLimits& l) {
  g_max_ops.store(std::max(1, l.ops));
  g_max_inputs.store(std::max(1, l.inputs));
  g_max_outputs.store(std::max(1, l.outputs));
}
GroupLimits group_limits() { return {g_max_ops.load(), g_max_inputs.load(), g_max_outputs.load()}; }

void run_plan(Device place, std::vector<Node>& nodes, const std::vector<Value>& values,
              size_t* done) {
  stats_flush();
  BackendImpl* b = backend_for(place.backend());
  if (g_enabled.load(std::memory_order_relaxed)) simplify(nodes, values);
  Executor& exec = executor_for(place);
  std::shared_ptr<Plan> plan = plan_for(nodes, values, exec, place);
  std::vector<Tensor> vals(values.size());
  // The step that reads a value last: the value goes when it is done.
  std::vector<int32_t> last(values.size(), -1);
  for (size_t si = 0; si < plan->steps.size(); ++si)
    for (int32_t ni : plan->nodes_of(plan->steps[si]))
      for (const NodeInput& in : nodes[size_t(ni)].inputs)
        if (in.value >= 0) last[size_t(in.value)] = int32_t(si);
  const bool wait = g_wait.load() || exec.waits_for_kernels();
  size_t finished = 0;
  for (size_t si = 0; si < plan->steps.size(); ++si) {
    const Step& st = plan->steps[si];
    const std::vector<int32_t> ran = plan->nodes_of(st);
    const Compiled* code = st.group >= 0   ? &plan->groups[size_t(st.group)]->code
                           : st.row >= 0   ? &plan->rows[size_t(st.row)]->code
                           : st.multi >= 0 ? &plan->multis[size_t(st.multi)]->code
                                           : nullptr;
    if (!plan->live[si] || (st.group >= 0 && plan->groups[size_t(st.group)]->stores.empty() &&
                            plan->groups[size_t(st.group)]->targets.empty())) {
      // dead: nothing it makes is stored or read
    } else if ((st.epi >= 0 || st.res >= 0) && [&] {
                 const Node* act = st.epi >= 0 ? &nodes[size_t(st.epi)] : nullptr;
                 const Node* res = st.res >= 0 ? &nodes[size_t(st.res)] : nullptr;
                 const Node& last = act ? *act : *res;
                 const int32_t v = last.outputs[0];
                 Tensor out = value_tensor(values[size_t(v)], last, b, plan->last[size_t(v)]);
                 if (!run_with_epilogue(nodes[size_t(st.node)], act, res, vals, out)) return false;
                 vals[size_t(v)] = out;
                 return true;
               }()) {
      stats_kernel(1 + (st.epi >= 0) + (st.res >= 0));
    } else if (code &&
               (st.row >= 0 ? plan->rows[size_t(st.row)]->ready(wait) : code->ready(wait))) {
      for (int32_t v : plan->stores_of(st))
        vals[size_t(v)] = value_tensor(values[size_t(v)], nodes[size_t(values[size_t(v)].node)], b);
      if (st.multi >= 0) {
        const int launches = launch_multi(*plan->multis[size_t(st.multi)], nodes, vals, exec, place);
        for (int k = 0; k < launches; ++k) stats_kernel(k == 0 ? int64_t(ran.size()) : 0);
      } else if (st.group >= 0) {
        launch_pointwise(*plan->groups[size_t(st.group)], nodes, vals, exec, place);
        stats_kernel(int64_t(ran.size()));
      } else {
        const int launches = launch_row(*plan->rows[size_t(st.row)], nodes, vals, exec, place);
        for (int k = 0; k < launches; ++k) stats_kernel(k == 0 ? int64_t(ran.size()) : 0);
      }
    } else {  // eager, or still compiling (or no compiler): the nodes run one by one meanwhile
      // A convolution alone may make a channels-last value; a step's nodes run one by one
      // (an epilogue oneDNN did not take) make contiguous ones, which any reader takes.
      for (int32_t ni : ran)
        run_eager(nodes[size_t(ni)], values, vals, b, ran.size() == 1 ? &plan->last : nullptr);
      stats_eager(int64_t(ran.size()));
    }
    for (int32_t ni : ran) {
      for (const NodeInput& in : nodes[size_t(ni)].inputs)
        if (in.value >= 0 && last[size_t(in.value)] == int32_t(si)) vals[size_t(in.value)] = Tensor();
      finished = std::max(finished, size_t(ni) + 1);
    }
    *done = finished;  // nodes before every unfinished one ran (steps keep program order)
  }
  for (Node& n : nodes) n.inputs.clear();
  *done = nodes.size();
}

}  // namespace ember::fusion
