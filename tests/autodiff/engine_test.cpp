// The autodiff engine: recording only when needed, backward through chains and broadcasting,
// accumulation, retain_graph, in-place edits of saved tensors, leaves, memory, checkpointing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ember/ember.h"
#include "ember/fusion.h"

namespace ember {
namespace {

Device ad() { return Device::flex().autodiff(); }

TEST(Autodiff, DeviceLayerAndRequiresGrad) {
  EXPECT_TRUE(ad().has_autodiff());
  EXPECT_EQ(ad().str(), "flex+autodiff");
  EXPECT_EQ(ad().autodiff(), ad());
  EXPECT_TRUE(Device::cpu().autodiff().gradient_checkpointing().has_autodiff());
  Tensor w = randn({3}).requires_grad_();
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.device().has_autodiff());  // requires_grad_ moves it onto autodiff()
  EXPECT_THROW(arange(3).requires_grad_(), DTypeError);
  Tensor y = w * 2;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  Tensor z = (w > 0);
  EXPECT_FALSE(z.requires_grad());  // comparisons are not differentiable
  {
    NoGradGuard g;
    EXPECT_FALSE((w * 2).requires_grad());
  }
  Tensor plain = ones({3}, {.device = ad()});
  EXPECT_FALSE((plain * 2).requires_grad());  // nothing requires grad: nothing recorded
  EXPECT_FALSE(w.detach().requires_grad());
}

TEST(Autodiff, ChainRuleWithBroadcasting) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = tensor(std::vector<double>{0.5, -1.0}, {2, 1}).requires_grad_();
  Tensor loss = (exp(a) * b + a * a).sum();  // [2,3]
  Gradients g = loss.backward();
  // d/da = b.sum() * exp(a) + 2 * a * 2 rows;  d/db = sum_j exp(a_j)
  std::vector<double> ga = a.grad(g).to_vector<double>(), gb = b.grad(g).to_vector<double>();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(ga[j], -0.5 * std::exp(j + 1.0) + 4.0 * (j + 1), 1e-12);
  double se = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(gb[0], se, 1e-12);
  EXPECT_NEAR(gb[1], se, 1e-12);
  EXPECT_EQ(b.grad(g).shape(), Shape({2, 1}));
}

TEST(Autodiff, ErrorsNameWhatWentWrong) {
  Tensor a = randn({3}).requires_grad_();
  Tensor y = a * 2;
  EXPECT_THROW(y.backward(), ShapeError);  // non-scalar without a grad_output
  Gradients g = y.backward({.grad_output = ones({3})});
  EXPECT_TRUE(allclose(a.grad(g), full({3}, 2.0)));
  Tensor c = randn({3});
  EXPECT_THROW(g.get(c), ValueError);  // does not require grad
  EXPECT_THROW(c.sum().backward(), ValueError);
  // backward twice without retain_graph
  Tensor l = (a * a).sum();
  l.backward();
  EXPECT_THROW(l.backward(), ValueError);
  Tensor l2 = (a * a).sum();
  l2.backward({.retain_graph = true});
  EXPECT_NO_THROW(l2.backward());
}

