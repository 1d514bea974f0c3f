// Kernel IR verifier: every kernel the builder finishes, every parsed kernel and every pass
// result goes through it, so renderers can trust types, scopes and nesting.
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/kl/ir.h"

namespace ember::kl {
namespace {

class Verifier {
 public:
  explicit Verifier(const Kernel& k) : k_(k), region_of_(k.body.size(), -1) {}

  void run() {
    if (k_.workgroup_size < 1) fail(-1, "workgroup size must be >= 1");
    parent_.push_back(-1);  // region 0: the kernel body
    std::vector<int32_t> open;  // For/If instructions still open
    int32_t cur = 0;
    for (size_t i = 0; i < k_.body.size(); ++i) {
      const Inst& in = k_.body[i];
      at_ = int32_t(i);
      if (int(in.op) >= kNumKlOps) fail(at_, "unknown op " + std::to_string(int(in.op)));
      if (in.type.lanes < 1 || in.type.lanes > kMaxLanes)
        fail(at_, "lanes must be 1.." + std::to_string(kMaxLanes));
      if (int(in.type.dtype) >= kNumDTypes) fail(at_, "unknown dtype");
      for (int32_t o : {in.a, in.b, in.c, in.d})
        if (o < -1 || o >= at_) fail(at_, "operand %" + std::to_string(o) + " is not defined before");
      region_of_[i] = cur;
      switch (in.op) {
        case Op::For:
          check_operands(in);
          cur = push(cur);
          region_of_[i] = cur;  // the induction variable lives in the loop body
          open.push_back(at_);
          break;
        case Op::If:
          check_operands(in);
          cur = push(cur);
          open.push_back(at_);
          break;
        case Op::Else:
          if (open.empty() || k_.body[size_t(open.back())].op != Op::If)
            fail(at_, "else without an open if");
          cur = push(parent_[size_t(cur)]);
          break;
        case Op::EndFor: case Op::EndIf: {
          Op want = in.op == Op::EndFor ? Op::For : Op::If;
          if (open.empty() || k_.body[size_t(open.back())].op != want)
            fail(at_, std::string(op_name(in.op)) + " does not close an open " + op_name(want));
          open.pop_back();
          cur = parent_[size_t(cur)];
          break;
        }
        default: check_operands(in); break;
      }
    }
    if (!open.empty()) fail(open.back(), "region is never closed");
  }

 private:
  int32_t push(int32_t parent) {
    parent_.push_back(parent);
    return int32_t(parent_.size() - 1);
  }

  [[noreturn]] void fail(int32_t i, const std::string& msg) const {
    std::string where = "kernel '" + k_.name + "'";
    if (i >= 0) where += ", instruction " + std::to_string(i) + " (" + op_name(k_.body[size_t(i)].op) + ")";
    ember::detail::throw_value("kl", where + ": " + msg);
  }

  // The value operand `o` of the current instruction: defined, visible here, of kind `want`.
  const Inst& use(int32_t o, const char* what, Op want = Op::Const, bool decl = false) const {
    if (o < 0) fail(at_, std::string("missing ") + what);
    const Inst& d = k_.body[size_t(o)];
    if (decl ? d.op != want : !op_defines_value(d.op))
      fail(at_, std::string(what) + " %" + std::to_string(o) + " is not " +
                    (decl ? std::string("a ") + op_name(want) : std::string("a value")));
    for (int32_t r = region_of_[size_t(at_)]; r != region_of_[size_t(o)]; r = parent_[size_t(r)])
      if (r <= 0) fail(at_, std::string(what) + " %" + std::to_string(o) + " is out of scope");
    return d;
  }
  void none(int32_t o, const char* what) const {
    if (o != -1) fail(at_, std::string("unexpected ") + what);
  }
  void same(Type a, Type b, const char* what) const {
    if (!(a == b)) fail(at_, std::string(what) + ": " + type_name(a) + " and " + type_name(b) + " differ");
  }
  void want(bool ok, const std::string& msg) const {
    if (!ok) fail(at_, msg);
  }
  void index_scalar(int32_t o, const char* what) const {
    Type t = use(o, what).type;
    want(t == Type{DType::I64, 1}, std::string(what) + " must be i64, found " + type_name(t));
  }
  void mask(int32_t o, int lanes) const {
    if (o < 0) return;
    Type t = use(o, "mask").type;
    want(t.dtype == DType::Bool && (t.lanes == lanes || t.lanes == 1),
         "mask must be bool with " + std::to_string(lanes) + " lanes, found " + type_name(t));
  }
  const BufferParam& buffer(const Inst& in) const {
    want(in.imm >= 0 && in.imm < int64_t(k_.buffers.size()), "no buffer " + std::to_string(in.imm));
    const BufferParam& b = k_.buffers[size_t(in.imm)];
    if (b.list) index_scalar(in.d, "list item");
    else none(in.d, "list item on a plain buffer");
    return b;
  }

