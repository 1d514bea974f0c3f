// ZeRO-1 under `mpirun -np 2` (Mpi.* cases): balanced slices, bitwise equality with the plain
// optimizer, the consolidated state_dict, and the Learner (with a scheduler) resuming a
// checkpoint under another world size, 2 -> 1 and 1 -> 2 (the world of one is the sub-group {0}).
#include <gtest/gtest.h>

#include <ember/data/loader.h>
#include <ember/data/sampler.h>
#include <ember/train/learner.h>
#include <unistd.h>

#include <filesystem>

#include "distributed/mlp.h"

namespace ember {
namespace {
namespace dist = distributed;

std::unique_ptr<optim::Optimizer> adam(std::vector<Tensor> ps) {
  return std::make_unique<optim::Adam>(std::move(ps), optim::AdamOptions{.lr = 0.01});
}

// Mlp's 100 parameters cut in two ranges of 50: fc1 (40) and the first 10 elements of
// fc2.weight on rank 0, the rest on rank 1; three steps equal plain Adam bit for bit, and the
// consolidated state is plain Adam's.
TEST(Mpi, ZeroSlicesAreBalancedAndMatchAdam) {
  auto& w = dist::init();
  ASSERT_EQ(w.size(), 2);
  manual_seed(21);
  test::Mlp a;
  manual_seed(21);
  test::Mlp b;
  dist::DDP da(a), db(b);
  dist::ZeroRedundancyOptimizer zero(a.parameters(), adam);
  optim::Adam plain(b.parameters(), {.lr = 0.01});
  EXPECT_EQ(zero.local_numel(), 50);
  EXPECT_EQ(zero.name(), "Adam");
  const auto& sl = zero.slices();
  if (w.rank() == 0) {
    ASSERT_EQ(sl.size(), 3u);  // fc1.weight, fc1.bias, fc2.weight[0:10]
    EXPECT_EQ(sl[2].param, 2u);
    EXPECT_EQ(sl[2].begin, 0);
    EXPECT_EQ(sl[2].size, 10);
  } else {
    EXPECT_EQ(sl[0].param, 2u);  // fc2.weight[10:24]
    EXPECT_EQ(sl[0].begin, 10);
    EXPECT_EQ(sl[0].size, 14);
  }
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = test::batch(4 * w.rank(), 4);
    zero.step(da.backward(mse_loss(da(x), y)));
    plain.step(db.backward(mse_loss(db(x), y)));
  }
  auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].to_vector<double>(), pb[i].to_vector<double>()) << i;
  optim::State zs = zero.state_dict(), ps = plain.state_dict();
  ASSERT_EQ(zs.tensors.size(), ps.tensors.size());
  for (const auto& [k, t] : ps.tensors) {
    ASSERT_TRUE(zs.tensors.count(k)) << k;
    EXPECT_EQ(zs.tensors[k].to_vector<double>(), t.to_vector<double>()) << k;
  }
  EXPECT_EQ(zs.scalars, ps.scalars);
  // A fresh ZeRO-1 loads plain Adam's state: the next step is again the same.
  manual_seed(1);
  test::Mlp c;
  c.load_state_dict(b.state_dict());
  dist::DDP dc(c);
  dist::ZeroRedundancyOptimizer again(c.parameters(), adam);
  again.load_state_dict(ps);
  auto [x, y] = test::batch(4 * w.rank(), 4);
  again.step(dc.backward(mse_loss(dc(x), y)));
  plain.step(db.backward(mse_loss(db(x), y)));
  auto pc = c.parameters();
  for (size_t i = 0; i < pc.size(); ++i)
    EXPECT_EQ(pc[i].to_vector<double>(), pb[i].to_vector<double>()) << i;
}

// Parameters of two dtypes: one flat space each, both split evenly, one all-gather each.
TEST(Mpi, ZeroMixedDtypesMatchAdam) {
  auto& w = dist::init();
  manual_seed(8);
  test::Mlp a64, a32(DType::F32);
  manual_seed(8);
  test::Mlp b64, b32(DType::F32);
  auto params = [](test::Mlp& x, test::Mlp& y) {
    std::vector<Tensor> ps = x.parameters();
    for (Tensor& p : y.parameters()) ps.push_back(p);
    return ps;
  };
  dist::ZeroRedundancyOptimizer zero(params(a64, a32), adam);
  optim::Adam plain(params(b64, b32), {.lr = 0.01});
  EXPECT_EQ(zero.local_numel(), 100);  // 50 of each space
  for (int step = 0; step < 2; ++step) {
    auto [x, y] = test::batch(0, 8);
    auto [x32, y32] = test::batch(0, 8, DType::F32);
    // The same gradients on both ranks (no DDP needed): a full batch each.
    Tensor la = add(mse_loss(a64(x), y), mse_loss(a32(x32), y32).to(DType::F64));
    Tensor lb = add(mse_loss(b64(x), y), mse_loss(b32(x32), y32).to(DType::F64));
    zero.step(la.backward());
    plain.step(lb.backward());
  }
  auto pa = params(a64, a32), pb = params(b64, b32);
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(equal(pa[i], pb[i])) << i;
  optim::State zs = zero.state_dict(), ps = plain.state_dict();
  for (const auto& [k, t] : ps.tensors) EXPECT_TRUE(equal(zs.tensors.at(k), t)) << k;
  (void)w;
}

struct FitRun {
  std::vector<std::vector<double>> weights;
  train::FitResult result;
};

