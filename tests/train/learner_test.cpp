// The Learner: training loop behaviour, checkpoints and exact resume, early stopping, logs,
// interruption and errors. The kill-and-resume case across processes is in resume_test.cpp.
#include <ember/store/load.h>
#include <ember/store/safetensors.h>
#include <ember/train/learner.h>
#include <ember/train/metric_log.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "store/store_test_util.h"
#include "train/synthetic.h"

namespace ember {
namespace {
namespace fs = std::filesystem;
using data::DataLoader;
using data::Example;
using train::Learner;
using train::LearnerOptions;

using test::TrainRun;

void expect_same_weights(nn::Module& a, nn::Module& b) {
  auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_TRUE(equal(sa[i].second, sb[i].second)) << sa[i].first << " differs";
  }
}

// Non-timing metrics of two histories are equal to the bit.
void expect_same_history(const std::vector<train::EpochRecord>& a,
                         const std::vector<train::EpochRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size(); ++e) {
    EXPECT_EQ(a[e].epoch, b[e].epoch);
    EXPECT_EQ(a[e].train, b[e].train) << "epoch " << a[e].epoch;
    EXPECT_EQ(a[e].valid, b[e].valid) << "epoch " << a[e].epoch;
  }
}

TEST(Learner, TrainsAndValidates) {
  TrainRun s({.epochs = 4});
  auto r = s.fit();
  ASSERT_EQ(r.history.size(), 4u);
  EXPECT_EQ(r.epoch, 4);
  EXPECT_EQ(r.global_step, 4 * 16);
  EXPECT_FALSE(r.stopped_early);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.history[0].train[0].first, "loss");
  EXPECT_EQ(r.history[0].valid[1].first, "accuracy");
  EXPECT_LT(r.history[3].train[0].second, r.history[0].train[0].second);
  EXPECT_GT(r.history[3].valid[1].second, 0.9) << r.history[3].valid[1].first;
  // StepLR(2, 0.5) stepped once per epoch: 1e-2 * 0.5^2.
  EXPECT_DOUBLE_EQ(s.opt->lr(0), 2.5e-3);
  EXPECT_TRUE(s.net->is_training());
}

TEST(Learner, SchedulerPerStep) {
  TrainRun s({.epochs = 1, .schedule_every = train::ScheduleEvery::step});
  s.fit();
  EXPECT_DOUBLE_EQ(s.opt->lr(0), 1e-2 * std::pow(0.5, 8));  // 16 steps, halved every 2
}

TEST(Learner, GradientAccumulationMatchesALargerBatch) {
  // 4 micro-batches of 16 with accumulation = one batch of 64 (same shuffled order), in f64.
  auto run = [](int64_t batch, int64_t accum) {
    struct F64 {
      F64() { set_default_dtype(DType::F64); }
      ~F64() { set_default_dtype(DType::F32); }
    } f64;
    auto ds = test::blobs(256, 4, 8, 11);
    DataLoader<Example> loader(ds, {.batch_size = batch, .shuffle = true, .seed = 3});
    manual_seed(5);
    test::BlobNet net(8, 4, 0.0);  // no dropout: its masks differ between batch shapes
    optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
    Learner l(net, opt,
              {.epochs = 2, .grad_accumulation = accum, .renderer = train::silent_renderer()});
    auto r = l.fit(loader, train::classification_step(net));
    EXPECT_EQ(r.global_step, 2 * 256 / 64);
    std::vector<Tensor> out;
    for (auto& p : net.parameters()) out.push_back(p.detach().clone());
    return out;
  };
  auto a = run(64, 1), b = run(16, 4);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i], b[i], 1e-12, 1e-12)) << i;
}

