// The multi-tensor template.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"  // GCC 12 false positive on std::string + (PR105329)
#endif
#include "ember/kl/templates/multi_tensor.h"

#include <algorithm>

#include "ember/error.h"

namespace ember::kl {

std::string MultiTensorKey::str() const {
  static const char* acc[] = {"r", "w", "rw"};
  std::string s = "multi_tensor [";
  for (size_t i = 0; i < slots.size(); ++i)
    s += (i ? " " : "") + type_name({slots[i].dtype, 1}) + ":" + acc[int(slots[i].access)];
  s += "]";
  if (!scalars.empty()) {
    s += " s[";
    for (size_t i = 0; i < scalars.size(); ++i) s += (i ? " " : "") + type_name({scalars[i], 1});
    s += "]";
  }
  if (partial != DType::Bool) s += " partial:" + type_name({partial, 1});
  return s + " v" + std::to_string(lanes) + (workgroup > 1 ? " wg" + std::to_string(workgroup) : "");
}

MultiTensorKey multi_tensor_key(std::vector<MultiTensorSlot> slots, std::vector<DType> scalars, DType partial,
                                const Target& t) {
  MultiTensorKey key;
  size_t widest = partial == DType::Bool ? 1 : itemsize(partial);
  for (const MultiTensorSlot& s : slots) widest = std::max(widest, itemsize(s.dtype));
  key.lanes = t.lanes(widest == 8 ? DType::F64 : widest == 4 ? DType::F32 : widest == 2 ? DType::F16 : DType::U8);
  key.slots = std::move(slots);
  key.scalars = std::move(scalars);
  key.partial = partial;
  if (t.plane_size > 1) key.workgroup = 256;
  return key;
}

Kernel multi_tensor_kernel(const std::string& name, const MultiTensorKey& key, const MultiTensorBody& body) {
  Builder kb(name);
  kb.set_spec(key.str());
  const size_t nslots = key.slots.size();
  for (size_t i = 0; i < nslots; ++i)
    kb.buffer(key.slots[i].dtype, key.slots[i].access, "slot" + std::to_string(i), true, true);
  const int table = kb.buffer(DType::I64, Access::Read, "table");
  const bool reduce = key.partial != DType::Bool;
  const int partials = reduce ? kb.buffer(key.partial, Access::Write, "partials") : -1;
  std::vector<Expr> scalars;
  for (DType d : key.scalars) scalars.push_back(kb.scalar(d));
  const int L = key.lanes;
  const int W = key.workgroup;
  if (W > 1) kb.set_workgroup_size(W);
  const Expr lid = W > 1 ? local_id() : Expr(0);
  for_range(kb.work_begin(), kb.work_end(), [&](Expr item) {
    const Expr t = kb.load(table, item * Expr(3)), off = kb.load(table, item * Expr(3) + Expr(1));
    const Expr len = kb.load(table, item * Expr(3) + Expr(2));
    Var acc_vec, acc_tail;
    if (reduce) {
      acc_vec = kb.var(Type{key.partial, uint8_t(L)}, Expr(0));
      acc_tail = kb.var(Type{key.partial, 1}, Expr(0));
    }
    auto step = [&](const Expr& j, int lanes) {
      std::vector<Expr> in;
      for (size_t i = 0; i < nslots; ++i)
        if (key.slots[i].access != Access::Write) in.push_back(kb.load(int(i), off + j, lanes, {}, t));
      std::vector<Expr> outs = body(in, scalars);
      size_t o = 0;
      for (size_t i = 0; i < nslots; ++i) {
        if (key.slots[i].access == Access::Read) continue;
        if (o >= outs.size()) ember::detail::throw_value("kl", "multi-tensor body returned too few values");
        kb.store(int(i), off + j, broadcast(cast(outs[o++], key.slots[i].dtype), lanes), {}, t);
      }
      if (outs.size() != o + (reduce ? 1 : 0))
        ember::detail::throw_value("kl", "multi-tensor body returned " + std::to_string(outs.size()) + " values, expected " +
                                      std::to_string(o + (reduce ? 1 : 0)));
      if (reduce) {
        Var& acc = lanes > 1 ? acc_vec : acc_tail;
        acc.set(acc.get() + broadcast(cast(outs[o], key.partial), lanes));
      }
    };
    const Expr nvec = len / Expr(L) * Expr(L);
    // Each of the W threads starts one vector further and strides over the others' (W = 1: all).
    if (L > 1) for_range(lid * Expr(L), nvec, [&](Expr j) { step(j, L); }, int64_t(W) * L);
    for_range((L > 1 ? nvec : Expr(0)) + lid, len, [&](Expr j) { step(j, 1); }, W);
    if (reduce) {
      Expr v = acc_vec.get();
      std::vector<Expr> lanes;
      for (int l = 0; l < L; ++l) lanes.push_back(extract(v, l));
      while (lanes.size() > 1) {  // pairwise
        std::vector<Expr> next;
        for (size_t i = 0; i + 1 < lanes.size(); i += 2) next.push_back(lanes[i] + lanes[i + 1]);
        if (lanes.size() % 2) next.push_back(lanes.back());
        lanes = std::move(next);
      }
      Expr total = lanes[0] + acc_tail.get();
      if (W == 1) return kb.store(partials, item, total);
      total = plane_reduce(total, ReduceKind::Sum);
      Array planes = kb.array(Type{key.partial, 1}, W / 32, Space::Shared);
      if_(lane_id() == Expr(0), [&] { planes.store(lid / Expr(32), total); });
      barrier();
      if_(lid == Expr(0), [&] {
        Expr sum = planes.load(Expr(0));
        for (int w = 1; w < W / 32; ++w) sum = sum + planes.load(Expr(w));
        kb.store(partials, item, sum);
      });
      barrier();  // the array is read before the next item writes it
    }
  });
  return kb.finish();
}

MultiTensorPlan multi_tensor_plan(std::span<const int64_t> numels, std::vector<std::vector<const void*>> pointers,
                                  int64_t chunk) {
  if (chunk < 1) ember::detail::throw_value("kl", "multi_tensor_plan: chunk must be >= 1");
  for (const auto& slot : pointers)
    if (slot.size() != numels.size())
      ember::detail::throw_value("kl", "multi_tensor_plan: " + std::to_string(slot.size()) + " pointers for " +
                                    std::to_string(numels.size()) + " tensors");
  MultiTensorPlan p;
  p.pointers = std::move(pointers);
  for (size_t t = 0; t < numels.size(); ++t)
    for (int64_t off = 0; off < numels[t]; off += chunk)
      p.table.insert(p.table.end(), {int64_t(t), off, std::min(chunk, numels[t] - off)});
  return p;
}

ArgPack multi_tensor_args(const Kernel& k, const MultiTensorKey& key, const MultiTensorPlan& plan,
                          std::span<const Scalar> scalars, void* partials) {
  const bool reduce = key.partial != DType::Bool;
  if (plan.pointers.size() != key.slots.size() || scalars.size() != key.scalars.size() || reduce != (partials != nullptr))
    ember::detail::throw_value("kl", "multi_tensor_args: the plan or operands do not match the key " + key.str());
  ArgPack a(k);
  int b = 0;
  for (const auto& slot : plan.pointers) a.buffer(b++, slot.data());
  a.buffer(b++, plan.table.data());
  if (reduce) a.buffer(b++, partials);
  for (size_t i = 0; i < scalars.size(); ++i) a.scalar(int(i), scalars[i]);
  return a;
}

}  // namespace ember::kl
