// The fusion layer on Device::cpu(): ops queue and run at a sync point, elementwise chains become
// one generated kernel whose results equal the eager kernels', intermediates nobody holds are
// never stored, and program order holds across in-place writes, errors and threads.
#include "ember/fusion.h"

#include <gtest/gtest.h>

#include <thread>

#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "ember/tensor_impl.h"

namespace ember {
namespace {

struct WaitForKernels {
  WaitForKernels() { fusion::set_wait_for_kernels(true); }
  ~WaitForKernels() { fusion::set_wait_for_kernels(false); }
};

Tensor chain(const Tensor& x) { return (x * 2 + 1).relu() * x; }

TEST(Fusion, CpuIsLazyAndItsEagerFormIsNot) {
  EXPECT_TRUE(Device::cpu().is_lazy());
  EXPECT_FALSE(Device::cpu().eager().is_lazy());
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cpu().eager().str(), "cpu(eager)");
  Tensor x = arange(6, {kF32, Device::cpu()});
  Tensor y = x * 3;
  EXPECT_TRUE(detail::is_pending(y));  // queued, not run
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 6, 9, 12, 15}));
  EXPECT_FALSE(detail::is_pending(y));
}

TEST(Fusion, AnElementwiseChainIsOneKernelEqualToEager) {
  WaitForKernels wait;
  manual_seed(1);
  Tensor xf = randn({1000, 37});
  Tensor want = chain(xf);
  Tensor x = xf.to(Device::cpu());
  fusion::reset_stats();
  Tensor got = chain(x);
  synchronize(Device::cpu());
  const fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.recorded, 4);
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.fused_ops, 4);
  EXPECT_EQ(s.eager_ops, 0);
  EXPECT_TRUE(equal(got.to(Device::flex()), want));  // bitwise: the same operations in order
}

TEST(Fusion, IntermediatesNobodyHoldsAreNeverStored) {
  WaitForKernels wait;
  Tensor x = ones({1 << 16}, {.device = Device::cpu()});
  synchronize(Device::cpu());
  Tensor warm = chain(x);  // plans and compiles once
  synchronize(Device::cpu());
  warm = Tensor();
  const int64_t before = detail::live_storage_bytes();
  Tensor y = chain(x);
  synchronize(Device::cpu());
  EXPECT_EQ(detail::live_storage_bytes() - before, int64_t(y.nbytes()));
  // A held intermediate is stored too, with the right values.
  Tensor a = x * 2 + 1;
  Tensor b = a.relu() * x;
  EXPECT_TRUE(equal(a.to(Device::flex()), full({1 << 16}, 3.0f)));
  EXPECT_TRUE(equal(b.to(Device::flex()), full({1 << 16}, 3.0f)));
}

TEST(Fusion, RepeatedStepsReuseTheirPlan) {
  Tensor x = ones({64}, {.device = Device::cpu()});
  synchronize(Device::cpu());
  for (int i = 0; i < 3; ++i) {
    Tensor y = chain(x);
    synchronize(Device::cpu());
  }
  fusion::reset_stats();
  for (int i = 0; i < 5; ++i) {
    Tensor y = chain(x);
    synchronize(Device::cpu());
  }
  EXPECT_EQ(fusion::stats().plan_hits, 5);
  EXPECT_EQ(fusion::stats().plan_misses, 0);
}

TEST(Fusion, InPlaceWritesKeepProgramOrder) {
  Tensor x = full({4}, 1.0f, {.device = Device::cpu()});
  Tensor y = x * 2;   // reads x before the write below
  x.add_(10);         // queued: x's storage now waits on the queue
  Tensor z = x * 2;   // reads x after it
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4, 2));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(4, 22));
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 11));
  // A write into a view of a queued result.
  Tensor w = x * 1;
  w.narrow(0, 1, 2).fill_(0);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{11, 0, 0, 11}));
}

