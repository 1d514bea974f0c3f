#include "ember/fusion/multi.h"

#include <algorithm>
#include <cstdint>


namespace ember::fusion {
namespace {

// Whether `strides` (elements, per dim of `shape`) walk `shape` in row-major order with no
// broadcast: a size-1 dim's stride does not matter.
bool contiguous_over(const std::vector<int64_t>& strides, const Shape& shape) {
  const Shape cs = contiguous_strides(shape);
  if (strides.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != cs[d]) return false;
  return true;
}

const Storage* storage_of(const Tensor& t) { return t.impl()->storage.get(); }

// The tensors a group reads from memory and the ones it writes in place.
void memory_of(const PointwiseGroup& g, const std::vector<Node>& nodes,
               std::vector<const Storage*>& reads, std::vector<const Storage*>& writes) {
  for (const MemOperand& m : g.ops.inputs)
    if (m.node >= 0) reads.push_back(storage_of(nodes[size_t(m.node)].inputs[size_t(m.input)].tensor));
  for (int32_t ni : g.targets) writes.push_back(storage_of(nodes[size_t(ni)].target));
}

bool meets(const std::vector<const Storage*>& a, const std::vector<const Storage*>& b) {
  for (const Storage* x : a)
    for (const Storage* y : b)
      if (x == y) return true;
  return false;
}

}  // namespace

bool multi_tensor_body(const PointwiseGroup& g, const std::vector<Node>& nodes,
                       const std::vector<Value>& values, kl::MultiTensorKey& key, kl::Kernel& k,
                       const kl::Target& target) {
  if ((g.targets.empty() && g.stores.empty()) || g.chain.positional(nodes)) return false;
  for (const std::vector<int64_t>& s : g.ops.strides)
    if (!contiguous_over(s, g.shape)) return false;
  std::vector<kl::MultiTensorSlot> slots;
  for (DType d : g.ops.in_dtypes) slots.push_back({d, kl::Access::Read});
  for (int32_t v : g.stores) {
    const Value& val = values[size_t(v)];
    slots.push_back({nodes[size_t(val.node)].meta.m[val.out].dtype, kl::Access::Write});
  }
  for (int32_t ni : g.targets) {
    const Tensor& dst = nodes[size_t(ni)].target;
    if (dst.shape() != g.shape || !contiguous_over(dst.strides().vec(), g.shape)) return false;
    slots.push_back({dst.dtype(), kl::Access::Write});
  }
  key = kl::multi_tensor_key(std::move(slots), g.ops.scalar_dtypes, DType::Bool,
                             target);
  k = kl::multi_tensor_kernel(
      "k", key, [&](std::span<const kl::Expr> loaded, std::span<const kl::Expr> sc) {
        const std::vector<kl::Expr> val = g.chain.trace(nodes, values.size(), loaded, sc);
        std::vector<kl::Expr> outs;
        for (int32_t v : g.stores) outs.push_back(val[size_t(v)]);
        for (int32_t ni : g.targets) {
          const Node& c = nodes[size_t(ni)];
          outs.push_back(val[size_t(c.inputs[1].value)]);  // the template casts to the slot
        }
        return outs;
      });
  return true;
}

bool multi_tensor_independent(const MultiGroup& m, const PointwiseGroup& g,
                              const std::vector<Node>& nodes) {
  std::vector<const Storage*> reads, writes;
  memory_of(g, nodes, reads, writes);
  for (const PointwiseGroup* o : m.members) {
    for (const MemOperand& op : g.ops.inputs)  // a value a member makes
      if (op.value >= 0 && o->chain.makes(nodes, op.value)) return false;
    std::vector<const Storage*> r, w;
    memory_of(*o, nodes, r, w);
    if (meets(writes, r) || meets(writes, w) || meets(reads, w)) return false;
  }
  return true;
}

int launch_multi(const MultiGroup& m, const std::vector<Node>& nodes,
                 const std::vector<Tensor>& vals, Executor& exec, Device place) {
  // Members with equal scalar parameters share a launch (a handful of distinct sets at most).
  std::vector<std::pair<std::vector<Scalar>, std::vector<const PointwiseGroup*>>> by_scalars;
  for (const PointwiseGroup* g : m.members) {
    std::vector<Scalar> sc = g->ops.scalar_values(nodes);
    auto it = std::find_if(by_scalars.begin(), by_scalars.end(),
                           [&](const auto& e) { return e.first == sc; });
    if (it == by_scalars.end()) by_scalars.push_back({std::move(sc), {g}});
    else it->second.push_back(g);
  }
  const kl::KernelFn fn = m.code.handle.get().fns[size_t(m.code.fn)];
  int launches = 0;
  for (const auto& [scalars, members] : by_scalars) {
    std::vector<int64_t> numels;
    std::vector<std::vector<const void*>> ptrs(m.key.slots.size());
    for (const PointwiseGroup* g : members) {
      const int64_t n = numel_of(g->shape);
      if (n == 0) continue;
      numels.push_back(n);
      std::vector<const void*> bufs;
      g->ops.buffers(nodes, vals, bufs);
      for (int32_t v : g->stores) bufs.push_back(vals[size_t(v)].impl()->data());
      for (int32_t ni : g->targets) bufs.push_back(nodes[size_t(ni)].target.impl()->data());
      for (size_t s = 0; s < bufs.size(); ++s) ptrs[s].push_back(bufs[s]);
    }
    if (numels.empty()) continue;
    const kl::MultiTensorPlan plan = kl::multi_tensor_plan(numels, std::move(ptrs));
    kl::ArgPack args = kl::multi_tensor_args(m.code.kernel, m.key, plan, scalars);
    // The kernel reads the pointer lists and the work table from memory: on a device, its own.
    // One block of 8-byte words: each slot's list, then the table.
    std::vector<uint64_t> tables;
    for (const auto& slot : plan.pointers)
      for (const void* p : slot) tables.push_back(uint64_t(reinterpret_cast<uintptr_t>(p)));
    for (int64_t v : plan.table) tables.push_back(uint64_t(v));
    Tensor keep;
    const auto* dev = static_cast<const uint64_t*>(
        exec.upload(place, tables.data(), tables.size() * sizeof(uint64_t), keep));
    size_t at = 0;
    for (size_t s = 0; s < plan.pointers.size(); ++s) {
      args.buffer(int(s), dev + at);
      at += plan.pointers[s].size();
    }
    args.buffer(int(plan.pointers.size()), dev + at);
    exec.launch(place, m.code.kernel, fn, args, plan.items(), 1, "fusion");
    ++launches;
  }
  return launches;
}

}  // namespace ember::fusion
