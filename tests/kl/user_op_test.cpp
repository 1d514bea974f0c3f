// User ops: registered at run time with a kernel-language kernel, then called like any op on
// flex and cpu (lazy and eager), differentiated through their VJP, specialised and cached per
// key, and failing cleanly (or falling back) when the host compiler is missing.
#include "ember/kl/user_op.h"

#include <gtest/gtest.h>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/ember.h"
#include "ember/kl/cache/kernel_cache.h"
#include "gradcheck.h"
#include "store/store_test_util.h"

namespace ember::kl {
namespace {

using ember::test::gradcheck;

std::vector<Device> host_devices() {
  return {Device::flex(), Device::cpu(), Device::cpu().eager()};
}

// y = silu(x) * s + z (z broadcast), and a second output x * z.
UserOp pointwise_op() {
  static const UserOp op = [] {
    UserOpDef def;
    def.name = "test_silu_fma";
    def.params = {"scale"};
    def.infer = [](std::span<const Tensor> in, std::span<const double>) {
      const Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), "test_silu_fma");
      return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, in[0].dtype()}};
    };
    def.kernel = [](const UserCall&) {
      return pointwise_op_kernel([](std::span<const Expr> in, std::span<const Expr> s) {
        const Expr p = cast(s[0], in[0].dtype());
        return std::vector<Expr>{in[0] * sigmoid(in[0]) * p + in[1], in[0] * in[1]};
      });
    };
    return register_op(std::move(def));
  }();
  return op;
}

TensorList layer_norm_vjp(const VjpCtx& c, std::span<const double> p) {
  const Tensor &x = c.input(0), &w = c.input(1), &g = c.grad(0);
  const int64_t n = x.size(-1);
  const Tensor mu = mean(x, {-1}, true), xc = x - mu;
  const Tensor rstd = rsqrt(mean(xc * xc, {-1}, true) + p[0]), xhat = xc * rstd;
  const Tensor gh = g * w;
  const Tensor dx = rstd * (gh - mean(gh, {-1}, true) - xhat * mean(gh * xhat, {-1}, true));
  return {dx, sum((g * xhat).reshape({-1, n}), {0}), sum(g.reshape({-1, n}), {0})};
}