TEST(Fusion, AFailingQueuedOpPoisonsWhatItWouldHaveWritten) {
  Tensor a = tensor({4, 6}, kI64, Device::cpu());
  Tensor b = tensor({2, 0}, kI64, Device::cpu());
  Tensor q = floor_divide(a, b);  // integer division by zero: found when the queue runs
  Tensor r = q + 1;
  EXPECT_THROW(q.item<int64_t>(), ValueError);
  EXPECT_THROW(r.to_vector<int64_t>(), ValueError);  // never garbage
  Tensor ok = a + 1;  // the device keeps working
  EXPECT_EQ(ok.to_vector<int64_t>(), (std::vector<int64_t>{5, 7}));
}

TEST(Fusion, ChecksRunWithTheQueue) {
  Tensor p = tensor({0.5f, 1.5f}, {}, Device::cpu()) * 1;  // out of [0, 1], not yet computed
  Tensor t = tensor({1.f, 0.f}, {}, Device::cpu());
  Tensor loss = nn::functional::binary_cross_entropy(p, t);
  EXPECT_THROW(synchronize(Device::cpu()), ValueError);
}

TEST(Fusion, AnotherThreadReadsWhatThisOneQueued) {
  Tensor y;
  std::thread([&] { y = arange(5, {kF32, Device::cpu()}) * 2 + 1; }).join();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9}));
  Tensor z = tensor({1.f, 2.f}, {}, Device::cpu()) * 3;
  std::vector<float> seen;
  std::thread([&] { seen = z.to_vector<float>(); }).join();
  EXPECT_EQ(seen, (std::vector<float>{3, 6}));
}

TEST(Fusion, GradientsOnTheLazyDevice) {
  Tensor w = randn({8, 4}, {.device = Device::cpu()}).requires_grad_();
  Tensor x = randn({16, 8}, {.device = Device::cpu()});
  Tensor loss = (matmul(x, w).relu() * 0.5 + 1).sum();
  Gradients g = loss.backward();
  Tensor w_ref = w.detach().to(Device::flex()).requires_grad_();
  Tensor ref = (matmul(x.to(Device::flex()), w_ref).relu() * 0.5 + 1).sum();
  Gradients gr = ref.backward();
  EXPECT_TRUE(allclose(w.grad(g).to(Device::flex()), w_ref.grad(gr), 1e-6, 1e-6));
}

// A reduction takes the pointwise chain that makes its input as its prologue: one kernel, the
// chain's values never stored.
TEST(Fusion, AReductionFusesTheChainBeforeIt) {
  WaitForKernels wait;
  manual_seed(2);
  Tensor xf = randn({64, 300});
  Tensor x = xf.to(Device::cpu());
  struct Case {
    const char* name;
    Tensor (*f)(const Tensor&);
  };
  const Case cases[] = {
      {"sum all", [](const Tensor& t) { return chain(t).sum(); }},
      {"sum dim 1", [](const Tensor& t) { return sum(chain(t), {1}); }},
      {"sum dim 0 keepdim", [](const Tensor& t) { return sum(chain(t), {0}, true); }},
      {"mean dim 1", [](const Tensor& t) { return mean(chain(t), {1}); }},
      {"amax dim 1", [](const Tensor& t) { return amax(chain(t), {1}); }},
      {"amin all", [](const Tensor& t) { return amin(chain(t)); }},
      {"softmax", [](const Tensor& t) { return softmax(t * 0.5, 1); }},
      {"softmax dim 0", [](const Tensor& t) { return softmax(t * 0.5, 0); }},
      {"log_softmax", [](const Tensor& t) { return log_softmax(t - 1, 1); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor want = c.f(xf);
    fusion::reset_stats();
    Tensor got = c.f(x);
    synchronize(Device::cpu());
    const fusion::Stats s = fusion::stats();
    EXPECT_EQ(s.fused_kernels, 1);
    EXPECT_EQ(s.eager_ops, 0);
    EXPECT_EQ(s.fused_ops, s.recorded);
    EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-5, 1e-5));
  }
}

