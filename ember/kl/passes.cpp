// Legalisation passes shared by every renderer: 16-bit floats computed in f32, and plane
// collectives lowered for targets that lack them.
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/kl/render.h"

namespace ember::kl {
namespace {

// Copies a kernel instruction by instruction into a new body, remapping operands, so a pass
// can replace one instruction with several.
class Rewriter {
 public:
  explicit Rewriter(const Kernel& src) : src_(src), map_(src.body.size(), -1) {
    dst_ = src;
    dst_.body.clear();
  }
  int32_t add(Inst in) {
    dst_.body.push_back(in);
    return int32_t(dst_.body.size() - 1);
  }
  int32_t m(int32_t old) const { return old < 0 ? -1 : map_[size_t(old)]; }
  Inst remapped(const Inst& in) const {
    Inst r = in;
    r.a = m(in.a), r.b = m(in.b), r.c = m(in.c), r.d = m(in.d);
    return r;
  }
  void set(int32_t old, int32_t now) { map_[size_t(old)] = now; }
  Type type(int32_t now) const { return dst_.body[size_t(now)].type; }
  int32_t op(Op o, Type t, int32_t a = -1, int32_t b = -1, int32_t c = -1, int64_t imm = 0) {
    Inst in;
    in.op = o;
    in.type = t;
    in.a = a, in.b = b, in.c = c;
    in.imm = imm;
    return add(in);
  }
  int32_t cast(int32_t v, DType to) {
    Type t = type(v);
    return t.dtype == to ? v : op(Op::Cast, {to, t.lanes}, v);
  }
  int32_t constant(Type t, int64_t bits) { return op(Op::Const, t, -1, -1, -1, bits); }
  Kernel finish() {
    std::vector<std::pair<int32_t, std::string>> names;
    for (auto& [id, n] : dst_.value_names)
      if (m(id) >= 0) names.emplace_back(m(id), n);
    dst_.value_names = std::move(names);
    verify(dst_);
    return std::move(dst_);
  }
  const Kernel& src() const { return src_; }

 private:
  const Kernel& src_;
  Kernel dst_;
  std::vector<int32_t> map_;
};

bool is_arith(Op op) {
  return (op >= Op::Neg && op <= Op::IsInf && op != Op::Not) ||
         (op >= Op::Add && op <= Op::Fmod) || (op >= Op::Eq && op <= Op::Ge) ||
         op == Op::PlaneReduce || op == Op::Iota;
}

// NaN-propagating max/min, sum, product, and/or: the combination of PlaneReduce's kinds.
int32_t combine(Rewriter& w, ReduceKind k, int32_t a, int32_t b) {
  const Type t = w.type(a);
  const Type bt{DType::Bool, t.lanes};
  switch (k) {
    case ReduceKind::Sum: return w.op(Op::Add, t, a, b);
    case ReduceKind::Prod: return w.op(Op::Mul, t, a, b);
    case ReduceKind::And: return w.op(Op::And, t, a, b);
    case ReduceKind::Or: return w.op(Op::Or, t, a, b);
    default: {
      const bool mx = k == ReduceKind::Max;
      int32_t lt = mx ? w.op(Op::Lt, bt, a, b) : w.op(Op::Lt, bt, b, a);
      int32_t r = w.op(Op::Select, t, lt, b, a);
      if (!is_floating(t.dtype)) return r;
      r = w.op(Op::Select, t, w.op(Op::Ne, bt, b, b), b, r);
      return w.op(Op::Select, t, w.op(Op::Ne, bt, a, a), a, r);
    }
  }
}

}  // namespace

int Target::lanes(DType d) const {
  int n = vector_bytes / int(itemsize(d));
  return n < 1 ? 1 : n > max_lanes ? max_lanes : n;
}

Target cpp_host_target() {
  Target t;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) t.name = "cpp-avx512", t.vector_bytes = 64;
  else if (__builtin_cpu_supports("avx2")) t.name = "cpp-avx2", t.vector_bytes = 32;
  else t.name = "cpp-sse2", t.vector_bytes = 16;
#if !defined(__FMA__) || defined(EMBER_NO_FP_CONTRACT)
  // ember's own kernels were compiled without FMA or with contraction off, so they never
  // contract: neither may these.
  t.fp_contract = false;
  t.name += "-nocontract";
#endif
  return t;
}

Kernel lower_half(const Kernel& k, const Target& t) {
  auto lacking = [&](DType d) { return (d == DType::F16 || d == DType::BF16) && !t.native(d); };
  Rewriter w(k);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Inst& in = k.body[i];
    Inst r = w.remapped(in);
    if (in.op == Op::Cast) {
      DType from = w.type(r.a).dtype, to = in.type.dtype;
      if ((lacking(from) && to != DType::F32) || (lacking(to) && from != DType::F32)) {
        int32_t mid = w.cast(r.a, DType::F32);  // f64 -> f16 rounds through f32, as flex does
        w.set(int32_t(i), w.cast(mid, to));
        continue;
      }
    } else if (is_arith(in.op)) {
      const DType operand = in.a >= 0 ? w.type(r.a).dtype : in.type.dtype;
      if (lacking(operand)) {
        for (int32_t* o : {&r.a, &r.b, &r.c})
          if (*o >= 0 && w.type(*o).dtype == operand) *o = w.cast(*o, DType::F32);
        const bool back = in.type.dtype == operand;
        if (back) r.type.dtype = DType::F32;
        int32_t v = w.add(r);
        w.set(int32_t(i), back ? w.cast(v, operand) : v);
        continue;
      }
    }
    w.set(int32_t(i), w.add(r));
  }
  return w.finish();
}

