// Loads documented as "on error nothing changes" check everything before they change anything:
// load_into reads (and checks) every value before writing the first target, and composite
// schedulers check every sub-scheduler's state before any of them is set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "ember/store/load.h"
#include "ember/store/safetensors.h"
#include "hostile/expect_error.h"
#include "store/store_test_util.h"

using namespace ember;

namespace {
std::vector<Tensor> params() { return {ones({2}).requires_grad_()}; }
optim::State without(optim::State s, const std::string& key) {
  s.scalars.erase(key);
  return s;
}
}  // namespace

TEST(HostileLoads, LoadIntoReadsEverythingBeforeWriting) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", ones({3})}, {"z", ones({2}, {kBool})}});
  // Corrupt z's BOOL bytes (the last two bytes of the file).
  std::string bytes = test::read_bytes(p);
  bytes[bytes.size() - 1] = 2;
  test::write_bytes(p, bytes);
  Tensor a = zeros({3}), z = zeros({2}, {kBool});
  EXPECT_ERROR(store::load_into({{"a", a}, {"z", z}}, p), store::FormatError, "store");
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 0, 0}));  // "a" comes first: untouched
  EXPECT_EQ(z.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0}));
}

TEST(HostileLoads, LoadIntoOfAFileThatShrankChangesNothing) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", ones({4096})}, {"b", ones({4096}, {kF64})}});
  store::SafetensorsFile f(p);
  uint64_t header = 0;
  std::memcpy(&header, test::read_bytes(p).data(), 8);
  ASSERT_EQ(::truncate(p.c_str(), off_t(8 + header + 4096 * 4 + 100)), 0);  // inside "b"
  Tensor a = zeros({4096}), b = zeros({4096}, {kF64});
  EXPECT_ERROR(store::load_into({{"a", a}, {"b", b}}, f), store::IOError, "store");
  EXPECT_EQ(sum(a).item<double>(), 0);
  EXPECT_EQ(sum(b).item<double>(), 0);
}

TEST(HostileLoads, SequentialLRChecksEverySubSchedulerFirst) {
  optim::SGD opt(params(), {.lr = 0.1});
  auto a = std::make_shared<optim::StepLR>(opt, 2);
  auto b = std::make_shared<optim::CosineAnnealingWarmRestarts>(opt, 3);
  optim::SequentialLR seq(opt, {a, b}, {2});
  for (int i = 0; i < 3; ++i) seq.step();
  optim::State st = seq.state_dict();
  const int64_t a_epoch = a->last_epoch(), b_epoch = b->last_epoch(), seq_epoch = seq.last_epoch();
  optim::State bad = st;
  bad.scalars["scheduler.0.last_epoch"] = 40;  // valid, but the second sub-state lacks a key
  bad = without(bad, "scheduler.1.t_i");
  EXPECT_ERROR(seq.load_state_dict(bad), ValueError, "CosineAnnealingWarmRestarts");
  EXPECT_EQ(a->last_epoch(), a_epoch);  // the first sub-scheduler was not changed either
  EXPECT_EQ(b->last_epoch(), b_epoch);
  EXPECT_EQ(seq.last_epoch(), seq_epoch);
  EXPECT_ERROR(seq.load_state_dict(without(st, "last_epoch")), ValueError, "SequentialLR");
  EXPECT_EQ(a->last_epoch(), a_epoch);
  EXPECT_NO_THROW(seq.load_state_dict(st));
}

TEST(HostileLoads, ChainedSchedulerChecksEverySubSchedulerFirst) {
  optim::SGD opt(params(), {.lr = 0.1});
  auto c = std::make_shared<optim::StepLR>(opt, 2);
  auto d = std::make_shared<optim::CosineAnnealingWarmRestarts>(opt, 3);
  optim::ChainedScheduler chain({c, d});
  chain.step();
  optim::State cs = chain.state_dict();
  optim::State bad = cs;
  bad.scalars["scheduler.0.last_epoch"] = 40;
  bad = without(bad, "scheduler.1.last_lr.0");
  EXPECT_ERROR(chain.load_state_dict(bad), ValueError, "CosineAnnealingWarmRestarts");
  EXPECT_EQ(c->last_epoch(), 1);
  EXPECT_EQ(chain.get_last_lr(), d->get_last_lr());
}
