// Multi-tensor optimizer steps on Device::cpu(): the per-parameter update groups of one step
// (SGD with momentum, Adam, AdamW, with weight decay) run as one kernel over every parameter,
// and give the eager step's results.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "fusion/fusion_helpers.h"
#include "ember/optim/optimizers.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;

using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct Run {
  std::vector<Tensor> params;
  int64_t last_kernels = 0, last_eager = 0;
};

// Four steps of `make`'s optimizer over parameters of several shapes on `d`, with the same
// gradients each time; the stats are the last step's.
Run run(Device d, const MakeOpt& make) {
  manual_seed(3);
  const std::vector<Shape> shapes = {{64, 33}, {33}, {7, 5, 3}, {1}, {200000}};
  Run r;
  std::vector<Tensor> grads;
  for (const Shape& s : shapes) {
    r.params.push_back(randn(s).to(d).requires_grad_());
    grads.push_back(randn(s).to(d));
  }
  std::unique_ptr<optim::Optimizer> opt = make(r.params);
  for (int step = 0; step < 4; ++step) {
    Gradients g;
    for (size_t i = 0; i < shapes.size(); ++i) g.set(r.params[i], grads[i] * double(step + 1));
    synchronize(Device::cpu());
    fusion::reset_stats();
    opt->step(g);
    synchronize(Device::cpu());
    r.last_kernels = fusion::stats().fused_kernels;
    r.last_eager = fusion::stats().eager_ops;
  }
  return r;
}

void check(const MakeOpt& make) {
  WaitForKernels wait;
  const Run eager = run(Device::cpu().eager(), make);
  const Run lazy = run(Device::cpu(), make);
  EXPECT_EQ(lazy.last_kernels, 1);  // every parameter in one kernel
  EXPECT_EQ(lazy.last_eager, 0);
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_TRUE(allclose(lazy.params[i].to(Device::flex()), eager.params[i].to(Device::flex()),
                         1e-6, 1e-6))
        << "parameter " << i;
}

TEST(MultiTensor, SgdWithMomentumAndWeightDecayIsOneKernel) {
  check([](std::vector<Tensor> p) {
    return std::make_unique<optim::SGD>(
        std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2});
  });
}

TEST(MultiTensor, NesterovSgdIsOneKernel) {
  check([](std::vector<Tensor> p) {
    return std::make_unique<optim::SGD>(
        std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
  });
}

TEST(MultiTensor, AdamWithWeightDecayIsOneKernel) {
  check([](std::vector<Tensor> p) {
    return std::make_unique<optim::Adam>(std::move(p),
                                         optim::AdamOptions{.lr = 1e-2, .weight_decay = 1e-2});
  });
}

TEST(MultiTensor, AdamWIsOneKernel) {
  check([](std::vector<Tensor> p) {
    return std::make_unique<optim::AdamW>(std::move(p),
                                          optim::AdamWOptions{.lr = 1e-2, .weight_decay = 0.1});
  });
}

TEST(MultiTensor, AmsgradAdamWIsOneKernel) {
  check([](std::vector<Tensor> p) {
    return std::make_unique<optim::AdamW>(std::move(p),
                                          optim::AdamWOptions{.lr = 1e-2, .amsgrad = true});
  });
}

// Two parameter groups with different learning rates: one kernel, launched once per group.
TEST(MultiTensor, GroupsWithOtherHyperParametersShareTheKernel) {
  WaitForKernels wait;
  auto make = [](Device d, std::vector<Tensor>& params) {
    manual_seed(5);
    params = {randn({30, 4}).to(d).requires_grad_(), randn({9}).to(d).requires_grad_(),
              randn({5, 5}).to(d).requires_grad_()};
    auto opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{params[0], params[1]},
                                              optim::AdamWOptions{.lr = 1e-2});
    opt->add_param_group({params[2]}, optim::AdamWOptions{.lr = 1e-3});
    return opt;
  };
  std::vector<Tensor> pe, pl;
  auto oe = make(Device::cpu().eager(), pe);
  auto ol = make(Device::cpu(), pl);
  for (int step = 0; step < 3; ++step) {
    Gradients ge, gl;
    for (size_t i = 0; i < pe.size(); ++i) {
      ge.set(pe[i], ones_like(pe[i]) * 0.5);
      gl.set(pl[i], ones_like(pl[i]) * 0.5);
    }
    oe->step(ge);
    synchronize(Device::cpu());
    fusion::reset_stats();
    ol->step(gl);
    synchronize(Device::cpu());
  }
  EXPECT_EQ(fusion::stats().fused_kernels, 2);
  for (size_t i = 0; i < pe.size(); ++i)
    EXPECT_TRUE(allclose(pl[i].to(Device::flex()), pe[i].to(Device::flex()), 1e-6, 1e-6));
}

}  // namespace
}  // namespace ember