TEST(Fusion, NormsAreOneKernel) {
  WaitForKernels wait;
  manual_seed(3);
  Tensor xf = randn({33, 7, 40}), w = randn({40}), b = randn({40});
  Tensor x = xf.to(Device::cpu()), wc = w.to(Device::cpu()), bc = b.to(Device::cpu());
  synchronize(Device::cpu());
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    Tensor want = k == 0   ? layer_norm(xf + 1, {40}, w, b)
                  : k == 1 ? layer_norm(xf, {7, 40})
                           : rms_norm(xf * 2, {40}, w);
    fusion::reset_stats();
    Tensor got = k == 0   ? layer_norm(x + 1, {40}, wc, bc)
                 : k == 1 ? layer_norm(x, {7, 40})
                          : rms_norm(x * 2, {40}, wc);
    synchronize(Device::cpu());
    EXPECT_EQ(fusion::stats().fused_kernels, 1);
    EXPECT_EQ(fusion::stats().eager_ops, 0);
    EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-5, 1e-5));
  }
}

// A value the chain makes that something else still needs keeps the chain a kernel of its own.
TEST(Fusion, AChainValueHeldElsewhereIsStoredBeforeTheReduction) {
  WaitForKernels wait;
  Tensor xf = randn({128, 64});
  Tensor x = xf.to(Device::cpu());
  fusion::reset_stats();
  Tensor y = chain(x);
  Tensor s = y.sum();
  synchronize(Device::cpu());
  EXPECT_EQ(fusion::stats().fused_kernels, 2);  // the chain (y is held), then the sum
  EXPECT_TRUE(allclose(s.to(Device::flex()), chain(xf).sum(), 1e-5, 1e-4));
  EXPECT_TRUE(equal(y.to(Device::flex()), chain(xf)));
}

// A whole-tensor reduction of a large input splits into partial rows: still right, and exact
// for max.
TEST(Fusion, AWholeReductionOfALargeTensorSplits) {
  WaitForKernels wait;
  manual_seed(4);
  Tensor xf = randn({1 << 20});
  Tensor x = xf.to(Device::cpu());
  Tensor m = amax(chain(x)), s = chain(x).sum(), mu = mean(x * 3);
  synchronize(Device::cpu());
  EXPECT_TRUE(equal(m.to(Device::flex()), amax(chain(xf))));
  EXPECT_TRUE(allclose(s.to(Device::flex()), chain(xf).sum(), 1e-4, 1e-2));
  EXPECT_TRUE(allclose(mu.to(Device::flex()), mean(xf * 3), 1e-4, 1e-5));
  EXPECT_EQ(s.dim(), 0);
}

// A view of a value the queue makes reads memory: it runs after the kernel that writes it.
TEST(Fusion, AViewOfAQueuedValueReadsItAfterItIsWritten) {
  WaitForKernels wait;
  Tensor xf = randn({48, 48});
  Tensor x = xf.to(Device::cpu());
  Tensor y = x * 2;
  Tensor w = y.t() + y;
  EXPECT_TRUE(equal(w.to(Device::flex()), (xf * 2).t() + xf * 2));
}

// In-place updates (what optimizers do) are stores of the kernel that computes them; a later
// read of the updated tensor in the same kernel takes the new value.
TEST(Fusion, InPlaceUpdatesAreStoresOfOneKernel) {
  WaitForKernels wait;
  Tensor pf = randn({300, 17}), mf = randn({300, 17}), gf = randn({300, 17});
  auto step = [](Tensor p, Tensor m, const Tensor& g) {
    m.mul_(0.9).add_(g, 0.1);  // m = 0.9 m + 0.1 g
    p.sub_(m * 0.01);          // reads the new m
    p.mul_(0.5);
  };
  Tensor p = pf.to(Device::cpu()), m = mf.to(Device::cpu()), g = gf.to(Device::cpu());
  synchronize(Device::cpu());
  Tensor pe = pf.clone(), me = mf.clone();
  step(pe, me, gf);
  fusion::reset_stats();
  step(p, m, g);
  synchronize(Device::cpu());
  EXPECT_EQ(fusion::stats().fused_kernels, 1);
  EXPECT_EQ(fusion::stats().eager_ops, 0);
  EXPECT_TRUE(equal(p.to(Device::flex()), pe));
  EXPECT_TRUE(equal(m.to(Device::flex()), me));
  // A transposed read of the updated tensor cannot take the kernel's value: two kernels, right.
  Tensor q = randn({17, 17}, {.device = Device::cpu()});
  Tensor qe = q.to(Device::flex());
  synchronize(Device::cpu());
  q.mul_(2);
  Tensor r = q.t() + 1;
  qe.mul_(2);
  EXPECT_TRUE(equal(r.to(Device::flex()), qe.t() + 1));
}

