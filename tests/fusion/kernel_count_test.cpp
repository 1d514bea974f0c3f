// Kernel counts of known steps, pinned: an MLP training step and a transformer block's forward
// on Device::cpu(). A change in planning that splits a fused group (or stops fusing) changes
// these numbers and fails loudly; a change that fuses more updates them on purpose.
#include <gtest/gtest.h>

#include <cstdio>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/nn/functional.h"
#include "ember/optim/optimizers.h"

namespace ember {
namespace {

struct Counts {
  int64_t kernels, fused_ops, eager_ops, recorded;
};

struct WaitForKernels {
  WaitForKernels() { fusion::set_wait_for_kernels(true); }
  ~WaitForKernels() { fusion::set_wait_for_kernels(false); }
};

struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 784, .out = 512}}, fc2{{.in = 512, .out = 512}}, fc3{{.in = 512, .out = 10}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }
  Tensor forward(const Tensor& x) override { return fc3(relu(fc2(relu(fc1(x))))); }
};

template <class Step>
Counts count(Step&& step) {
  step();  // plans and compiles
  synchronize(Device::cpu());
  fusion::reset_stats();
  step();
  synchronize(Device::cpu());
  const fusion::Stats s = fusion::stats();
  std::printf("kernels %lld, fused ops %lld, eager ops %lld, recorded %lld, plan misses %lld\n",
              (long long)s.fused_kernels, (long long)s.fused_ops, (long long)s.eager_ops,
              (long long)s.recorded, (long long)s.plan_misses);
  EXPECT_EQ(s.plan_misses, 0);  // the second step plans nothing
  return {s.fused_kernels, s.fused_ops, s.eager_ops, s.recorded};
}

TEST(KernelCount, MlpTrainingStepWithAdamW) {
  WaitForKernels wait;
  manual_seed(0);
  Mlp net;
  net.to(Device::cpu().autodiff());
  optim::AdamW opt(net.parameters(), {.lr = 1e-3});
  Tensor x = randn({128, 784}, {.device = Device::cpu()});
  Tensor y = randint(0, 10, {128}, {.dtype = kI64, .device = Device::cpu()});
  const Counts c = count([&] {
    Tensor loss = nn::functional::cross_entropy(net.forward(x), y);
    Gradients g = loss.backward();
    opt.step(g);
  });
  // log_softmax; the loss's backward (7 ops, one kernel); its one-hot select and log_softmax's
  // backward (a row sum with the select as its prologue, the 3 elementwise ops after it as its
  // epilogue: one kernel);
  // two ReLU backwards (2 ops each) and the three bias gradients (row sums); one multi-tensor
  // AdamW kernel over all six parameters (20 ops each: its decay, both moments, the step, and
  // the four in-place stores); the two hidden layers' products with their ReLUs as epilogues
  // (2 ops each: the whole step is one queue now that nll_loss queues too, and the tape keeps
  // the ReLUs' outputs, not the products).
  // The forward loss (log_softmax and nll_loss) is one row kernel that also writes the
  // log-probabilities the tape keeps, plus the generated kernel that adds its rows up.
  EXPECT_EQ(c.kernels, 12);
  EXPECT_EQ(c.fused_ops, 146);
  // The other 6 matrix products (1 forward, 5 backward) are library calls.
  EXPECT_EQ(c.eager_ops, 6);
}

TEST(KernelCount, MlpEvaluationLoss) {
  WaitForKernels wait;
  manual_seed(0);
  Mlp net;
  net.to(Device::cpu());
  Tensor x = randn({128, 784}, {.device = Device::cpu()});
  Tensor y = randint(0, 10, {128}, {.dtype = kI64, .device = Device::cpu()});
  float loss = 0;
  const Counts c = count([&] {
    NoGradGuard no_grad;  // parameters that require grad would keep the log-probabilities
    loss = nn::functional::cross_entropy(net.forward(x), y).item<float>();
  });
  // The two hidden products with their ReLUs as epilogues (2 ops each); the cross-entropy
  // (log_softmax and nll_loss) is one row kernel that never writes the log-probabilities, and
  // a tiny one adding its rows up; the last product is a library call of its own.
  EXPECT_EQ(c.kernels, 4);
  EXPECT_EQ(c.fused_ops, 6);
  EXPECT_EQ(c.eager_ops, 1);
  EXPECT_GT(loss, 0);
}

TEST(KernelCount, TransformerBlockForward) {
  WaitForKernels wait;
  manual_seed(0);
  nn::TransformerEncoderLayer block(
      {.d_model = 128, .nhead = 4, .dim_feedforward = 512, .dropout = 0.0, .batch_first = true,
       .norm_first = true});
  block.to(Device::cpu());
  block.eval();
  Tensor x = randn({8, 64, 128}, {.device = Device::cpu()});
  Tensor out;
  const Counts c = count([&] { out = block.forward(x); });
  // The two layer norms and the attention softmax are row kernels, the residual add before the
  // second norm its prologue (written beside it); the 8 matrix products are library calls, and
  // two queued ops run on their own (a group of one is the eager kernel).
  EXPECT_EQ(c.kernels, 3);
  EXPECT_EQ(c.fused_ops, 5);
  EXPECT_EQ(c.eager_ops, 10);
}

// A pre-norm block's training step: forward with dropout (train mode) and backward. The
// dropout masks are drawn inside the kernels that apply them (and again inside the gradients'),
// each norm's input gradient is one row kernel, and the printed counts are pinned.
TEST(KernelCount, TransformerBlockTrainingStep) {
  WaitForKernels wait;
  manual_seed(0);
  nn::TransformerEncoderLayer block(
      {.d_model = 128, .nhead = 4, .dim_feedforward = 512, .dropout = 0.1, .batch_first = true,
       .norm_first = true});
  block.to(Device::cpu().autodiff());
  block.train();
  Tensor x = randn({8, 64, 128}, {.device = Device::cpu()});
  Tensor g = randn({8, 64, 128}, {.device = Device::cpu()});
  const Counts c = count([&] {
    Tensor out = block.forward(x);
    // No optimizer steps here to clear the parameters' grad() slots, so each backward would
    // add into them (libtorch's accumulation, 8 adds): the count is of the block's own kernels.
    Gradients grads = out.backward({.grad_output = g, .accumulate_grad = false});
  });
  // Forward: the two norms and the softmax are row kernels; each of the three dropouts is a
  // pointwise kernel drawing its mask (the two residual adds with theirs). Backward: the dropout
  // gradients draw their masks again inside pointwise kernels (the second residual's with the
  // forward's last dropout: one queue, one shape), each norm's dx is one row kernel, the
  // affine and bias gradients are column sums, the softmax backward a row kernel with its
  // epilogue.
  EXPECT_EQ(c.kernels, 19);
  EXPECT_EQ(c.fused_ops, 49);
  // The matrix products are library calls; a few single ops run on their own.
  EXPECT_EQ(c.eager_ops, 26);
}

}  // namespace
}  // namespace ember
