// ember::capture on devices without graphs (flex, cpu): each replay runs the step eagerly and
// copies its results into the static outputs, so a program written for replays gives the eager
// results there; and the API's errors. The GPU side is tests/cuda/graph_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "ember/graph.h"

namespace ember {
namespace {

TEST(Capture, EagerDeviceRunsTheStepOnEachReplay) {
  for (Device d : {Device::flex(), Device::cpu()}) {
    int calls = 0;
    Tensor x = zeros({3}, {.device = d});
    CapturedStep cs = capture(
        [&] {
          ++calls;
          return TensorList{x * 2 + 1};
        },
        {x});
    EXPECT_FALSE(cs.graph()) << d;
    EXPECT_EQ(cs.pool_bytes(), 0);
    EXPECT_EQ(calls, 0) << "capture runs nothing on " << d;
    EXPECT_THROW(cs.output(0), IndexError);  // outputs come with the first replay
    cs.input(0).copy_(tensor<float>({1, 2, 3}).to(d));
    cs.replay();
    const Tensor out = cs.output(0);  // a handle: later replays overwrite what it shows
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{3, 5, 7}));
    cs.input(0).copy_(tensor<float>({0, -1, 10}).to(d));
    cs.replay();
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, -1, 21}));
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(cs.replays(), 2);
  }
}

TEST(Capture, EagerTrainingStepsMatchPlainSteps) {
  auto run = [](bool replayed) {
    manual_seed(4);
    nn::Linear lin({.in = 5, .out = 3});
    optim::AdamW opt(lin.parameters(), {.lr = 0.1});
    optim::StepLR sched(opt, 1, 0.5);
    Tensor x = randn({4, 5});
    auto step = [&] {
      Tensor loss = lin(x).square().mean();
      opt.step(loss.backward());
      return TensorList{loss.detach()};
    };
    CapturedStep cs = capture(step, {x});
    std::vector<float> losses;
    for (int i = 0; i < 3; ++i) {
      if (replayed) {
        cs.replay();
        losses.push_back(cs.output(0).item<float>());
      } else {
        losses.push_back(step()[0].item<float>());
      }
      sched.step();
    }
    losses.push_back(lin.weight.sum().item<float>());
    return losses;
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(Capture, ErrorsNameTheCall) {
  CapturedStep empty;
  EXPECT_THROW(empty.replay(), CaptureError);
  EXPECT_FALSE(empty.graph());
  EXPECT_TRUE(empty.outputs().empty());
  EXPECT_THROW(capture({}), ValueError);
  EXPECT_THROW(capture([] { return TensorList{}; }, {Tensor()}), ValueError);
  EXPECT_THROW(capture([] { return TensorList{}; }, {ones({2}, {.device = Device::flex()})},
                       {.device = Device::cpu()}),
               DeviceError);
  try {
    capture([] { return TensorList{}; }).input(2);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("[CapturedStep::input]"), std::string::npos) << e.what();
  }
  // A step that changes what it returns between replays.
  int n = 1;
  CapturedStep cs = capture([&] { return TensorList(size_t(n), ones({1})); });
  cs.replay();
  n = 2;
  EXPECT_THROW(cs.replay(), CaptureError);
}

TEST(Capture, CudaWithoutAGpuIsADeviceError) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is here";
  EXPECT_THROW(capture([] { return TensorList{}; }, {}, {.device = Device::cuda(0)}), DeviceError);
}

}  // namespace
}  // namespace ember