  void check_operands(const Inst& in) const {
    const Type t = in.type;
    const DType d = t.dtype;
    auto unary = [&] { return use(in.a, "operand").type; };
    switch (in.op) {
      case Op::Const: break;
      case Op::Param:
        want(in.imm >= 0 && in.imm < int64_t(k_.scalars.size()), "no scalar parameter " + std::to_string(in.imm));
        same(t, {k_.scalars[size_t(in.imm)].dtype, 1}, "parameter type");
        break;
      case Op::Index:
        want(in.imm >= 0 && in.imm < int64_t(k_.indices.size()), "no index parameter " + std::to_string(in.imm));
        [[fallthrough]];
      case Op::WorkBegin: case Op::WorkEnd: case Op::LocalId: case Op::LaneId: case Op::PlaneSize:
        same(t, {DType::I64, 1}, "result");
        break;
      case Op::Iota: want(d != DType::Bool, "iota of bool"); break;
      case Op::Neg: case Op::Abs:
        same(unary(), t, "result");
        want(d != DType::Bool, std::string(op_name(in.op)) + " of bool");
        break;
      case Op::Not:
        same(unary(), t, "result");
        want(!is_floating(d), "not of a float (use a comparison)");
        break;
      case Op::IsNan: case Op::IsInf: {
        Type a = unary();
        want(is_floating(a.dtype), "expected a float operand, found " + type_name(a));
        same(t, {DType::Bool, a.lanes}, "result");
        break;
      }
      case Op::Cast: want(unary().lanes == t.lanes, "cast changes the lane count"); break;
      case Op::Bitcast: {
        Type a = unary();
        want(a.lanes == t.lanes && itemsize(a.dtype) == itemsize(d), "bitcast between sizes");
        break;
      }
      case Op::Broadcast: same(unary(), t.scalar(), "broadcast operand"); break;
      case Op::Fence: same(unary(), t, "result"); break;
      case Op::Extract: {
        Type a = unary();
        same(a.scalar(), t, "extract result");
        want(in.imm >= 0 && in.imm < a.lanes, "lane " + std::to_string(in.imm) + " out of range");
        break;
      }
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem:
      case Op::And: case Op::Or: case Op::Xor: case Op::Shl: case Op::Shr:
      case Op::Pow: case Op::Atan2: case Op::Fmod: {
        same(use(in.a, "lhs").type, t, "lhs");
        same(use(in.b, "rhs").type, t, "rhs");
        bool ok = false;
        switch (in.op) {
          case Op::And: case Op::Or: case Op::Xor: ok = !is_floating(d); break;
          case Op::Shl: case Op::Shr: ok = is_integral(d); break;
          case Op::Pow: case Op::Atan2: case Op::Fmod: ok = is_floating(d); break;
          default: ok = d != DType::Bool; break;
        }
        want(ok, std::string(op_name(in.op)) + " is not defined for " + type_name(t));
        break;
      }
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: {
        Type a = use(in.a, "lhs").type;
        same(use(in.b, "rhs").type, a, "comparison operands");
        same(t, {DType::Bool, a.lanes}, "comparison result");
        break;
      }
      case Op::Select:
        mask(in.a, t.lanes);
        if (in.a < 0) fail(at_, "missing condition");
        same(use(in.b, "true value").type, t, "true value");
        same(use(in.c, "false value").type, t, "false value");
        break;
      case Op::Load: {
        const BufferParam& b = buffer(in);
        want(b.access != Access::Write, "load from a write-only buffer");
        want(d == b.dtype, "load type " + type_name(t) + " from a buffer of " + type_name({b.dtype, 1}));
        index_scalar(in.a, "index");
        mask(in.b, t.lanes);
        none(in.c, "third operand");
        break;
      }
      case Op::Store: {
        const BufferParam& b = buffer(in);
        want(b.access != Access::Read, "store to a read-only buffer");
        index_scalar(in.a, "index");
        Type v = use(in.b, "value").type;
        want(v.dtype == b.dtype, "store of " + type_name(v) + " to a buffer of " + type_name({b.dtype, 1}));
        mask(in.c, v.lanes);
        break;
      }
      case Op::VarDecl:
        if (in.a >= 0) same(use(in.a, "initial value").type, t, "initial value");
        break;
      case Op::VarRead: same(use(in.a, "variable", Op::VarDecl, true).type, t, "read"); break;
      case Op::VarWrite:
        same(use(in.b, "value").type, use(in.a, "variable", Op::VarDecl, true).type, "write");
        break;
      case Op::ArrayDecl:
        want(in.imm > 0 && in.imm <= (int64_t(1) << 24), "array size must be 1..2^24");
        want(t.lanes == 1, "array elements are scalars");
        want(in.sub <= uint8_t(Space::Shared), "unknown space");
        break;
      case Op::ArrayLoad:
        want(use(in.a, "array", Op::ArrayDecl, true).type.dtype == d, "array load type");
        index_scalar(in.b, "index");
        break;
      case Op::ArrayStore:
        want(use(in.c, "value").type.dtype == use(in.a, "array", Op::ArrayDecl, true).type.dtype,
             "array store type");
        index_scalar(in.b, "index");
        break;
      case Op::PlaneReduce: {
        same(unary(), t, "result");
        want(in.sub <= uint8_t(ReduceKind::Or), "unknown reduce kind");
        bool logical = ReduceKind(in.sub) >= ReduceKind::And;
        want(logical ? !is_floating(d) : d != DType::Bool, "reduce kind does not fit " + type_name(t));
        break;
      }
      case Op::PlaneBroadcast: case Op::PlaneShuffle: {
        same(unary(), t, "result");
        Type l = use(in.b, "lane").type;
        want(is_integral(l.dtype) && l.lanes == 1, "lane must be a scalar integer");
        break;
      }
      case Op::PlaneShuffleXor: same(unary(), t, "result"); want(in.imm > 0, "xor mask"); break;
      case Op::Barrier: break;
      case Op::For:
        index_scalar(in.a, "begin");
        index_scalar(in.b, "end");
        want(in.imm >= 1, "step must be >= 1");
        same(t, {DType::I64, 1}, "induction variable");
        break;
      case Op::If: {
        Type c = use(in.a, "condition").type;
        same(c, {DType::Bool, 1}, "condition");
        break;
      }
      default:  // Exp .. RoundEven: float maths
        want(in.op >= Op::Exp && in.op <= Op::RoundEven, "unexpected op");
        same(unary(), t, "result");
        want(is_floating(d), std::string(op_name(in.op)) + " needs a float operand, found " + type_name(t));
        break;
    }
  }

  const Kernel& k_;
  std::vector<int32_t> region_of_, parent_;
  int32_t at_ = -1;
};

}  // namespace

void verify(const Kernel& k) { Verifier(k).run(); }

}  // namespace ember::kl
