#pragma once
// Helpers for the elementwise rule tests: calling a rule directly the way the engine will, and a
// bare reverse-mode tape over the rules (enough to differentiate a rule's own graph; the real
// engine is ember/autodiff's).
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember::test {

/// The engine's needs: defined floating inputs that are not wrapped Scalar operands.
inline bool engine_needs(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && !t.impl()->wrapped_number;
}

/// Runs `op` forward, then its rule with output cotangent `g` (ones when undefined). `needs`
/// defaults to engine_needs; `force_needs` asks for every floating input, wrapped or not.
inline TensorList call_rule(OpId op, const Attrs& a, const TensorList& in, Tensor g = {},
                            bool force_needs = false) {
  TensorList out = dispatch(op, a, std::span<const Tensor>(in));
  if (!g.defined()) g = ones_like(out[0]);
  TensorList gs{g};
  std::unique_ptr<bool[]> needs(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i)
    needs[i] = force_needs ? in[i].defined() && is_floating(in[i].dtype()) : engine_needs(in[i]);
  VjpCtx ctx{op, a, in, out, gs, std::span<const bool>(needs.get(), in.size())};
  return op_def(op).vjp(ctx);
}

/// Records every op run on its device (`device()`); backward() applies the VJP rules in reverse.
class Tape : public Layer {
 public:
  struct Node {
    OpId op;
    Attrs attrs;
    TensorList inputs, outputs;
  };
  const char* name() const override { return "test-tape"; }
  TensorList call(const OpCall& c, const Next& next) override {
    TensorList out = next(c);
    nodes_.push_back({c.op, c.attrs, TensorList(c.inputs.begin(), c.inputs.end()), out});
    return out;
  }

  /// One tape for the whole test binary: every distinct layer interns a new layer stack.
  static const std::shared_ptr<Tape>& get() {
    static auto tape = std::make_shared<Tape>();
    return tape;
  }
  static Device device() {
    static Device d = Device::flex().with_layer(get());
    return d;
  }
  void clear() { nodes_.clear(); }

  /// d<seed, roots>/d leaves over every op recorded so far (zeros for leaves off the graph).
  TensorList backward(const TensorList& roots, const TensorList& seeds, const TensorList& leaves) {
    std::map<const TensorImpl*, Tensor> cot;
    auto accumulate = [&](const Tensor& t, const Tensor& g) {
      auto [it, fresh] = cot.emplace(t.impl(), g);
      if (!fresh) it->second = add(it->second, g);
    };
    for (size_t i = 0; i < roots.size(); ++i)
      if (roots[i].defined()) accumulate(roots[i], seeds[i]);
    for (size_t k = nodes_.size(); k-- > 0;) {
      const Node node = nodes_[k];  // a copy: the rules append nodes while we walk
      const OpDef& def = op_def(node.op);
      if (!def.differentiable || def.category == OpCategory::Creation) continue;
      TensorList gs;
      bool any = false;
      for (const Tensor& o : node.outputs) {
        auto it = cot.find(o.impl());
        gs.push_back(it == cot.end() ? Tensor() : it->second);
        if (it != cot.end()) {
          any = true;
          cot.erase(it);  // an output aliasing an input (contiguous) gets its gradient back below
        }
      }
      if (!any) continue;
      if (!def.vjp) throw std::runtime_error(std::string("no VJP rule for ") + def.name);
      std::unique_ptr<bool[]> needs(new bool[node.inputs.size()]);
      for (size_t i = 0; i < node.inputs.size(); ++i) needs[i] = engine_needs(node.inputs[i]);
      VjpCtx ctx{node.op, node.attrs, node.inputs, node.outputs, gs,
                 std::span<const bool>(needs.get(), node.inputs.size())};
      TensorList gi = def.vjp(ctx);
      for (size_t i = 0; i < gi.size() && i < node.inputs.size(); ++i)
        if (needs[i] && gi[i].defined()) accumulate(node.inputs[i], gi[i]);
    }
    TensorList r;
    for (const Tensor& x : leaves) {
      auto it = cot.find(x.impl());
      r.push_back(it == cot.end() ? zeros_like(x) : it->second);
    }
    return r;
  }

 private:
  std::vector<Node> nodes_;
};

}  // namespace ember::test