UserOpDef layer_norm_def(const std::string& name) {
  UserOpDef def;
  def.name = name;
  def.params = {"eps"};
  def.infer = [name](std::span<const Tensor> in, std::span<const double>) {
    if (in.size() != 3 || in[1].shape() != Shape{in[0].size(-1)} || in[2].shape() != in[1].shape())
      throw ShapeError("[" + name + "] expected x [..., n], weight [n] and bias [n]");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  def.kernel = [](const UserCall& c) {
    const DType acc = c.inputs[0].dtype() == kF64 ? kF64 : kF32;
    return row_reduce_op_kernel(
        {-1}, 1, {{Combiner::Welford, acc}}, true,
        [](std::span<const Expr> in, std::span<const Expr>) { return std::vector<Expr>{in[0]}; },
        [acc](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr> s) {
          const Expr rstd = rsqrt(r[1] / r[2] + s[0]);  // r = {mean, M2, count}
          return std::vector<Expr>{(cast(in[0], acc) - r[0]) * rstd * cast(in[1], acc) +
                                   cast(in[2], acc)};
        });
  };
  def.vjp = layer_norm_vjp;
  return def;
}

UserOp layer_norm_op() {
  static const UserOp op = register_op(layer_norm_def("test_layer_norm"));
  return op;
}

TEST(UserOp, PointwiseRunsOnEveryHostDevice) {
  manual_seed(1);
  const UserOp op = pointwise_op();
  EXPECT_EQ(find_user_op("test_silu_fma").id(), op.id());
  for (Device d : host_devices()) {
    for (DType dt : {kF32, kF64}) {
      Tensor x = randn({33, 70}).to(dt).to(d), z = randn({70}).to(dt).to(d);
      TensorList out = op.call({x, z}, {1.5});
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(out[0].device(), d);
      Tensor want = x * sigmoid(x) * 1.5 + z;
      EXPECT_TRUE(allclose(out[0], want, 1e-6, 1e-6)) << d << " " << dtype_name(dt);
      EXPECT_TRUE(equal(out[1], x * z)) << d;
      // Non-contiguous x (a transposed view) and a broadcast z along the other dim.
      Tensor xt = randn({70, 33}).to(dt).to(d).transpose(0, 1), zc = randn({33, 1}).to(dt).to(d);
      EXPECT_TRUE(allclose(op.call({xt, zc}, {-2.0})[0], xt * sigmoid(xt) * -2.0 + zc, 1e-6, 1e-6));
    }
  }
}

TEST(UserOp, LayerNormMatchesEmberOnEveryHostDevice) {
  manual_seed(2);
  const UserOp ln = layer_norm_op();
  for (Device d : host_devices())
    for (DType dt : {kF32, kF64, kBF16})
      for (Shape shape : {Shape{4, 7, 32}, Shape{3, 257}, Shape{1, 1}}) {
        const int64_t n = shape.back();
        Tensor x = (randn(shape) * 3 + 1).to(dt).to(d), w = randn({n}).to(dt).to(d),
               b = randn({n}).to(dt).to(d);
        Tensor y = ln({x, w, b}, {1e-5});
        EXPECT_EQ(y.dtype(), dt);
        const double tol = dt == kBF16 ? 2e-2 : 1e-5;
        EXPECT_TRUE(allclose(y, layer_norm(x, {n}, w, b, 1e-5), tol, tol)) << d << shape_str(shape);
      }
}

TEST(UserOp, SpecialisationsAreBuiltOnceAndReused) {
  manual_seed(3);
  const UserOp ln = layer_norm_op();
  Tensor w = randn({40}), b = randn({40});
  ln({randn({5, 40}), w, b}, {1e-5});
  const int64_t built = user_op_stats(ln).kernels, calls = user_op_stats(ln).jit_calls;
  for (int64_t rows : {2, 9, 100})
    ln({randn({rows, 40}), w, b}, {1e-3});  // other row counts, another eps
  EXPECT_EQ(user_op_stats(ln).kernels, built);
  EXPECT_EQ(user_op_stats(ln).jit_calls, calls + 3);
}

TEST(UserOp, GradientsAgreeWithFiniteDifferencesAndWithLayerNorm) {
  manual_seed(4);
  const UserOp ln = layer_norm_op();
  Attrs a;
  a.i[0] = ln.id();
  a.i[1] = 1;
  a.f[0] = 1e-5;
  EXPECT_EQ(gradcheck(OpId::user_op, a,
                      {randn({3, 6}).to(kF64), randn({6}).to(kF64), randn({6}).to(kF64)}),
            "");
  for (Device d : {Device::flex().autodiff(), Device::cpu().autodiff()}) {
    Tensor x = randn({5, 12}).to(d), w = randn({12}).to(d), b = randn({12}).to(d);
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
    Tensor g = randn({5, 12}).to(d);
    Gradients mine = (ln({x, w, b}, {1e-5}) * g).sum().backward();
    Gradients ref = (layer_norm(x, {12}, w, b, 1e-5) * g).sum().backward();
    for (const Tensor* t : {&x, &w, &b})
      EXPECT_TRUE(allclose(t->grad(mine), t->grad(ref), 1e-4, 1e-5)) << d;
  }
}

TEST(UserOp, ReducedOutputsKeepOrDropTheDims) {
  manual_seed(5);
  static const UserOp op = [] {
    UserOpDef def;
    def.name = "test_sum_sq_and_max";
    def.infer = [](std::span<const Tensor> in, std::span<const double>) {
      return std::vector<TensorMeta>{{Shape{in[0].size(0), 1}, in[0].dtype()},
                                     {Shape{in[0].size(0)}, in[0].dtype()}};
    };
    def.kernel = [](const UserCall&) {
      return row_reduce_op_kernel(
          {1}, 1, {{Combiner::Sum, kF32}, {Combiner::Max, kF32}}, false,
          [](std::span<const Expr> in, std::span<const Expr>) {
            return std::vector<Expr>{in[0] * in[0], in[0]};
          },
          [](std::span<const Expr> r, std::span<const Expr>, std::span<const Expr>) {
            return std::vector<Expr>{r[0], r[1]};
          });
    };
    return register_op(std::move(def));
  }();
  for (Device d : host_devices()) {
    Tensor x = randn({17, 45}).to(d);
    TensorList out = op.call({x});
    EXPECT_TRUE(allclose(out[0], sum(x * x, {1}, true), 1e-5, 1e-5)) << d;
    EXPECT_TRUE(equal(out[1], amax(x, {1})));
  }
}

TEST(UserOp, BadCallsAndRegistrationsThrow) {
  const UserOp ln = layer_norm_op();
  Tensor x = randn({2, 4}), w = randn({4});
  EXPECT_THROW(ln({x, w, w}), ValueError);                  // eps missing
  EXPECT_THROW(ln({x, w}, {1e-5}), ShapeError);             // the op's own inference
  EXPECT_THROW(pointwise_op()({x, w}, {1.0}), ValueError);  // two outputs: call() gives them
  EXPECT_THROW(register_op(layer_norm_def("test_layer_norm")), ValueError);  // taken
  EXPECT_THROW(register_op(UserOpDef{}), ValueError);
  EXPECT_THROW(find_user_op("no_such_user_op"), ValueError);
  EXPECT_THROW(UserOp()({x}), ValueError);
  // No VJP: the forward records, backward says why it cannot go on.
  Tensor xa = randn({3, 4}).requires_grad_();
  Tensor y = pointwise_op().call({xa, xa}, {1.0})[0];
  EXPECT_THROW(y.sum().backward(), NotImplementedError);
}

// A missing compiler: a DeviceError that names the op and the compiler, or the fallback.
TEST(UserOp, MissingCompilerFailsCleanlyOrFallsBack) {
  ember::test::ScratchDir dir;
  KernelCacheOptions opts;
  opts.root = dir.path.string();
  std::vector<std::string> warnings;
  opts.message = [&](const std::string& m) { warnings.push_back(m); };
  cpu::jit::HostToolchainOptions tco;
  tco.compiler = "/nonexistent/ember-no-such-c++";
  KernelCache cache(std::make_shared<cpu::jit::HostToolchain>(tco), opts);
  detail::set_user_op_cache(&cache);
  const UserOp ln = layer_norm_op();
  Tensor x = randn({6, 10}), w = randn({10}), b = randn({10});
  try {
    ln({x, w, b}, {1e-5});
    ADD_FAILURE() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("[test_layer_norm]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ember-no-such-c++"), std::string::npos) << e.what();
  }
  UserOpDef def = layer_norm_def("test_layer_norm_with_fallback");
  def.fallback = [](std::span<const Tensor> in, std::span<const double> p) {
    return TensorList{layer_norm(in[0], {in[0].size(-1)}, in[1], in[2], p[0])};
  };
  const UserOp lf = register_op(std::move(def));
  for (Device d : host_devices())
    EXPECT_TRUE(equal(lf({x.to(d), w.to(d), b.to(d)}, {1e-5}).to(Device::flex()),
                      layer_norm(x, {10}, w, b, 1e-5)))
        << d;
  EXPECT_EQ(user_op_stats(lf).fallback_calls, 3);
  EXPECT_EQ(user_op_stats(lf).jit_calls, 0);
  detail::set_user_op_cache(nullptr);
  EXPECT_TRUE(allclose(lf({x, w, b}, {1e-5}), layer_norm(x, {10}, w, b, 1e-5), 1e-5, 1e-5));
  EXPECT_EQ(user_op_stats(lf).jit_calls, 1);
}

}  // namespace
}  // namespace ember::kl
