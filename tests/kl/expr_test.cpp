// The builder's rules: what must not compile (checked with concepts), weakly typed literals,
// trace-time folding, and every function of kl/scalar.h instantiated with T = Expr.
#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/kl/expr.h"
#include "ember/kl/serialize.h"

namespace ember::kl {
namespace {

// --- compile-time properties ---
template <class T> concept Testable = requires(T x) { bool(x); };
template <class T> concept BranchOnCompare = requires(T a, T b) { static_cast<bool>(a < b); };
template <class T> concept TimesBareDouble = requires(T x) { x * 0.5; };
template <class T> concept TimesBareInt = requires(T x) { x + 1; };
template <class T> concept TimesTypedLiteral = requires(T x) { x * T(0.5); };
template <class T> concept TernaryOnValue = requires(T x) { x ? 1 : 2; };

static_assert(!std::is_convertible_v<Expr, bool>, "an Expr must not become a bool");
static_assert(!std::is_constructible_v<bool, Expr>);
static_assert(!Testable<Expr> && Testable<float>);
static_assert(!BranchOnCompare<Expr> && BranchOnCompare<float>, "if (x < y) on a device value");
static_assert(!TernaryOnValue<Expr>);
static_assert(!TimesBareDouble<Expr> && TimesBareDouble<float>, "x * 0.5 must not compile");
static_assert(!TimesBareInt<Expr>);
static_assert(TimesTypedLiteral<Expr> && TimesTypedLiteral<float>, "x * T(0.5) compiles");
static_assert(!std::is_convertible_v<double, Expr>, "literals are explicit");

TEST(KlExpr, LiteralsTakeTheOtherOperandsDtype) {
  Builder kb("lit");
  Expr x = kb.scalar(DType::F64);
  Expr y = x * Expr(0.5);
  EXPECT_EQ(y.dtype(), DType::F64);
  const Inst& c = kb.inst(kb.inst(y.id()).b);
  EXPECT_EQ(c.op, Op::Const);
  EXPECT_EQ(const_as_double(DType::F64, c.imm), 0.5);
  Expr h = kb.scalar(DType::I16) + Expr(70000);  // the literal wraps to int16 like a cast
  EXPECT_EQ(kb.inst(kb.inst(h.id()).b).imm, int64_t(int16_t(70000)));
  Expr w = Expr(0.5) + Expr(1);  // two literals fold and stay weak
  EXPECT_TRUE(w.weak());
  EXPECT_EQ(w.literal(), 1.5);
  EXPECT_THROW(x + kb.scalar(DType::F32), ValueError);  // dtypes never mix silently
  EXPECT_THROW((void)w.dtype(), ValueError);
  EXPECT_THROW(select(x < Expr(0), Expr(1), Expr(2)), ValueError);  // two weak branches
  EXPECT_EQ(select(x < Expr(0), lit(x, 1), Expr(2)).dtype(), DType::F64);
}

TEST(KlExpr, TraceTimeFolding) {
  Builder kb("fold");
  int out = kb.buffer(DType::I32, Access::Write);
  Expr i = kb.scalar(DType::I32);
  EXPECT_EQ((i + Expr(0)).id(), i.id());
  EXPECT_EQ((i * Expr(1)).id(), i.id());
  Expr never = isnan(i);  // integers are never NaN: a constant, and select folds on it
  EXPECT_EQ(kb.inst(never.id()).op, Op::Const);
  EXPECT_EQ(select(never, i * i, i).id(), i.id());
  bool traced_then = false, traced_else = false;
  if_(never, [&] { traced_then = true; }, [&] { traced_else = true; });
  EXPECT_FALSE(traced_then);
  EXPECT_TRUE(traced_else);
  kb.store(out, Expr(0), i);
  Kernel k = kb.finish();
  for (const Inst& in : k.body) EXPECT_NE(in.op, Op::Mul) << "dead i * i was not removed";
}

// Every function of kl/scalar.h builds IR for T = Expr.
TEST(KlExpr, ScalarFunctionsInstantiateWithExpr) {
  Builder kb("scalar_h");
  int out = kb.buffer(DType::F32, Access::Write);
  Expr x = kb.load(kb.buffer(DType::F32, Access::Read), kb.work_begin(), 8);
  std::vector<Expr> r = {sigmoid(x), relu(x), rsqrt(x), gelu(x), gelu_tanh(x), silu(x),
                         softplus(x, Expr(1), Expr(20)), mish(x), elu(x, Expr(1.0)),
                         leaky_relu(x, Expr(0.01)), hardsigmoid(x), hardswish(x), sign(x), erfinv(x),
                         maximum(x, x * Expr(2)), minimum(x, Expr(0)), max(x, Expr(1)), min(x, Expr(1))};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].type(), x.type()) << i;
    kb.store(out, kb.work_begin() + Expr(int64_t(i) * 8), r[i]);
  }
  Kernel k = kb.finish();
  EXPECT_NO_THROW(verify(k));
  EXPECT_GT(k.body.size(), 200u);
}

TEST(KlExpr, MathNeedsFloatsAndCastsAreExplicit) {
  Builder kb("types");
  Expr i = kb.scalar(DType::I32);
  EXPECT_THROW(exp(i), ValueError);
  EXPECT_EQ(exp(cast(i, DType::F32)).dtype(), DType::F32);
  EXPECT_THROW(kb.scalar(DType::Bool) + kb.scalar(DType::Bool), ValueError);
  EXPECT_EQ((kb.scalar(DType::Bool) || kb.scalar(DType::Bool)).dtype(), DType::Bool);
  EXPECT_THROW(!i, ValueError);
}

}  // namespace
}  // namespace ember::kl