// `epochs` epochs of the Learner over `group` (its size ranks share a global batch of 8 of the
// 16 rows), with ZeRO-1 or plain Adam, a StepLR scheduler and checkpoints in `dir`.
FitRun fit(dist::ProcessGroup& group, bool zero, int64_t epochs, const std::string& dir,
           std::shared_ptr<train::Renderer> renderer = nullptr) {
  if (!renderer) renderer = std::shared_ptr<train::Renderer>(train::silent_renderer());
  manual_seed(11);
  test::Mlp model;
  dist::DDP ddp(model, {.group = &group});
  std::unique_ptr<optim::Optimizer> opt =
      zero ? std::unique_ptr<optim::Optimizer>(
                 new dist::ZeroRedundancyOptimizer(model.parameters(), adam, &group))
           : adam(model.parameters());
  optim::StepLR sched(*opt, 1, 0.5);
  auto [x, y] = test::batch(0, 16);
  std::vector<std::pair<Tensor, Tensor>> items;
  for (int64_t i = 0; i < 16; ++i) items.push_back({x[i], y[i]});
  auto sampler = std::make_shared<data::DistributedSampler>(
      16, data::DistributedSamplerOptions{.num_replicas = group.size(), .rank = group.rank(),
                                          .seed = 3});
  data::DataLoader<std::pair<Tensor, Tensor>> shard(
      data::distributed_shard(data::in_memory(items), sampler), {.batch_size = 8 / group.size()});
  data::SamplerEpochs loader(shard, sampler);
  train::Learner learner(model, *opt,
                         {.epochs = epochs,
                          .checkpoint_dir = dir,
                          .handle_interrupt = false,
                          .renderer = renderer,
                          .data_parallel = dist::data_parallel(ddp)});
  learner.set_scheduler(sched);
  auto step = [&](std::pair<Tensor, Tensor>& b) {
    return train::StepOutput{.loss = mse_loss(model(b.first), b.second)};
  };
  FitRun r;
  r.result = learner.fit(loader, step);
  for (Tensor& p : model.parameters()) r.weights.push_back(p.to_vector<double>());
  return r;
}

void expect_near(const FitRun& a, const FitRun& b) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i)
    for (size_t k = 0; k < a.weights[i].size(); ++k)
      EXPECT_NEAR(a.weights[i][k], b.weights[i][k], 1e-9) << i;
  ASSERT_EQ(a.result.history.size(), b.result.history.size());
  for (size_t e = 0; e < a.result.history.size(); ++e)
    EXPECT_NEAR(a.result.history[e].train[0].second, b.result.history[e].train[0].second, 1e-9);
}

// Two epochs straight on two ranks with ZeRO-1, against: one epoch on two ranks (ZeRO-1) then
// the second on rank 0 alone (plain Adam), and one epoch on rank 0 alone then the second on
// both (ZeRO-1). The same global batches, so the same weights up to rounding (a mean over 8
// rows against the average of two means over 4).
TEST(Mpi, LearnerWithZeroResumesUnderAnotherWorldSize) {
  namespace fs = std::filesystem;
  auto& w = dist::init();
  ASSERT_EQ(w.size(), 2);
  const fs::path dir = fs::temp_directory_path() / ("ember_dist_zero_" + std::to_string(getppid()));
  if (w.rank() == 0) fs::remove_all(dir);
  w.barrier().wait();
  std::optional<dist::ProcessGroup> solo = dist::new_group({0});
  const FitRun straight = fit(w, true, 2, (dir / "straight").string());
  fit(w, true, 1, (dir / "two_then_one").string());
  w.barrier().wait();
  if (w.rank() == 0) {
    FitRun resumed = fit(*solo, false, 2, (dir / "two_then_one").string());
    EXPECT_EQ(resumed.result.history.size(), 2u);
    expect_near(straight, resumed);
    fit(*solo, false, 1, (dir / "one_then_two").string());
  }
  w.barrier().wait();
  FitRun resumed = fit(w, true, 2, (dir / "one_then_two").string());
  expect_near(straight, resumed);
  w.barrier().wait();
  if (w.rank() == 0) fs::remove_all(dir);
}

// A checkpoint taken inside an epoch (here by a renderer's stop request after one batch, as
// Ctrl-C does) counts that world's batches: another world size refuses it, naming both.
TEST(Mpi, MidEpochCheckpointNeedsTheSameWorldSize) {
  namespace fs = std::filesystem;
  auto& w = dist::init();
  ASSERT_EQ(w.size(), 2);
  const fs::path dir = fs::temp_directory_path() / ("ember_dist_mid_" + std::to_string(getppid()));
  if (w.rank() == 0) fs::remove_all(dir);
  std::optional<dist::ProcessGroup> solo = dist::new_group({0});
  struct StopAfterOne final : train::Renderer {
    int seen = 0;
    void on_progress(const train::Progress&) override { ++seen; }
    void on_epoch_end(const train::EpochRecord&) override {}
    void on_message(std::string_view) override {}
    bool stop_requested() override { return seen >= 1; }
  };
  if (w.rank() == 0) {
    FitRun r = fit(*solo, false, 2, dir.string(), std::make_shared<StopAfterOne>());
    EXPECT_TRUE(r.result.interrupted);
  }
  w.barrier().wait();
  std::string e;
  try {
    fit(w, true, 2, dir.string());
  } catch (const ValueError& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("written 1 batches into an epoch by 1 ranks; it resumes mid-epoch only under "
                   "the same world size, found 2"), std::string::npos) << e;
  w.barrier().wait();
  if (w.rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