// A residual add before a norm is the norm kernel's prologue even when the sum is kept (it is
// the next block's residual): the kernel writes it beside the norm.
TEST(Fusion, AResidualAddAndTheNormAfterItAreOneKernel) {
  WaitForKernels wait;
  Tensor xf = randn({16, 10, 64}), af = randn({16, 10, 64}), w = randn({64}), b = randn({64});
  Tensor x = xf.to(Device::cpu()), a = af.to(Device::cpu());
  Tensor wc = w.to(Device::cpu()), bc = b.to(Device::cpu());
  synchronize(Device::cpu());
  fusion::reset_stats();
  Tensor h = x + a;
  Tensor y = layer_norm(h, {64}, wc, bc);
  Tensor z = rms_norm(h * 2, {64}, wc);  // h is read again after the first kernel: memory
  synchronize(Device::cpu());
  EXPECT_EQ(fusion::stats().fused_kernels, 2);
  EXPECT_EQ(fusion::stats().eager_ops, 0);
  EXPECT_TRUE(equal(h.to(Device::flex()), xf + af));
  EXPECT_TRUE(allclose(y.to(Device::flex()), layer_norm(xf + af, {64}, w, b), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(z.to(Device::flex()), rms_norm((xf + af) * 2, {64}, w), 1e-5, 1e-5));
}

// Matrix products queue too; an activation that is the only reader of a product's value is the
// product's oneDNN epilogue (one primitive; the product never reaches memory).
TEST(Fusion, AnActivationAfterALinearIsItsEpilogue) {
  WaitForKernels wait;
  Tensor xf = randn({96, 64}), wf = randn({32, 64}), bf = randn({32}), w2f = randn({8, 32});
  Tensor x = xf.to(Device::cpu()), w = wf.to(Device::cpu()), b = bf.to(Device::cpu());
  Tensor w2 = w2f.to(Device::cpu());
  synchronize(Device::cpu());
  auto net = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& w2) {
    Tensor h = gelu(linear(x, w, b));
    return sigmoid(matmul(h, w2.t()));
  };
  fusion::reset_stats();
  Tensor y = net(x, w, b, w2);
  synchronize(Device::cpu());
  Tensor want = net(xf, wf, bf, w2f);
  EXPECT_TRUE(allclose(y.to(Device::flex()), want, 1e-4, 1e-5));
  if (cpu::dnnl_available()) {
    EXPECT_EQ(fusion::stats().fused_kernels, 2);
    EXPECT_EQ(fusion::stats().fused_ops, 4);
    EXPECT_EQ(fusion::stats().eager_ops, 0);
  } else {  // a build without oneDNN: the products and activations run on their own
    EXPECT_EQ(fusion::stats().eager_ops, 4);
  }
}

