// Optimizer and scheduler state through safetensors files (ember/store/state.h), and the RNG state
// that checkpoints carry.
#include "ember/store/state.h"

#include <gtest/gtest.h>

#include "ember/ember.h"
#include "store/store_test_util.h"

using namespace ember;

namespace {

// Two Adam steps on a quadratic, then save; a fresh optimizer loaded from the file continues
// exactly like the original.
TEST(StoreState, OptimizerAndSchedulerContinueBitExactly) {
  test::ScratchDir dir;
  Tensor w = tensor({1.0, -2.0, 0.5}).requires_grad_();
  optim::Adam opt({w}, {.lr = 0.1 + 0.2, .amsgrad = true});  // an lr with no short decimal
  optim::CosineAnnealingLR sched(opt, 7, 1e-3);
  auto step = [](optim::Optimizer& o, optim::LRScheduler& s, const Tensor& p) {
    o.step((p * p * p).sum().backward());
    s.step();
  };
  step(opt, sched, w);
  step(opt, sched, w);
  store::save_optimizer(dir.file("opt.safetensors"), opt);
  store::save_scheduler(dir.file("sched.safetensors"), sched);

  Tensor w2 = w.detach().clone().requires_grad_();
  optim::Adam opt2({w2}, {.lr = 1.0, .amsgrad = true});
  optim::CosineAnnealingLR sched2(opt2, 7, 1e-3);
  store::load_optimizer(dir.file("opt.safetensors"), opt2);
  store::load_scheduler(dir.file("sched.safetensors"), sched2);
  EXPECT_EQ(opt2.lr(0), opt.lr(0));
  EXPECT_EQ(sched2.last_epoch(), 2);
  for (int i = 0; i < 3; ++i) {
    step(opt, sched, w);
    step(opt2, sched2, w2);
  }
  EXPECT_TRUE(equal(w, w2));
  EXPECT_EQ(opt2.lr(0), opt.lr(0));
}

TEST(StoreState, ScalarsAreExactAndMetadataKept) {
  test::ScratchDir dir;
  optim::State s;
  s.tensors["a.b"] = tensor({1.5f, 2.5f});
  s.scalars["x"] = 0.1 + 0.2;
  s.scalars["tiny"] = 5e-324;
  s.scalars["inf"] = INFINITY;
  s.scalars["neg"] = -1.0 / 3.0;
  store::save_state(dir.file("s.safetensors"), s, {{"note", "hello"}});
  store::StateFile f = store::load_state(dir.file("s.safetensors"));
  EXPECT_EQ(f.state.scalars, s.scalars);
  EXPECT_TRUE(equal(f.state.tensors.at("a.b"), s.tensors.at("a.b")));
  EXPECT_EQ(f.metadata.at("note"), "hello");
  EXPECT_EQ(f.metadata.count("scalar.x"), 0u);
  EXPECT_THROW(store::save_state(dir.file("t.safetensors"), s, {{"scalar.x", "1"}}), ValueError);
}

TEST(StoreState, MismatchedFilesGiveClearErrors) {
  test::ScratchDir dir;
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  optim::Adam adam({w});
  adam.step((w * w).sum().backward());
  store::save_optimizer(dir.file("adam.safetensors"), adam);

  optim::SGD sgd({w}, {.lr = 0.1});
  try {
    store::load_optimizer(dir.file("adam.safetensors"), sgd);
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected the state of a SGD optimizer, found Adam"),
              std::string::npos)
        << e.what();
  }
  optim::StepLR sched(adam, 2);
  EXPECT_THROW(store::load_scheduler(dir.file("adam.safetensors"), sched), store::FormatError);
  // Same optimizer, another shape: nothing changes.
  Tensor v = tensor({1.0, 2.0, 3.0}).requires_grad_();
  optim::Adam other({v}, {.lr = 0.5});
  EXPECT_THROW(store::load_optimizer(dir.file("adam.safetensors"), other), ValueError);
  EXPECT_EQ(other.lr(0), 0.5);
  // Truncated and missing files.
  std::string bytes = test::read_bytes(dir.file("adam.safetensors"));
  test::write_bytes(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() - 4));
  EXPECT_THROW(store::load_optimizer(dir.file("cut.safetensors"), adam), store::TruncatedError);
  EXPECT_THROW(store::load_optimizer(dir.file("none.safetensors"), adam), store::IOError);
  // A scalar that is not a number.
  store::save_safetensors(
      dir.file("bad.safetensors"), {{"state.0.exp_avg", zeros({2})}},
      {{"ember.kind", "optimizer"}, {"ember.optimizer", "Adam"}, {"scalar.group.0.lr", "fast"}});
  EXPECT_THROW(store::load_optimizer(dir.file("bad.safetensors"), adam), store::FormatError);
}

TEST(RngState, RestoresEveryGenerator) {
  manual_seed(42);
  randn({3});
  std::vector<uint64_t> s = get_rng_state();
  Tensor a = randn({5}), b = rand({4});
  set_rng_state(s);
  EXPECT_TRUE(equal(randn({5}), a));
  EXPECT_TRUE(equal(rand({4}), b));
  EXPECT_THROW(set_rng_state({1, 2, 3}), ValueError);
}

}  // namespace