Kernel lower_collectives(const Kernel& k, const Target& t) {
  auto is_collective = [](Op op) {
    return op == Op::PlaneReduce || op == Op::PlaneBroadcast || op == Op::PlaneShuffle ||
           op == Op::PlaneShuffleXor || op == Op::LaneId || op == Op::PlaneSize;
  };
  bool any = false;
  for (const Inst& in : k.body) any = any || is_collective(in.op);
  if (!any || (t.plane_ops && t.plane_size > 1)) return k;
  const int64_t p = t.plane_size;
  const Type i64{DType::I64, 1};
  Rewriter w(k);
  if (p == 1) {
    for (size_t i = 0; i < k.body.size(); ++i) {
      const Inst& in = k.body[i];
      Inst r = w.remapped(in);
      if (in.op == Op::LaneId) w.set(int32_t(i), w.constant(i64, 0));
      else if (in.op == Op::PlaneSize) w.set(int32_t(i), w.constant(i64, 1));
      else if (is_collective(in.op)) w.set(int32_t(i), r.a);  // the only lane's own value
      else w.set(int32_t(i), w.add(r));
    }
    return w.finish();
  }
  if (k.workgroup_size % p != 0)
    ember::detail::throw_value("kl", "kernel '" + k.name + "': workgroup size " + std::to_string(k.workgroup_size) +
                                  " is not a multiple of the plane size " + std::to_string(p));
  // One shared array per collective, declared first (GLSL/WGSL want shared memory at the top).
  std::vector<int32_t> array_of(k.body.size(), -1);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Inst& in = k.body[i];
    if (!is_collective(in.op) || in.op == Op::LaneId || in.op == Op::PlaneSize) continue;
    Inst decl;
    decl.op = Op::ArrayDecl;
    decl.type = in.type.scalar();
    decl.sub = uint8_t(Space::Shared);
    decl.imm = k.workgroup_size * in.type.lanes;
    array_of[i] = w.add(decl);
  }
  const int32_t local = w.op(Op::LocalId, i64);
  const int32_t pc = w.constant(i64, p);
  const int32_t lane = w.op(Op::Rem, i64, local, pc);
  const int32_t base = w.op(Op::Sub, i64, local, lane);
  auto barrier = [&] { w.op(Op::Barrier, {}); };
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Inst& in = k.body[i];
    Inst r = w.remapped(in);
    if (in.op == Op::LaneId) { w.set(int32_t(i), lane); continue; }
    if (in.op == Op::PlaneSize) { w.set(int32_t(i), pc); continue; }
    if (!is_collective(in.op)) { w.set(int32_t(i), w.add(r)); continue; }
    const int32_t arr = array_of[i];
    const Type vt = in.type;
    const int32_t lanes = w.constant(i64, vt.lanes);
    auto slot = [&](int32_t thread) { return w.op(Op::Mul, i64, thread, lanes); };
    auto store = [&](int32_t thread, int32_t v) { w.op(Op::ArrayStore, {}, arr, slot(thread), v); };
    auto load = [&](int32_t thread) { return w.op(Op::ArrayLoad, vt, arr, slot(thread)); };
    store(local, r.a);
    barrier();
    int32_t result = -1;
    if (in.op == Op::PlaneReduce) {
      // Tree reduction inside each plane; every thread passes every barrier.
      for (int64_t off = p / 2; off >= 1; off /= 2) {
        const int32_t offc = w.constant(i64, off);
        int32_t active = w.op(Op::Lt, {DType::Bool, 1}, lane, offc);
        w.op(Op::If, {}, active);
        int32_t mine = load(local);
        int32_t other = load(w.op(Op::Add, i64, local, offc));
        store(local, combine(w, ReduceKind(in.sub), mine, other));
        w.op(Op::EndIf, {});
        barrier();
      }
      result = load(base);
    } else {
      int32_t src = -1;
      if (in.op == Op::PlaneShuffleXor) {
        src = w.op(Op::Xor, i64, lane, w.constant(i64, in.imm));
        // Partners past the plane keep their own value.
        src = w.op(Op::Select, i64, w.op(Op::Lt, {DType::Bool, 1}, src, pc), src, lane);
      } else {
        src = w.cast(r.b, DType::I64);
      }
      result = load(w.op(Op::Add, i64, base, src));
    }
    barrier();  // the array is free again before any thread reuses it (loops)
    w.set(int32_t(i), result);
  }
  return w.finish();
}

Kernel legalize(const Kernel& k, const Target& t) {
  Kernel r = lower_half(lower_collectives(k, t), t);
  for (size_t i = 0; i < r.body.size(); ++i) {
    const Inst& in = r.body[i];
    const int lanes = in.type.lanes;
    if (lanes > t.max_lanes || (lanes & (lanes - 1)) != 0)
      ember::detail::throw_not_implemented(
          "kl", "kernel '" + k.name + "', instruction " + std::to_string(i) + ": " +
                    std::to_string(lanes) + " lanes (the target takes powers of two up to " +
                    std::to_string(t.max_lanes) + ")");
  }
  return r;
}

}  // namespace ember::kl