// Convolutions queue on cpu (with oneDNN) the same way: a ReLU or a clamp with constant bounds
// (relu6, ONNX's Clip) that only reads a convolution's value is its oneDNN post-op.
TEST(Fusion, AnActivationAfterAConvolutionIsItsEpilogue) {
  WaitForKernels wait;
  namespace F = nn::functional;
  Tensor xf = randn({1, 8, 14, 14}), wf = randn({16, 8, 3, 3}), bf = randn({16});
  Tensor w2f = randn({16, 1, 3, 3});
  Tensor x = xf.to(Device::cpu()), w = wf.to(Device::cpu()), b = bf.to(Device::cpu());
  Tensor w2 = w2f.to(Device::cpu());
  synchronize(Device::cpu());
  auto net = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& w2) {
    Tensor h = relu(F::conv2d(x, w, b, {.padding = {1}}));
    h = clamp(F::conv2d(h, w2, Tensor(), {.padding = {1}, .groups = 16}), 0.0, 6.0);
    return clamp(F::conv2d(h, w2, Tensor(), {.stride = {2}, .groups = 16}), -0.5, 0.5);
  };
  fusion::reset_stats();
  Tensor y = net(x, w, b, w2);
  synchronize(Device::cpu());
  Tensor want = net(xf, wf, bf, w2f);
  EXPECT_TRUE(allclose(y.to(Device::flex()), want, 1e-4, 1e-5));
  if (cpu::dnnl_available()) {
    EXPECT_EQ(fusion::stats().fused_kernels, 3);  // three conv + activation pairs
    EXPECT_EQ(fusion::stats().fused_ops, 6);
    EXPECT_EQ(fusion::stats().eager_ops, 0);
  }
  // A residual add after a convolution (with a ReLU after it, as in ResNet, or without, as in
  // MobileNetV2) is its sum post-op; an add of the convolution's value to itself is not.
  auto res_net = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& w2) {
    Tensor s = x * 0.5;
    Tensor h = relu(F::conv2d(x, w, b, {.padding = {1}}) + s.repeat({1, 2, 1, 1}));
    Tensor c = F::conv2d(h, w2, Tensor(), {.padding = {1}, .groups = 16});
    Tensor z = F::conv2d(h, w2, Tensor(), {.padding = {1}, .groups = 16});
    return (h + c) * 2 + (z + z);
  };
  fusion::reset_stats();
  Tensor yr = res_net(x, w, b, w2);
  synchronize(Device::cpu());
  // Values reach a few hundred: oneDNN's and flex's sums round differently by a few ulp of those.
  EXPECT_TRUE(allclose(yr.to(Device::flex()), res_net(xf, wf, bf, w2f), 1e-4, 1e-3));
  if (cpu::dnnl_available()) EXPECT_GE(fusion::stats().fused_ops, 5);  // conv+add+relu, conv+add
  // Weights written in place in the same queue (an optimizer step), and a convolution split over
  // two threads whose output the program holds (a placed output, its storage pending while the
  // queue runs): the pool's threads never ask the queue for a pending storage (they hung).
  {
    const int threads = flex::num_threads();
    flex::set_num_threads(2);
    Tensor wq = w.clone();
    synchronize(Device::cpu());
    wq.mul_(0.5);
    // The input a view into a queued value (its storage pending while the queue runs).
    Tensor x2 = (x.repeat({2, 2, 2, 2}) * 2.0).narrow(1, 8, 8);  // big enough to split
    Tensor q = F::conv2d(x2, wq, b, {.padding = {1}});
    Tensor q1 = F::conv2d(x, wq, b, {.padding = {1}});
    synchronize(Device::cpu());
    flex::set_num_threads(threads);
    EXPECT_TRUE(allclose(q.to(Device::flex()),
                         F::conv2d(xf.repeat({2, 1, 2, 2}) * 2.0, wf * 0.5, bf, {.padding = {1}}),
                         1e-4, 1e-4));
    EXPECT_TRUE(
        allclose(q1.to(Device::flex()), F::conv2d(xf, wf * 0.5, bf, {.padding = {1}}), 1e-4, 1e-4));
  }
  // A training step on two threads (the weights' in-place update queued before the next step's
  // convolutions): it hung when the pool's threads read operands inside the queue's run.
  {
    const int threads = flex::num_threads();
    flex::set_num_threads(2);
    const Device dev = Device::cpu().autodiff();
    nn::Conv2d conv({.in = 8, .out = 32, .kernel = 3, .padding = 1});
    conv.to(dev);
    optim::SGD opt(conv.parameters(), {.lr = 0.01});
    Tensor xb = randn({4, 8, 14, 14}).to(dev);
    for (int step = 0; step < 3; ++step) {
      Tensor loss = relu(conv(xb)).mean();
      Gradients g = loss.backward();
      opt.step(g);
    }
    synchronize(Device::cpu());
    flex::set_num_threads(threads);
    EXPECT_TRUE(std::isfinite(relu(conv(xb)).mean().item<float>()));
  }
  // A convolution whose value is also read elsewhere keeps it: the activation runs on its own.
  Tensor c = F::conv2d(x, w, b, {.padding = {1}});
  Tensor r = relu(c) + c;
  EXPECT_TRUE(allclose(
      r.to(Device::flex()),
      relu(F::conv2d(xf, wf, bf, {.padding = {1}})) + F::conv2d(xf, wf, bf, {.padding = {1}}), 1e-4,
      1e-5));
}

}  // namespace
}  // namespace ember