// CaptureMode::always on a device without graphs replays by running the step again: the same
// ops as the eager loop, so the same result to the bit, with every batch after the first two
// replayed (all batches have one shape here).
TEST(Learner, ACapturedStepTrainsAsTheEagerOne) {
  // Each run is set up right before its fit: a TrainRun seeds the generator, dropout draws.
  TrainRun eager({.epochs = 3, .capture = train::CaptureMode::off});
  auto a = eager.fit();
  TrainRun replayed({.epochs = 3, .capture = train::CaptureMode::always});
  auto b = replayed.fit();
  EXPECT_EQ(a.replayed_steps, 0);
  EXPECT_EQ(b.replayed_steps, 3 * 16 - 2);
  EXPECT_EQ(a.global_step, b.global_step);
  expect_same_history(a.history, b.history);
  expect_same_weights(*eager.net, *replayed.net);
  EXPECT_DOUBLE_EQ(eager.opt->lr(0), replayed.opt->lr(0));
  // automatic captures on devices with graphs only.
  TrainRun automatic({.epochs = 1});
  EXPECT_EQ(automatic.fit().replayed_steps, 0);
}

// The loader's batches on another device than the model: each replay moves them to the static
// inputs' device first (copy_ takes one device), as classification_step does for eager steps.
TEST(Learner, ACapturedStepTakesBatchesFromAnotherDevice) {
  const Device other = default_device().backend() == Backend::Flex ? Device::cpu() : Device::flex();
  auto run = [&](train::CaptureMode mode) {
    manual_seed(5);
    auto ds = test::blobs(96, 4, 8, 11);
    DataLoader<Example> loader(ds, {.batch_size = 16});
    test::BlobNet net(8, 4, 0.0);
    net.to(other);
    optim::Adam opt(net.parameters(), {.lr = 1e-2});
    Learner l(net, opt, {.epochs = 1, .renderer = train::silent_renderer(), .capture = mode});
    auto r = l.fit(loader, train::classification_step(net));
    std::vector<Tensor> w;
    for (auto& p : net.parameters()) w.push_back(p.detach().to(Device::flex()));
    return std::make_pair(r.replayed_steps, w);
  };
  auto [n0, a] = run(train::CaptureMode::off);
  auto [n1, b] = run(train::CaptureMode::always);
  EXPECT_EQ(n0, 0);
  EXPECT_EQ(n1, 6 - 2);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(equal(a[i], b[i])) << i;
}

// Steps that are not captured: accumulation windows, a last batch of another shape, and
// batches that are not (input, target) pairs.
TEST(Learner, OnlyRepeatedSingleBatchStepsAreCaptured) {
  {
    TrainRun s({.epochs = 1, .grad_accumulation = 2, .capture = train::CaptureMode::always});
    EXPECT_EQ(s.fit().replayed_steps, 0);
  }
  {
    // 250 items in batches of 16: 15 full ones, then 10 (eager).
    manual_seed(5);
    auto ds = test::blobs(250, 4, 8, 11);
    DataLoader<Example> loader(ds, {.batch_size = 16});
    test::BlobNet net;
    optim::Adam opt(net.parameters(), {.lr = 1e-2});
    Learner l(net, opt,
              {.epochs = 2, .renderer = train::silent_renderer(),
               .capture = train::CaptureMode::always});
    auto r = l.fit(loader, train::classification_step(net));
    EXPECT_EQ(r.global_step, 32);
    EXPECT_EQ(r.replayed_steps, 13 + 15);  // the capture persists across epochs of one fit
  }
}

TEST(Learner, ResumesBitExactlyAtEpochBoundaries) {
  TrainRun whole({.epochs = 4});
  auto full = whole.fit();

  test::ScratchDir dir;
  {
    TrainRun first({.epochs = 2, .checkpoint_dir = dir.path.string()});
    auto r = first.fit();
    EXPECT_EQ(r.epoch, 2);
    EXPECT_EQ(r.checkpoint, dir.file("epoch-0002.safetensors"));
  }
  TrainRun second({.epochs = 4, .checkpoint_dir = dir.path.string()});
  auto r = second.fit();
  EXPECT_EQ(r.epoch, 4);
  EXPECT_EQ(r.global_step, full.global_step);
  expect_same_weights(*whole.net, *second.net);
  expect_same_history(full.history, r.history);
  EXPECT_EQ(second.opt->lr(0), whole.opt->lr(0));
}

