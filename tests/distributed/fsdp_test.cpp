// FullyShardedDataParallel under `mpirun -np 2` (Mpi.*) and in a world of one (DistLocal.*):
// training equals single-process training bit for bit (f64, summed loss, Sum, SGD), and the
// parameters really are sharded (one unit's full parameters at a time, half the bytes at rest).
#include <gtest/gtest.h>

#include <ember/data/loader.h>
#include <ember/data/sampler.h>
#include <ember/nn/container.h>
#include <ember/train/learner.h>
#include <unistd.h>

#include <filesystem>

#include "distributed/mlp.h"

namespace ember {
namespace {
namespace dist = distributed;

// Units fc1, fc2, head_b, never (unused: reachable by no backward, their shards get zeros).
void expect_fsdp_equals_single_process(int world, int rank) {
  manual_seed(100 + rank);  // different initial weights: FSDP must broadcast rank 0's
  test::Mlp model;
  manual_seed(100);
  test::Mlp ref;
  dist::FSDP fsdp(model, {.reduce = dist::ReduceOp::Sum});
  ASSERT_EQ(fsdp.num_units(), 4u);
  EXPECT_EQ(fsdp.unit_parameters(0), (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  EXPECT_EQ(fsdp.gathered_bytes(), 0);
  optim::SGD opt(fsdp.parameters(), {.lr = 0.01, .momentum = 0.9});
  optim::SGD ref_opt(ref.parameters(), {.lr = 0.01, .momentum = 0.9});
  const int64_t rows = 8 / world;
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = test::batch(rows * rank, rows);
    opt.step(fsdp.backward(test::sq_error_sum(fsdp(x), y)));
    EXPECT_EQ(fsdp.gathered_bytes(), 0);  // freed after backward
    Gradients total;
    for (int r = 0; r < 2; ++r) {
      auto [bx, by] = test::batch(4 * r, 4);
      Gradients g = test::sq_error_sum(ref(bx), by).backward();
      for (Tensor& p : ref.parameters())
        if (g.contains(p)) total.set(p, total.contains(p) ? add(total.get(p), g.get(p)) : g.get(p));
    }
    ref_opt.step(total);
  }
  // Reading the parameters gathers them (the same order on every rank).
  auto a = fsdp.state_dict(), b = ref.state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)  // head_b and never (zero gradients) stay as they were
    EXPECT_EQ(a[i].second.to_vector<double>(), b[i].second.to_vector<double>()) << a[i].first;
  EXPECT_EQ(fsdp.peak_gathered_bytes(), (4 * 8 + 8) * 8);  // fc1, the largest unit
}

// Two ranks, 4 rows each, against one process that sums the two halves' gradients.
TEST(Mpi, FsdpEqualsSingleProcessBitwiseF64) {
  auto& w = dist::init();
  ASSERT_EQ(w.size(), 2);
  expect_fsdp_equals_single_process(2, w.rank());
}

TEST(DistLocal, FsdpInAWorldOfOne) {
  // A world of one sees all 8 rows at once: a different order of additions than the reference's
  // two halves, so this compares against the reference within rounding instead.
  dist::init();
  manual_seed(4);
  test::Mlp model;
  manual_seed(4);
  test::Mlp ref;
  dist::FSDP fsdp(model);
  optim::Adam opt(fsdp.parameters(), {.lr = 0.01});
  optim::Adam ref_opt(ref.parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = test::batch(0, 8);
    opt.step(fsdp.backward(mse_loss(fsdp(x), y)));
    ref_opt.step(mse_loss(ref(x), y).backward());
  }
  auto a = fsdp.state_dict(), b = ref.state_dict();
  for (size_t i = 0; i < a.size(); ++i) {
    auto va = a[i].second.to_vector<double>(), vb = b[i].second.to_vector<double>();
    for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(va[k], vb[k], 1e-12) << a[i].first;
  }
}

// Eight 64x64 layers (33 KB each in f64): at rest a rank holds half the parameter bytes, a
// training step never holds more than one unit's full parameters, and the step's peak of host
// storage (parameters, gradients, activations, buffers) is below the same step unsharded.
TEST(Mpi, FsdpHoldsLessParameterMemory) {
  auto& w = dist::init();
  ASSERT_EQ(w.size(), 2);
  manual_seed(2);
  nn::Sequential seq;
  for (int i = 0; i < 8; ++i) {
    seq.push_back(nn::Linear({.in = 64, .out = 64, .param = {.dtype = DType::F64}}));
    seq.push_back(nn::Tanh());
  }
  int64_t param_bytes = 0;
  for (Tensor& p : seq.parameters()) param_bytes += p.nbytes();
  const int64_t unit = (64 * 64 + 64) * 8;
  ASSERT_EQ(param_bytes, 8 * unit);
  // The same step unsharded, for comparison.
  const int64_t before = detail::live_storage_bytes();
  int64_t plain_peak = 0;
  {
    manual_seed(2);
    nn::Sequential plain;
    for (int i = 0; i < 8; ++i) {
      plain.push_back(nn::Linear({.in = 64, .out = 64, .param = {.dtype = DType::F64}}));
      plain.push_back(nn::Tanh());
    }
    optim::SGD popt(plain.parameters(), {.lr = 0.01});
    Generator g(5);
    Tensor x = randn({4, 64}, g, {.dtype = DType::F64});
    detail::reset_peak_storage_bytes();
    popt.step(sum(plain(x)).backward());
    plain_peak = detail::peak_storage_bytes() - before;
  }
  dist::FSDP fsdp(seq);
  ASSERT_EQ(fsdp.num_units(), 8u);  // the Tanh layers have no parameters
  const int64_t at_rest = detail::live_storage_bytes();
  EXPECT_EQ(fsdp.shard_bytes(), param_bytes / 2);
  EXPECT_EQ(before - at_rest, param_bytes / 2);  // the full parameters were freed
  optim::SGD opt(fsdp.parameters(), {.lr = 0.01});
  Generator g(5);
  Tensor x = randn({4, 64}, g, {.dtype = DType::F64});
  detail::reset_peak_storage_bytes();
  opt.step(fsdp.backward(sum(fsdp(x))));
  const int64_t fsdp_peak = detail::peak_storage_bytes() - (before - param_bytes);
  EXPECT_EQ(fsdp.peak_gathered_bytes(), unit);
  // Every unit in forward; in backward all but the last (still there) and the first (whose
  // weight the input gradient would need, but the input needs none).
  EXPECT_EQ(fsdp.gathers(), 8 + 6);
  EXPECT_LT(fsdp_peak, plain_peak * 8 / 10);
  if (w.rank() == 0)
    std::printf("[fsdp] params %lld B; a rank at rest: %lld B of shards; step peak %lld B "
                "(unsharded %lld B)\n", (long long)param_bytes, (long long)fsdp.shard_bytes(),
                (long long)fsdp_peak, (long long)plain_peak);
}

// `epochs` epochs of the Learner over `group` (default the world) with `sharded` FSDP or DDP
// (Adam, a global batch of 8 rows a step), checkpoints in `dir`; the weights at the end.
std::vector<std::vector<double>> learner_fit(bool sharded, int64_t epochs, const std::string& dir,
                                             dist::ProcessGroup* group = nullptr) {
  auto& w = group ? *group : dist::init();
  manual_seed(11);
  test::Mlp model;
  std::unique_ptr<dist::FSDP> fsdp;
  std::unique_ptr<dist::DDP> ddp;
  std::unique_ptr<optim::Adam> opt;
  if (sharded) {
    fsdp = std::make_unique<dist::FSDP>(model, dist::FSDPOptions{.group = &w});
    opt = std::make_unique<optim::Adam>(fsdp->parameters(), optim::AdamOptions{.lr = 0.01});
  } else {
    ddp = std::make_unique<dist::DDP>(model, dist::DDPOptions{.group = &w});
    opt = std::make_unique<optim::Adam>(model.parameters(), optim::AdamOptions{.lr = 0.01});
  }
  auto [x, y] = test::batch(0, 16);
  std::vector<std::pair<Tensor, Tensor>> items;
  for (int64_t i = 0; i < 16; ++i) items.push_back({x[i], y[i]});
  auto sampler = std::make_shared<data::DistributedSampler>(
      16, data::DistributedSamplerOptions{.num_replicas = w.size(), .rank = w.rank()});
  data::DataLoader<std::pair<Tensor, Tensor>> shard(
      data::distributed_shard(data::in_memory(items), sampler), {.batch_size = 8 / w.size()});
  data::SamplerEpochs loader(shard, sampler);
  train::Learner learner(
      model, *opt,
      {.epochs = epochs,
       .checkpoint_dir = dir,
       .save_best = "train.loss",
       .handle_interrupt = false,
       .renderer = std::shared_ptr<train::Renderer>(train::silent_renderer()),
       .data_parallel = sharded ? dist::data_parallel(*fsdp) : dist::data_parallel(*ddp)});
  learner.fit(loader, [&](std::pair<Tensor, Tensor>& b) {
    return train::StepOutput{.loss = mse_loss(model(b.first), b.second)};
  });
  std::vector<std::vector<double>> out;
  for (auto& [k, t] : sharded ? fsdp->state_dict() : model.state_dict())
    out.push_back(t.to_vector<double>());
  return out;
}

// The Learner under FSDP: the weights of the Learner under DDP, and a checkpoint (gathered on
// both ranks, written by rank 0) resumes into the shards, bit for bit under the same world size
// and within rounding on one rank (a global batch of 8 rows either way).
TEST(Mpi, LearnerUnderFsdp) {
  namespace fs = std::filesystem;
  auto& w = dist::init();
  const fs::path dir = fs::temp_directory_path() / ("ember_dist_fsdp_" + std::to_string(getppid()));
  if (w.rank() == 0) fs::remove_all(dir);
  w.barrier().wait();
  const auto ddp = learner_fit(false, 2, (dir / "ddp").string());
  const auto straight = learner_fit(true, 2, (dir / "straight").string());
  learner_fit(true, 1, (dir / "resumed").string());
  w.barrier().wait();
  const auto resumed = learner_fit(true, 2, (dir / "resumed").string());
  ASSERT_EQ(straight.size(), ddp.size());
  for (size_t i = 0; i < ddp.size(); ++i)
    for (size_t k = 0; k < ddp[i].size(); ++k) {
      EXPECT_NEAR(straight[i][k], ddp[i][k], 1e-12) << i;
      EXPECT_EQ(resumed[i][k], straight[i][k]) << i;
    }
  // The checkpoint's optimizer state is gathered (world-size free): epoch 1 on two ranks
  // resumes on rank 0 alone (a sub-group of one, shards of the whole units).
  std::optional<dist::ProcessGroup> solo = dist::new_group({0});
  learner_fit(true, 1, (dir / "two_then_one").string());
  w.barrier().wait();
  if (w.rank() == 0) {
    const auto alone = learner_fit(true, 2, (dir / "two_then_one").string(), &*solo);
    for (size_t i = 0; i < ddp.size(); ++i)
      for (size_t k = 0; k < ddp[i].size(); ++k) EXPECT_NEAR(alone[i][k], straight[i][k], 1e-9) << i;
  }
  w.barrier().wait();
  EXPECT_TRUE(fs::exists(dir / "straight" / "best.safetensors"));  // one folder: rank 0 wrote it
  w.barrier().wait();
  if (w.rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
