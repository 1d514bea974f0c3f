#include "ember/fusion/simplify.h"

#include <unordered_map>
#include <unordered_set>

#include "ember/tensor_impl.h"

namespace ember::fusion {
namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull + (h >> 29); }

// Equal nodes hash equal; same_node() decides. The attributes that tell calls of one op apart
// most often are enough here (hashing all of them cost more than the rest of the node).
uint64_t node_hash(const Node& n) {
  uint64_t h = mix(uint64_t(n.op), uint64_t(n.attrs.mode) | uint64_t(n.attrs.ints.size()) << 8);
  h = mix(h, uint64_t(n.attrs.i[0]));
  for (int64_t d : n.attrs.ints) h = mix(h, uint64_t(d));
  for (int k = 0; k < n.meta.n; ++k) {
    h = mix(h, uint64_t(n.meta.m[k].dtype));
    for (int64_t d : n.meta.m[k].shape) h = mix(h, uint64_t(d));
  }
  for (const NodeInput& in : n.inputs) {
    if (!in.defined) h = mix(h, 1);
    else if (in.value >= 0) h = mix(h, uint64_t(in.value) << 2 | 2);
    else if (in.tensor.impl()->is_constant) h = mix(h, in.tensor.impl()->constant.bits());
    else h = mix(h, uint64_t(reinterpret_cast<uintptr_t>(in.tensor.impl())));
  }
  return h;
}

bool same_input(const NodeInput& a, const NodeInput& b) {
  if (a.defined != b.defined || a.dtype != b.dtype || a.value != b.value) return false;
  if (!a.defined || a.value >= 0) return true;
  const TensorImpl* x = a.tensor.impl();
  const TensorImpl* y = b.tensor.impl();
  if (x == y) return true;
  return x->is_constant && y->is_constant && x->dtype == y->dtype && x->constant == y->constant;
}

bool same_node(const Node& a, const Node& b) {
  if (a.op != b.op || a.meta.n != b.meta.n || a.meta.compute != b.meta.compute ||
      a.inputs.size() != b.inputs.size() || !(a.device == b.device) || !(a.attrs == b.attrs))
    return false;
  for (int k = 0; k < a.meta.n; ++k)
    if (a.meta.m[k].dtype != b.meta.m[k].dtype || a.meta.m[k].shape != b.meta.m[k].shape)
      return false;
  for (size_t j = 0; j < a.inputs.size(); ++j)
    if (!same_input(a.inputs[j], b.inputs[j])) return false;
  return true;
}

}  // namespace

int simplify(std::vector<Node>& nodes, const std::vector<Value>& values) {
  // Memory written in place by the queue: a read of it may see another value at each node.
  std::unordered_set<const Storage*> written;
  for (const Node& n : nodes)
    if (n.target.defined()) written.insert(n.target.impl()->storage.get());
  std::vector<int32_t> same(values.size(), -1);  // value -> the earlier value it equals
  std::unordered_map<uint64_t, std::vector<int32_t>> seen;
  seen.reserve(nodes.size());
  int unread = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    bool reads_written = false;
    for (NodeInput& in : n.inputs) {
      if (in.value >= 0 && same[size_t(in.value)] >= 0) in.value = same[size_t(in.value)];
      if (in.value < 0 && in.defined && !in.tensor.impl()->is_constant &&
          written.count(in.tensor.impl()->storage.get()))
        reads_written = true;
    }
    if (n.target.defined() || reads_written || n.outputs.empty()) continue;
    bool held = false;  // then it writes its own storage anyway, but later nodes may repeat it
    for (int32_t v : n.outputs) held = held || !values[size_t(v)].storage.expired();
    std::vector<int32_t>& bucket = seen[node_hash(n)];
    bool repeated = false;
    if (!held)
      for (int32_t j : bucket) {
        if (!same_node(nodes[size_t(j)], n)) continue;
        for (size_t k = 0; k < n.outputs.size(); ++k)
          same[size_t(n.outputs[k])] = nodes[size_t(j)].outputs[k];
        repeated = true;
        ++unread;
        break;
      }
    if (!repeated) bucket.push_back(int32_t(i));
  }
  return unread;
}

}  // namespace ember::fusion