TEST(Learner, CtrlCSavesMidEpochAndResumesBitExactly) {
  TrainRun whole({.epochs = 3});
  auto full = whole.fit();

  test::ScratchDir dir;
  {
    TrainRun first({.epochs = 3, .checkpoint_dir = dir.path.string()});
    int64_t calls = 0;
    auto step = train::classification_step(*first.net);
    auto r = first.learner->fit(first.train_loader, &first.valid_loader, [&](Example& b) {
      // Epoch 2, training batch 5 (validation calls it too).
      if (first.net->is_training() && ++calls == 16 + 5) raise(SIGINT);
      return step(b);
    });
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.epoch, 1);
    EXPECT_EQ(r.checkpoint, dir.file("epoch-0002-step-0000005.safetensors"));
    EXPECT_TRUE(fs::exists(r.checkpoint));
  }
  TrainRun second({.epochs = 3, .checkpoint_dir = dir.path.string()});
  auto r = second.fit();
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.epoch, 3);
  expect_same_weights(*whole.net, *second.net);
  expect_same_history(full.history, r.history);
}

TEST(Learner, KeepsTheLastCheckpointsAndWritesTheLog) {
  test::ScratchDir dir;
  TrainRun s({.epochs = 5,
              .checkpoint_dir = dir.file("ckpt"),
              .keep_last = 2,
              .log_path = dir.file("metrics.csv")});
  auto r = s.fit();
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir.file("ckpt"))) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"epoch-0004.safetensors", "epoch-0005.safetensors"}));
  auto log = train::read_metric_log(dir.file("metrics.csv"));
  ASSERT_EQ(log.size(), 5u);
  for (size_t e = 0; e < 5; ++e) {
    EXPECT_EQ(log[e].epoch, int64_t(e) + 1);
    EXPECT_EQ(log[e].train, r.history[e].train);
    EXPECT_EQ(log[e].valid, r.history[e].valid);
  }
}

TEST(Learner, EarlyStopping) {
  // lr 0: nothing improves after the first epoch; patience 2 stops after epoch 3.
  TrainRun s(
      {.epochs = 10, .early_stopping = train::EarlyStopping{.metric = "valid.loss", .patience = 2}},
      false);
  s.opt->set_lr(0, 0.0);
  auto r = s.fit();
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.epoch, 3);
}

