// The fusion patterns beyond pointwise chains and plain row reductions, on a GPU: row kernels
// with an elementwise epilogue (softmax, log_softmax and cross-entropy backward), the
// cross-entropy loss kernel, sibling reductions (a norm's affine gradients) and multi-tensor
// optimizer steps. Each runs on cuda:0 and on the cpu and must give the cpu's values with the
// cpu's kernel count; a bad target fails as on the host, at the next sync. Every test skips
// without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "cuda/cuda_util.h"
#include "ember/cuda.h"
#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/optim/optimizers.h"

namespace ember {
namespace {

Device gpu() { return Device::cuda(0); }

struct Wait {
  Wait() { fusion::set_wait_for_kernels(true); }
  ~Wait() { fusion::set_wait_for_kernels(false); }
};

// The counters of `f`'s second run on device d (the first plans and compiles).
template <class F>
fusion::Stats second_run(Device d, F&& f) {
  f();
  synchronize(d);
  fusion::reset_stats();
  f();
  synchronize(d);
  return fusion::stats();
}

bool close(const Tensor& got, const Tensor& want, double tol) {
  return allclose(got.to(Device::flex()), want.to(Device::flex()), tol, tol);
}

// `f` on the cpu and on the GPU (inputs made by `make` on each): equal values within `tol` and
// the cpu's kernel count, which must show that the pattern fused (`expect`, when >= 0). An op
// the cpu runs eagerly (a group of one op) is a generated kernel on the GPU
// (Executor::single_op_kernels): each may add one.
void same_on_gpu(const std::string& what, const std::function<Tensor(Device)>& f, double tol,
                 int64_t expect = -1) {
  Wait wait;
  Tensor want, got;
  const fusion::Stats c = second_run(Device::cpu(), [&] { want = f(Device::cpu()); });
  const fusion::Stats g = second_run(gpu(), [&] { got = f(gpu()); });
  EXPECT_EQ(got.device().backend(), Backend::Cuda) << what;
  EXPECT_TRUE(close(got, want, tol)) << what << "\n" << got << "\n" << want;
  EXPECT_LE(g.eager_ops, c.eager_ops) << what;
  EXPECT_GE(g.fused_kernels, c.fused_kernels) << what;
  EXPECT_LE(g.fused_kernels, c.fused_kernels + c.eager_ops) << what;
  if (c.eager_ops == 0) EXPECT_EQ(g.fused_kernels, c.fused_kernels) << what;
  if (expect >= 0) EXPECT_EQ(g.fused_kernels, expect) << what;
}

TEST(CudaFusionPatterns, RowEpilogues) {
  EMBER_REQUIRE_GPU();
  manual_seed(7);
  const Tensor xf = randn({96, 130}), gf = randn({96, 130});
  same_on_gpu(
      "centering",
      [&](Device d) {
        Tensor x = xf.to(d);
        return (x - mean(x, {1}, true)) * 3;
      },
      1e-5, 1);
  for (bool log : {false, true}) {
    same_on_gpu(
        log ? "log_softmax backward" : "softmax backward",
        [&](Device d) {
          Tensor x = xf.to(d.autodiff()).requires_grad_();
          Tensor y = log ? log_softmax(x, 1) : softmax(x, 1);
          return x.grad(y.backward({.grad_output = gf.to(d)}));
        },
        1e-5);
  }
  // Cross-entropy's backward with ignored rows: the one-hot select, the row sum and
  // log_softmax's backward in one row kernel.
  Tensor yf = randint(0, 130, {96}, {.dtype = kI64});
  yf = where(lt(arange(96, {kI64}), 5), Scalar(int64_t(-100)), yf);
  for (const char* red : {"mean", "sum"})
    same_on_gpu(
        std::string("cross-entropy backward ") + red,
        [&](Device d) {
          Tensor x = xf.to(d.autodiff()).requires_grad_();
          Tensor l = cross_entropy(x, yf.to(d), {.reduction = red});
          return x.grad(l.backward());
        },
        1e-5);
}

TEST(CudaFusionPatterns, CrossEntropyLossKernel) {
  EMBER_REQUIRE_GPU();
  struct Case {
    const char* what;
    Shape x;
    CrossEntropyOptions o;
    bool scaled = false;
    DType dtype = kF32;
  };
  const Tensor w = rand({10}) + 0.5;
  const Case cases[] = {
      {"mean", {64, 10}, {}},
      {"sum", {64, 10}, {.reduction = "sum"}},
      {"none", {64, 10}, {.reduction = "none"}},
      {"weight mean", {64, 10}, {.weight = w}},
      {"prologue", {64, 10}, {}, true},
      {"long rows", {16, 5000}, {}},
      {"f64", {32, 10}, {.weight = w}, false, kF64},
      {"1-d", {10}, {}},
      {"spatial", {6, 10, 7}, {.reduction = "none"}},
      {"spatial mean", {6, 10, 7}, {.weight = w}},
  };
  for (const Case& c : cases) {
    manual_seed(11);
    const int64_t classes = c.x.size() == 1 ? c.x[0] : c.x[1];
    Shape ts;
    for (size_t d = 0; d < c.x.size(); ++d)
      if (d != (c.x.size() == 1 ? 0 : 1)) ts.push_back(c.x[d]);
    const Tensor xf = randn(c.x).to(c.dtype);
    Tensor yf = randint(0, classes, ts, {.dtype = kI64});
    if (yf.numel() > 4)
      yf = where(lt(arange(yf.numel(), {kI64}).reshape(ts), 3), Scalar(int64_t(-100)), yf);
    same_on_gpu(
        c.what,
        [&](Device d) {
          CrossEntropyOptions o = c.o;
          if (o.weight.defined()) o.weight = o.weight.to(c.dtype).to(d);
          Tensor x = xf.to(d);
          return cross_entropy(c.scaled ? x * 2 : x, yf.to(d), o);
        },
        1e-5, 2);  // the rows, then their sum
  }
}

// A target out of range: the loss kernel's status word, raised as nll_loss's own IndexError at
// the next sync (here the read); the device works on afterwards.
TEST(CudaFusionPatterns, ABadTargetFailsAtTheNextSync) {
  EMBER_REQUIRE_GPU();
  Wait wait;
  Tensor x = randn({4, 5}).to(gpu());
  Tensor bad = tensor<int64_t>({0, 7, 1, 2}).to(gpu());
  Tensor l = cross_entropy(x, bad);
  try {
    (void)l.item<float>();
    ADD_FAILURE() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("[cross_entropy] target 7 is out of bounds for 5 classes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)l.item<float>(), IndexError);  // what it wrote is poisoned, not garbage
  Tensor good = tensor<int64_t>({0, 4, 1, 2}).to(gpu());
  const Tensor want = cross_entropy(x.to(Device::cpu()), good.to(Device::cpu()));
  EXPECT_NEAR(cross_entropy(x, good).item<float>(), want.item<float>(), 1e-5);
  // synchronize() is a sync too.
  Tensor l2 = cross_entropy(x, tensor<int64_t>({0, 1, -3, 2}).to(gpu()));
  EXPECT_THROW(synchronize(gpu()), IndexError);
  EXPECT_NEAR(cross_entropy(x, good).item<float>(), want.item<float>(), 1e-5);
}

TEST(CudaFusionPatterns, SiblingReductionsAndNormBackward) {
  EMBER_REQUIRE_GPU();
  manual_seed(22);
  const Tensor af = randn({64, 48}), bf = randn({64, 48});
  same_on_gpu(
      "sibling sums",
      [&](Device d) {
        Tensor a = af.to(d), b = bf.to(d);
        Tensor s1 = sum(a * b, {0}), s2 = sum(a, {0});
        return stack({s1, s2});
      },
      1e-5);
  const Tensor xf = randn({8, 16, 32}), wf = randn({32}), bnf = randn({32}),
               gf = randn({8, 16, 32});
  // Without its one-kernel GPU form (EMBER_CUDA_NORM_BACKWARD=0) a norm's backward fuses in
  // pieces on cuda: the values must still match, the count is not the cpu's.
  const char* nb = std::getenv("EMBER_CUDA_NORM_BACKWARD");
  if (nb && std::string(nb) == "0") {
    Wait wait;
    auto f = [&](Device d) {
      Tensor x = xf.to(d.autodiff()).requires_grad_(), w = wf.to(d.autodiff()).requires_grad_(),
             b = bnf.to(d.autodiff()).requires_grad_();
      Gradients g = layer_norm(x, {32}, w, b, 1e-5).backward({.grad_output = gf.to(d)});
      return cat({x.grad(g).reshape({-1}), w.grad(g), b.grad(g)});
    };
    EXPECT_TRUE(close(f(gpu()), f(Device::cpu()), 1e-4));
    return;
  }
  same_on_gpu(
      "layer_norm backward",
      [&](Device d) {
        Tensor x = xf.to(d.autodiff()).requires_grad_(), w = wf.to(d.autodiff()).requires_grad_(),
               b = bnf.to(d.autodiff()).requires_grad_();
        Gradients g = layer_norm(x, {32}, w, b, 1e-5).backward({.grad_output = gf.to(d)});
        return cat({x.grad(g).reshape({-1}), w.grad(g), b.grad(g)});
      },
      1e-4);
}

using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

// Four steps over parameters of several shapes (one large enough for several chunks).
std::vector<Tensor> train(Device d, const MakeOpt& make) {
  manual_seed(3);
  std::vector<Tensor> params, grads;
  for (const Shape& s : std::vector<Shape>{{64, 33}, {33}, {7, 5, 3}, {1}, {200000}}) {
    params.push_back(randn(s).to(d).requires_grad_());
    grads.push_back(randn(s).to(d));
  }
  std::unique_ptr<optim::Optimizer> opt = make(params);
  for (int step = 0; step < 4; ++step) {
    Gradients g;
    for (size_t i = 0; i < params.size(); ++i) g.set(params[i], grads[i] * double(step + 1));
    opt->step(g);
  }
  return params;
}

TEST(CudaFusionPatterns, MultiTensorOptimizerSteps) {
  EMBER_REQUIRE_GPU();
  const MakeOpt opts[] = {
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::SGD>(
            std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2});
      },
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::AdamW>(std::move(p),
                                              optim::AdamWOptions{.lr = 1e-2, .weight_decay = 0.1});
      },
  };
  for (size_t k = 0; k < std::size(opts); ++k) {
    same_on_gpu(
        "optimizer " + std::to_string(k),
        [&](Device d) {
          std::vector<Tensor> p = train(d, opts[k]);
          std::vector<Tensor> flat;
          for (const Tensor& t : p) flat.push_back(t.detach().reshape({-1}));
          return cat(flat);
        },
        1e-5);
    // One step alone: one kernel over every parameter.
    Wait wait;
    manual_seed(4);
    std::vector<Tensor> params;
    for (const Shape& s : std::vector<Shape>{{64, 33}, {33}, {200000}})
      params.push_back(randn(s).to(gpu()).requires_grad_());
    auto opt = opts[k](params);
    Gradients g;
    for (const Tensor& p : params) g.set(p, ones_like(p.detach()));
    for (int warm = 0; warm < 2; ++warm) opt->step(g);  // the second step's plan repeats
    synchronize(gpu());
    fusion::reset_stats();
    opt->step(g);
    synchronize(gpu());
    EXPECT_EQ(fusion::stats().fused_kernels, 1) << k;
  }
}

}  // namespace
}  // namespace ember