TEST(Autodiff, ModifyingASavedTensorInPlaceIsCaught) {
  Tensor a = randn({4}).requires_grad_();
  Tensor b = a * 3;
  Tensor c = b * b;  // saves b
  b.add_(1);         // in-place edit of a saved tensor
  try {
    c.sum().backward();
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("modified in place"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.add_(1), ValueError);  // a leaf that requires grad
  {
    NoGradGuard g;
    EXPECT_NO_THROW(a.add_(1));  // the optimizer's way
  }
}

TEST(Autodiff, InPlaceCopyRebasesHistory) {
  Tensor a = randn({3}).requires_grad_();
  Tensor buf = zeros({3}, {.device = ad()});
  buf.copy_(a * 2);
  Gradients g = (buf * buf).sum().backward();
  EXPECT_TRUE(allclose(a.grad(g), a.detach() * 8));
}

TEST(Autodiff, AccumulatesAcrossBackwardCallsWhenAsked) {
  Tensor a = randn({3}).requires_grad_();
  Gradients acc;
  (a * 2).sum().backward({.accumulate_into = &acc});
  (a * 3).sum().backward({.accumulate_into = &acc});
  EXPECT_TRUE(allclose(a.grad(acc), full({3}, 5.0)));
  acc.set(a, zeros({3}));
  EXPECT_EQ(a.grad(acc).sum().item<float>(), 0.f);
  acc.remove(a);
  EXPECT_FALSE(acc.contains(a));
}

TEST(Autodiff, BackwardAccumulatesIntoTheLeafGradSlotAsLibtorchDoes) {
  Tensor w = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  EXPECT_FALSE(w.grad().defined());
  Gradients g1 = (w * w).sum().backward();
  EXPECT_TRUE(w.grad().is_alias_of(w.grad(g1)));  // stored as it is: no copy, no add
  Gradients g2 = (w * 3).sum().backward();
  EXPECT_TRUE(allclose(w.grad(), w.detach() * 2 + 3));  // the sum of both passes
  EXPECT_TRUE(allclose(w.grad(g2), full({3}, 3.f)));    // a Gradients object holds its own
  w.mutable_grad() = Tensor();
  EXPECT_FALSE(w.grad().defined());
  // accumulate_grad = false, and ember's own accumulate_into, leave the slot alone.
  (w * w).sum().backward({.accumulate_grad = false});
  Gradients acc;
  (w * w).sum().backward({.accumulate_into = &acc});
  EXPECT_FALSE(w.grad().defined());
  // libtorch's backward(gradient) for a non-scalar output; a leaf root fills its own slot.
  Tensor y = w * 2;
  y.backward(full({3}, 0.5f));
  EXPECT_TRUE(allclose(w.grad(), ones({3})));
  Tensor s = tensor({2.f}).requires_grad_();
  s.backward();
  EXPECT_EQ(s.grad().item<float>(), 1.f);
  // retain_grad: a non-leaf's slot is filled only when asked for.
  w.mutable_grad() = Tensor();
  Tensor h = w * 2, k = w * 3;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  (h * h + k * k).sum().backward();
  EXPECT_TRUE(allclose(h.grad(), h.detach() * 2));
  EXPECT_FALSE(k.grad().defined());
  EXPECT_TRUE(allclose(w.grad(), w.detach() * 26));
  EXPECT_THROW(tensor({1.f}).retain_grad(), ValueError);
  // A gradient with history (create_graph) is kept without it: no cycle leaf -> slot -> graph.
  w.mutable_grad() = Tensor();
  Gradients g3 = (w * w * w).sum().backward({.create_graph = true});
  EXPECT_TRUE(w.grad(g3).requires_grad());
  EXPECT_FALSE(w.grad().requires_grad());
  EXPECT_TRUE(allclose(w.grad(), w.grad(g3).detach()));
}

TEST(Autodiff, AutogradGradDifferentiatesWithoutTouchingTheSlots) {
  Tensor x = tensor({0.5, -1.0, 2.0}).requires_grad_();
  TensorList d = autograd::grad({(x * x * x).sum()}, {x}, {}, {}, /*create_graph=*/true);
  EXPECT_TRUE(allclose(d[0], x.detach().square() * 3));
  EXPECT_TRUE(d[0].requires_grad());
  TensorList d2 = autograd::grad({d[0].sum()}, {x});
  EXPECT_TRUE(allclose(d2[0], x.detach() * 6));
  // Several outputs: the gradient of sum_i <out_i, grad_out_i>.
  Tensor a = x * 2, b = x * x;
  TensorList d3 = autograd::grad({a, b}, {x}, {ones({3}), full({3}, 2.0)});
  EXPECT_TRUE(allclose(d3[0], x.detach() * 4 + 2));
  EXPECT_FALSE(x.grad().defined());
  Tensor unused = tensor({1.0}).requires_grad_();
  EXPECT_THROW(autograd::grad({(x * 2).sum()}, {unused}), ValueError);
  EXPECT_FALSE(autograd::grad({(x * 2).sum()}, {unused}, {}, {}, false, true)[0].defined());
  EXPECT_THROW(autograd::grad({(x * 2).sum()}, {x * 2}), ValueError);  // not a leaf
}

TEST(Autodiff, SlotAccumulationOnALazyDeviceStaysBounded) {
  // Nothing reads the slot for thousands of passes: the queued adds must run on their own (the
  // fusion queue's size bound), not pile up as one ever-growing pending graph.
  const Device lazy = Device::cpu().autodiff();
  ASSERT_TRUE(lazy.is_lazy());
  Tensor w = ones({8}, {.device = lazy}).requires_grad_();
  const int64_t base = detail::live_tensors();
  int64_t most = 0;
  const int steps = 6000;
  fusion::reset_stats();
  for (int i = 0; i < steps; ++i) {
    (w * 2).sum().backward();
    most = std::max(most, detail::live_tensors() - base);
  }
  const fusion::Stats st = fusion::stats();
  EXPECT_GT(st.flushes, 0) << "nothing read the slot, yet the queue must run on its own";
  EXPECT_LE(st.recorded / std::max<int64_t>(st.flushes, 1), 5000);
  EXPECT_LT(most, steps) << "live tensors grew with the number of passes";
  EXPECT_TRUE(allclose(w.grad(), full({8}, 2.0f * steps, {.device = lazy})));
}

TEST(Autodiff, HigherOrderGradients) {
  Tensor x = tensor({0.5, -1.0, 2.0}).requires_grad_();
  Tensor y = (x * x * x).sum();  // dy/dx = 3x^2, d2y/dx2 = 6x
  Gradients g = y.backward({.create_graph = true});
  Tensor dx = x.grad(g);
  EXPECT_TRUE(dx.requires_grad());
  Gradients g2 = dx.sum().backward();
  EXPECT_TRUE(allclose(x.grad(g2), x.detach() * 6));
  // through exp's saved output
  Tensor e = exp(x).sum();
  Tensor de = x.grad(e.backward({.create_graph = true}));
  EXPECT_TRUE(allclose(x.grad(de.sum().backward()), exp(x.detach())));
}

TEST(Autodiff, GraphMemoryIsFreedAndDoesNotGrow) {
  Tensor w = randn({64, 64}).requires_grad_();
  Tensor x = randn({32, 64});
  int64_t before = 0;
  for (int step = 0; step < 1000; ++step) {
    Tensor loss = relu(matmul(x, w)).pow(2).mean();
    Gradients g = loss.backward();
    NoGradGuard ng;
    w.sub_(w.grad(g) * 1e-3);
    if (step == 10) before = detail::live_tensors();
  }
  EXPECT_LE(detail::live_tensors(), before + 2);
}

TEST(Autodiff, CheckpointingLowersPeakMemoryWithIdenticalGradients) {
  auto run = [](Device dev, int64_t* peak) {
    manual_seed(5);
    std::vector<Tensor> ws;
    for (int i = 0; i < 6; ++i) ws.push_back((randn({256, 256}) * 0.05).to(dev).requires_grad_());
    Tensor x = randn({512, 256}, {.device = dev});
    detail::reset_peak_storage_bytes();
    int64_t base = detail::live_storage_bytes();
    Tensor h = x;
    for (const Tensor& w : ws) h = tanh(gelu(matmul(h, w)) * 1.5 + 0.1);
    Gradients g = h.pow(2).mean().backward();
    *peak = detail::peak_storage_bytes() - base;
    TensorList out;
    for (const Tensor& w : ws) out.push_back(w.grad(g));
    return out;
  };
  int64_t peak_plain = 0, peak_ckpt = 0;
  TensorList a = run(Device::flex().autodiff(), &peak_plain);
  TensorList b = run(Device::flex().autodiff().gradient_checkpointing(), &peak_ckpt);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(equal(a[i], b[i])) << i;
  EXPECT_LT(peak_ckpt, peak_plain * 0.8) << peak_ckpt << " vs " << peak_plain;
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {
TEST(Autodiff, InPlaceWritesIntoViewsAreRefusedNotSilentlyWrong) {
  Tensor w = randn({4}).requires_grad_();
  Tensor buf = zeros({4}, {.device = Device::flex().autodiff()});
  buf.copy_(w * 2);
  EXPECT_THROW(buf.slice(0, 0, 2).mul_(3), NotImplementedError);
  Tensor cache = zeros({4}, {.device = Device::flex().autodiff()});
  EXPECT_THROW(cache.slice(0, 0, 2).copy_(w.slice(0, 0, 2) * 3), NotImplementedError);
  {
    NoGradGuard ng;  // plain buffer work without history is fine
    cache.slice(0, 0, 2).fill_(1);
  }
  EXPECT_EQ(cache.sum().item<float>(), 2.f);
}
}  // namespace
}  // namespace ember
