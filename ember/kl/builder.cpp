// The kernel builder: signature, memory, locals, regions, constants and dead-code removal.
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/kl/expr.h"

namespace ember::kl {
namespace {

thread_local Builder* g_current = nullptr;

[[noreturn]] void fail(const std::string& msg) { ember::detail::throw_value("kl", msg); }

}  // namespace

Type Expr::type() const {
  if (id_ < 0)
    fail(lit_ == Lit::None ? "an absent value was used"
                           : "a weakly typed literal has no dtype here (use kl::lit(like, v) or a cast)");
  return type_;
}

Builder::Builder(std::string name) : prev_(g_current) {
  k_.name = std::move(name);
  region_parent_.push_back(-1);
  region_stack_.push_back(0);
  g_current = this;
}

Builder::~Builder() { g_current = prev_; }

Builder& Builder::current() {
  if (!g_current) fail("no kernel is being built on this thread (create a kl::Builder)");
  return *g_current;
}

int Builder::buffer(DType dtype, Access access, std::string name, bool restrict_, bool list) {
  k_.buffers.push_back({dtype, access, restrict_, list, std::move(name)});
  return int(k_.buffers.size() - 1);
}

Expr Builder::scalar(DType dtype, std::string name) {
  k_.scalars.push_back({dtype, std::move(name)});
  Inst in;
  in.op = Op::Param;
  in.type = {dtype, 1};
  in.imm = int64_t(k_.scalars.size() - 1);
  return emit(in);
}

Expr Builder::index(std::string name) {
  k_.indices.push_back({std::move(name)});
  Inst in;
  in.op = Op::Index;
  in.type = {DType::I64, 1};
  in.imm = int64_t(k_.indices.size() - 1);
  return emit(in);
}

Expr Builder::work_begin() { return emit({Op::WorkBegin, 0, {DType::I64, 1}}); }
Expr Builder::work_end() { return emit({Op::WorkEnd, 0, {DType::I64, 1}}); }

void Builder::check_scope(int32_t id, const char* what) const {
  for (int32_t r = region_stack_.back(); r != region_of_[size_t(id)]; r = region_parent_[size_t(r)])
    if (r <= 0)
      fail(std::string(what) + " %" + std::to_string(id) +
           " is used outside the for_range/if_ body that defined it (carry it in a kl::Var)");
}

Expr Builder::emit(Inst in) {
  for (int32_t o : {in.a, in.b, in.c, in.d})
    if (o >= 0) check_scope(o, "value");
  k_.body.push_back(in);
  region_of_.push_back(region_stack_.back());
  return Expr(this, int32_t(k_.body.size() - 1), in.type);
}

Expr Builder::emit_region(Inst in) {
  Expr e = emit(in);
  region_parent_.push_back(region_stack_.back());
  region_stack_.push_back(int32_t(region_parent_.size() - 1));
  if (in.op == Op::For) region_of_[size_t(e.id())] = region_stack_.back();
  return e;
}

void Builder::close_region() { region_stack_.pop_back(); }

const Inst* Builder::as_const(const Expr& e) const {
  if (e.weak() || !e.valid() || e.builder() != this) return nullptr;
  const Inst& in = k_.body[size_t(e.id())];
  return in.op == Op::Const ? &in : nullptr;
}

bool Builder::visible(int32_t id) const {
  for (int32_t r = region_stack_.back();; r = region_parent_[size_t(r)]) {
    if (r == region_of_[size_t(id)]) return true;
    if (r <= 0) return false;
  }
}

Expr Builder::constant_bits(Type t, int64_t bits) {
  // Reuse a visible Const of the same type and bits (a kernel says T(1) many times).
  size_t scanned = 0;
  for (auto it = consts_.rbegin(); it != consts_.rend() && scanned < 64; ++it, ++scanned) {
    const Inst& in = k_.body[size_t(*it)];
    if (in.type == t && in.imm == bits && visible(*it)) return Expr(this, *it, t);
  }
  Inst in;
  in.op = Op::Const;
  in.type = t;
  in.imm = bits;
  Expr e = emit(in);
  consts_.push_back(e.id());
  return e;
}

Expr Builder::constant(Type t, double v) { return constant_bits(t, const_bits(t.dtype, v)); }
Expr Builder::constant_int(Type t, int64_t v) { return constant_bits(t, const_bits_int(t.dtype, v)); }

Expr Builder::typed(const Expr& e, Type t) {
  if (!e.valid()) fail("an absent value was used");
  if (e.weak()) return e.weak_int() ? constant_int(t, e.literal_int()) : constant(t, e.literal());
  return e;
}

Expr Builder::load(int buf, const Expr& index, int lanes, const Expr& mask, const Expr& item) {
  if (buf < 0 || buf >= int(k_.buffers.size())) fail("load from a missing buffer " + std::to_string(buf));
  if (lanes < 1 || lanes > kMaxLanes) fail("load of " + std::to_string(lanes) + " lanes");
  const BufferParam& b = k_.buffers[size_t(buf)];
  Inst in;
  in.op = Op::Load;
  in.type = {b.dtype, uint8_t(lanes)};
  in.imm = buf;
  in.a = typed(index, {DType::I64, 1}).id();
  if (mask.valid()) in.b = typed(mask, {DType::Bool, 1}).id();
  if (b.list != item.valid())
    fail(b.list ? "a load from a list buffer needs the list item" : "a list item given for a plain buffer");
  if (item.valid()) in.d = typed(item, {DType::I64, 1}).id();
  return emit(in);
}

void Builder::store(int buf, const Expr& index, const Expr& value, const Expr& mask,
                    const Expr& item, bool atomic) {
  if (buf < 0 || buf >= int(k_.buffers.size())) fail("store to a missing buffer " + std::to_string(buf));
  const BufferParam& b = k_.buffers[size_t(buf)];
  Expr v = typed(value, {b.dtype, 1});
  if (v.dtype() != b.dtype)
    fail("store of " + type_name(v.type()) + " to buffer " + std::to_string(buf) + " of " +
         type_name({b.dtype, 1}) + " (cast first)");
  Inst in;
  in.op = Op::Store;
  in.sub = atomic ? kAtomic : 0;
  in.imm = buf;
  in.a = typed(index, {DType::I64, 1}).id();
  in.b = v.id();
  if (mask.valid()) in.c = typed(mask, {DType::Bool, 1}).id();
  if (b.list != item.valid())
    fail(b.list ? "a store to a list buffer needs the list item" : "a list item given for a plain buffer");
  if (item.valid()) in.d = typed(item, {DType::I64, 1}).id();
  emit(in);
}

Var Builder::var(const Expr& init) {
  if (init.weak()) fail("a variable initialised with a literal needs a type: var(Type, init)");
  Expr v = typed(init, {});
  Inst in;
  in.op = Op::VarDecl;
  in.type = v.type();
  in.a = v.id();
  return Var(this, emit(in).id(), v.type());
}

Var Builder::var(Type t, const Expr& init) {
  Inst in;
  in.op = Op::VarDecl;
  in.type = t;
  Expr v = typed(init.valid() ? init : Expr(0), t);
  if (v.lanes() != t.lanes && v.lanes() == 1) v = broadcast(v, t.lanes);
  if (!(v.type() == t)) fail("variable of " + type_name(t) + " initialised with " + type_name(v.type()));
  in.a = v.id();
  return Var(this, emit(in).id(), t);
}

Array Builder::array(Type elem, int64_t size, Space space) {
  Inst in;
  in.op = Op::ArrayDecl;
  in.type = elem.scalar();
  in.imm = size;
  in.sub = uint8_t(space);
  return Array(this, emit(in).id(), elem.scalar());
}

void Builder::name(const Expr& v, std::string name) {
  if (v.valid() && !v.weak()) k_.value_names.emplace_back(v.id(), std::move(name));
}

Kernel Builder::finish() {
  if (done_) fail("kernel '" + k_.name + "' was already finished");
  if (region_stack_.size() != 1) fail("kernel '" + k_.name + "' finished inside an open region");
  done_ = true;
  // Dead-code removal: statements and region markers are roots; pure values live only if used.
  std::vector<Inst>& body = k_.body;
  std::vector<char> live(body.size(), 0);
  for (size_t i = body.size(); i-- > 0;) {
    const Inst& in = body[i];
    if (!op_defines_value(in.op) || in.op == Op::For) live[i] = 1;
    if (!live[i]) continue;
    for (int32_t o : {in.a, in.b, in.c, in.d})
      if (o >= 0) live[size_t(o)] = 1;
  }
  std::vector<int32_t> remap(body.size(), -1);
  std::vector<Inst> kept;
  for (size_t i = 0; i < body.size(); ++i) {
    if (!live[i]) continue;
    Inst in = body[i];
    for (int32_t* o : {&in.a, &in.b, &in.c, &in.d})
      if (*o >= 0) *o = remap[size_t(*o)];
    remap[i] = int32_t(kept.size());
    kept.push_back(in);
  }
  body = std::move(kept);
  std::vector<std::pair<int32_t, std::string>> names;
  for (auto& [id, n] : k_.value_names)
    if (remap[size_t(id)] >= 0) names.emplace_back(remap[size_t(id)], std::move(n));
  k_.value_names = std::move(names);
  verify(k_);
  return std::move(k_);
}

Expr Var::get() const {
  Inst in;
  in.op = Op::VarRead;
  in.type = type_;
  in.a = decl_;
  return b_->emit(in);
}

void Var::set(const Expr& v) const {
  Expr x = b_->typed(v, type_);
  if (x.lanes() != type_.lanes && x.lanes() == 1) x = broadcast(x, type_.lanes);
  if (!(x.type() == type_))
    fail("write of " + type_name(x.type()) + " to a variable of " + type_name(type_));
  Inst in;
  in.op = Op::VarWrite;
  in.a = decl_;
  in.b = x.id();
  b_->emit(in);
}

Expr Array::load(const Expr& index, int lanes) const {
  Inst in;
  in.op = Op::ArrayLoad;
  in.type = type_.with_lanes(lanes);
  in.a = decl_;
  in.b = b_->typed(index, {DType::I64, 1}).id();
  return b_->emit(in);
}

void Array::store(const Expr& index, const Expr& value) const {
  Expr v = b_->typed(value, type_);
  if (v.dtype() != type_.dtype)
    fail("store of " + type_name(v.type()) + " to an array of " + type_name(type_));
  Inst in;
  in.op = Op::ArrayStore;
  in.a = decl_;
  in.b = b_->typed(index, {DType::I64, 1}).id();
  in.c = v.id();
  b_->emit(in);
}

}  // namespace ember::kl
