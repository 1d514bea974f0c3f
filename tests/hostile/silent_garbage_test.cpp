// Calls that used to return garbage without a word now fail (or do the right thing), and errors
// name the op or module the user called rather than a helper it went through.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <limits>

#include "ember/data/idx.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "ember/store/load.h"
#include "ember/store/safetensors.h"
#include "ember/train/learner.h"
#include "hostile/expect_error.h"
#include "hostile/learner_util.h"
#include "store/store_test_util.h"

using namespace ember;
namespace F = nn::functional;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(HostileGarbage, RandomOpsRefuseMeaninglessParameters) {
  EXPECT_ERROR(bernoulli(full({2}, kNaN)), ValueError, "bernoulli");  // used to give zeros
  EXPECT_ERROR(bernoulli(full({2}, 1.5)), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(tensor({0.5, -0.5}, kF64)), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(ones({2}), kNaN), ValueError, "bernoulli");
  EXPECT_EQ(bernoulli(tensor({0.0f, 1.0f})).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_ERROR(normal(0, kNaN, {2}), ValueError, "normal");
  EXPECT_ERROR(normal(kInf, 1, {2}), ValueError, "normal");
  EXPECT_ERROR(uniform(kNaN, 1, {2}), ValueError, "uniform");
  EXPECT_ERROR(uniform(0, kInf, {2}), ValueError, "uniform");
  // Bounds a dtype cannot hold would wrap.
  EXPECT_ERROR(randint(0, 1000, {3}, {kU8}), ValueError, "randint");
  EXPECT_ERROR(randint(-200, 0, {3}, {kI8}), ValueError, "randint");
  EXPECT_EQ(randint(0, 256, {100}, {kU8}).dtype(), kU8);
  EXPECT_EQ(randint(-128, 128, {100}, {kI8}).dtype(), kI8);
  // Integer dtypes have no NaN or inf to hold an infinite end.
  EXPECT_ERROR(linspace(kNaN, 1, 3, {kI64}), ValueError, "linspace");
  EXPECT_ERROR(linspace(0, kInf, 3, {kI32}), ValueError, "linspace");
  EXPECT_TRUE(std::isnan(linspace(kNaN, 1, 3).to_vector<float>()[0]));  // floats hold NaN
}

TEST(HostileGarbage, KernelsOfSizeZeroAreRefused) {
  EXPECT_ERROR(nn::Conv2d({.in = 1, .out = 1, .kernel = 0}), ValueError, "Conv2d");
  EXPECT_ERROR(nn::Conv1d({.in = 1, .out = 1, .kernel = -3}), ValueError, "Conv1d");
  EXPECT_ERROR(nn::ConvTranspose2d({.in = 1, .out = 1, .kernel = {2, 0}}), ValueError,
               "ConvTranspose2d");
  Tensor x = zeros({1, 1, 4, 4});
  EXPECT_ERROR(F::conv2d(x, zeros({1, 1, 0, 2})), ShapeError, "conv2d");
  EXPECT_ERROR(F::conv1d(zeros({1, 1, 4}), zeros({1, 1, 0})), ShapeError, "conv1d");
}

TEST(HostileGarbage, WritesIntoBroadcastViewsAreRefused) {
  Tensor x = zeros({3});
  EXPECT_ERROR(x.expand({2, 3}).copy_(ones({2, 3})), ValueError, "copy_");
  EXPECT_ERROR(x.expand({2, 3}).add_(1), ValueError, "copy_");
  EXPECT_ERROR(x.expand({2, 3}).fill_(1), ValueError, "copy_");
  EXPECT_EQ(sum(x).item<float>(), 0);
  // An expanded size-1 dim is a single element: writing it is fine.
  Tensor w = zeros({1, 3});
  w.expand({1, 3}).fill_(2);
  EXPECT_EQ(sum(w).item<float>(), 6);
}

TEST(HostileGarbage, OverlappingCopiesReadTheSourceFirst) {
  Tensor y = arange(5.0);
  y.slice(0, 1, std::nullopt).copy_(y.slice(0, 0, 4));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3}));
  Tensor z = arange(5.0);
  z.slice(0, 0, 4).copy_(z.slice(0, 1, std::nullopt));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 4}));
  Tensor m = arange(9.0).reshape({3, 3});
  m.copy_(m.t());
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  Tensor c = arange(4.0);
  c.slice(0, 0, 2).copy_(c.slice(0, 2, 4));  // same storage, no overlap
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{2, 3, 2, 3}));
}

TEST(HostileGarbage, WriteIdxRefusesSizesItCannotStore) {
  test::ScratchDir dir;
  // IDX sizes are 32 bits: 2^33 used to be written as 0.
  EXPECT_ERROR(data::write_idx(dir.file("big.idx"), zeros({1}, {kU8}).expand({int64_t(1) << 33})),
               ValueError, "write_idx");
  EXPECT_FALSE(std::filesystem::exists(dir.file("big.idx")));
  // Written atomically: a FIFO at the path is replaced, never opened for writing (no block).
  std::string fifo = dir.file("f.idx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  data::write_idx(fifo, arange(3, {kU8}));
  EXPECT_EQ(data::read_idx(fifo).numel(), 3);
}

TEST(HostileGarbage, ResavingKeepsAFilesPermissions) {
  test::ScratchDir dir;
  std::string p = dir.file("secret.safetensors");
  store::save_safetensors(p, {{"a", ones({1})}});
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
  store::save_safetensors(p, {{"a", zeros({1})}});
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // used to become 0644
}

TEST(HostileGarbage, EmptyLoadersAreRefused) {
  test::TinyRun r;
  auto empty = data::in_memory(std::vector<data::Example>{});
  data::DataLoader<data::Example> none(empty, {.batch_size = 4});
  // An epoch without batches used to be recorded with loss NaN.
  EXPECT_ERROR(r.learner->fit(none, train::classification_step(r.net)), ValueError, "Learner");
  data::DataLoader<data::Example> dropped(r.ds, {.batch_size = 64, .drop_last = true});
  EXPECT_ERROR(r.learner->fit(dropped, train::classification_step(r.net)), ValueError, "Learner");
  EXPECT_ERROR(r.learner->fit(r.loader, &none, train::classification_step(r.net)), ValueError,
               "Learner");
  EXPECT_TRUE(train::Learner::latest_checkpoint(r.dir.path.string()).empty());
}

TEST(HostileGarbage, ErrorsNameWhatTheUserCalled) {
  // Undefined tensors in a state dict or a target map used to fail inside shape() as "[shape]".
  nn::Linear lin({.in = 3, .out = 2});
  EXPECT_ERROR(lin.load_state_dict({{"weight", Tensor()}, {"bias", ones({2})}}), ValueError,
               "load_state_dict");
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", ones({3})}});
  Tensor undefined;
  EXPECT_ERROR(store::load_into({{"a", undefined}}, p), ValueError, "store");
}