TEST(Learner, LoadCheckpointErrors) {
  test::ScratchDir dir;
  TrainRun s({.epochs = 1, .checkpoint_dir = dir.path.string()}, false);
  s.fit();
  std::string good = dir.file("epoch-0001.safetensors");
  auto before = s.net->fc1.weight.clone();

  EXPECT_THROW(s.learner->load_checkpoint(dir.file("missing.safetensors")), store::IOError);
  // Truncated: the header promises more bytes than the file holds.
  const std::string bytes = test::read_bytes(good);
  test::write_bytes(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(s.learner->load_checkpoint(dir.file("cut.safetensors")), store::TruncatedError);
  // A weights file that is not a checkpoint.
  store::save_safetensors(dir.file("weights.safetensors"), s.net->state_dict());
  EXPECT_THROW(s.learner->load_checkpoint(dir.file("weights.safetensors")), store::FormatError);

  // Another architecture: a clear error listing the keys, and nothing changes.
  manual_seed(1);
  test::BlobNet wide(8, 5);
  optim::Adam opt(wide.parameters(), {.lr = 1e-2});
  Learner other(wide, opt, {.renderer = train::silent_renderer()});
  auto wide_before = wide.fc2.weight.clone();
  try {
    other.load_checkpoint(good);
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("fc2.weight"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(equal(wide.fc2.weight, wide_before));

  // Another optimizer.
  test::BlobNet same;
  optim::SGD sgd(same.parameters(), {.lr = 0.1});
  Learner with_sgd(same, sgd, {.renderer = train::silent_renderer()});
  EXPECT_THROW(with_sgd.load_checkpoint(good), ValueError);
  // The failed loads left the first model as it was.
  EXPECT_TRUE(equal(s.net->fc1.weight, before));
}

TEST(Learner, OptionAndStepErrors) {
  test::BlobNet net;
  optim::SGD opt(net.parameters(), {.lr = 0.1});
  EXPECT_THROW(Learner(net, opt, {.grad_accumulation = 0}), ValueError);
  EXPECT_THROW(Learner(net, opt, {.log_path = "metrics.txt"}), ValueError);
  EXPECT_THROW(Learner(net, opt, {.early_stopping = train::EarlyStopping{.metric = "loss"}}),
               ValueError);
  auto ds = test::blobs(32, 4, 8, 1);
  DataLoader<Example> loader(ds, {.batch_size = 8});
  {  // a validation metric to monitor, but no validation loader
    Learner l(net, opt,
              {.early_stopping = train::EarlyStopping{}, .renderer = train::silent_renderer()});
    EXPECT_THROW(l.fit(loader, train::classification_step(net)), ValueError);
  }
  {  // a NaN loss
    Learner l(net, opt, {.renderer = train::silent_renderer()});
    auto nan_step = [&](Example& b) {
      return train::StepOutput{.loss = full({}, std::nan("")) * net(b.first).sum()};
    };
    try {
      l.fit(loader, nan_step);
      FAIL() << "expected an error";
    } catch (const ValueError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("[Learner] the training loss is"), std::string::npos) << m;
      EXPECT_NE(m.find("nan at epoch 1, batch 1"), std::string::npos) << m;
    }
  }
  {  // a step that returns no loss
    Learner l(net, opt, {.renderer = train::silent_renderer()});
    EXPECT_THROW(l.fit(loader, [](Example&) { return train::StepOutput{}; }), ValueError);
  }
}

TEST(Learner, PlainRendererReportsEpochs) {
  std::ostringstream os;
  TrainRun s({.epochs = 2, .renderer = train::plain_renderer(os, 50)});
  s.fit();
  std::string out = os.str();
  EXPECT_NE(out.find("epoch 1/2"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2/2"), std::string::npos) << out;
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(Learner, SavesTheBestWeights) {
  test::ScratchDir dir;
  TrainRun s({.epochs = 4, .checkpoint_dir = dir.path.string(), .save_best = "valid.loss"});
  auto r = s.fit();
  size_t best = 0;
  for (size_t e = 1; e < r.history.size(); ++e)
    if (r.history[e].valid[0].second < r.history[best].valid[0].second) best = e;
  store::SafetensorsFile f(dir.file("best.safetensors"));
  EXPECT_EQ(f.metadata().at("epoch"), std::to_string(best + 1));
  EXPECT_EQ(f.metadata().at("metric"), "valid.loss");
  EXPECT_EQ(std::stod(f.metadata().at("value")), r.history[best].valid[0].second);
  // The saved weights give the recorded validation loss.
  test::BlobNet net;
  store::load_into(net.state_dict(), f);
  net.eval();
  NoGradGuard no_grad;
  double loss_sum = 0;
  int64_t n = 0;
  for (auto& [x, y] : s.valid_loader) {
    loss_sum += nn::functional::cross_entropy(net(x), y).item<double>() * double(x.size(0));
    n += x.size(0);
  }
  EXPECT_NEAR(loss_sum / double(n), r.history[best].valid[0].second, 1e-6);

  test::BlobNet other;
  optim::SGD opt(other.parameters(), {.lr = 0.1});
  EXPECT_THROW(Learner(other, opt, {.save_best = "valid.loss"}), ValueError);  // no directory
  EXPECT_THROW(Learner(other, opt, {.checkpoint_dir = "x", .save_best = "loss"}), ValueError);
}

}  // namespace
}  // namespace ember
