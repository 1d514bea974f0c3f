// Mixed precision on a GPU: the autocast ops run in bf16/f16 on cuBLASLt and cuDNN without the
// host fallback, an MLP (through the Learner) and a small convnet (batch norm included) trained
// in bf16 and in f16 with loss scaling reach the f32 loss, and out-of-memory recovery after the
// allocator's cache was filled. Every test skips without a GPU; the policy's logic is tested on
// the host in tests/api/amp_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda/cuda_util.h"
#include "ember/amp.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/train/learner.h"

namespace ember {
namespace {
namespace F = nn::functional;

// The tolerance of the trained losses: |loss - f32 loss| <= kAbs + kRel * f32 loss.
constexpr double kAbs = 0.05, kRel = 0.15;

TEST(CudaAmp, AutocastOpsRunInTheComputeDtypeOnTheDevice) {
  EMBER_REQUIRE_GPU();
  for (DType low : {kBF16, kF16}) {
    const Device d = Device::cuda(0).mixed_precision(low);
    SCOPED_TRACE(d.str());
    cuda::reset_fallback_stats();
    manual_seed(0);
    Tensor x = randn({64, 96}), w = randn({80, 96}) * 0.1, b = randn({80});
    Tensor y = linear(x.to(d), w.to(d), b.to(d));
    EXPECT_EQ(y.dtype(), low);
    EXPECT_LT(testing::rel_error(y.to(kF32), linear(x, w, b)), 1e-2);
    Tensor img = randn({2, 8, 12, 12}), k = randn({16, 8, 3, 3}) * 0.1;
    Tensor c = conv2d(img.to(d), k.to(d), {}, {.padding = {1}});
    EXPECT_EQ(c.dtype(), low);
    EXPECT_LT(testing::rel_error(c.to(kF32), conv2d(img, k, {}, {.padding = {1}})), 1e-2);
    Tensor q = randn({2, 4, 32, 16});
    Tensor a = scaled_dot_product_attention(q.to(d), q.to(d), q.to(d), {.is_causal = true});
    EXPECT_EQ(a.dtype(), low);
    EXPECT_LT(testing::rel_error(a.to(kF32), scaled_dot_product_attention(q, q, q, {.is_causal = true})),
              2e-2);
    EXPECT_EQ(softmax(y, 1).dtype(), kF32);
    EXPECT_EQ(layer_norm(y, Shape{80}).dtype(), kF32);
    EXPECT_EQ(sum(y).dtype(), kF32);
    cuda::synchronize(0);
    EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats().front().first;
  }
}

// 2048 points labelled by a random teacher network (the same for every run).
struct TeacherData {
  Tensor x, y;
  TeacherData() {
    manual_seed(7);
    Tensor w1 = randn({32, 64}), w2 = randn({64, 10});
    x = randn({2048, 32});
    y = argmax(matmul(relu(matmul(x, w1)), w2), 1);
  }
};

struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 32, .out = 256}}, fc2{{.in = 256, .out = 256}}, fc3{{.in = 256, .out = 10}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }
  Tensor forward(const Tensor& x) override { return fc3(relu(fc2(relu(fc1(x))))); }
};

// Trains the MLP through the Learner on `d` (an f16 device gets its loss scaler there) and
// returns the loss over the whole set afterwards.
double learner_mlp_loss(Device d) {
  static TeacherData data;
  std::vector<data::Example> items;
  for (int64_t i = 0; i < data.x.size(0); ++i) items.emplace_back(data.x[i], data.y[i]);
  data::DataLoader<data::Example> loader(data::in_memory(std::move(items)),
                                         {.batch_size = 128, .shuffle = true, .seed = 1});
  manual_seed(3);
  Mlp net;
  net.to(d);
  optim::Adam opt(net.parameters(), {.lr = 2e-3});
  train::Learner learner(net, opt, {.epochs = 8, .renderer = train::silent_renderer()});
  learner.fit(loader, train::classification_step(net));
  for (const Tensor& p : net.parameters()) EXPECT_EQ(p.dtype(), kF32);
  NoGradGuard ng;
  return F::cross_entropy(net(data.x.to(d)), data.y.to(d)).item<double>();
}

TEST(CudaAmp, MlpThroughTheLearnerReachesTheF32Loss) {
  EMBER_REQUIRE_GPU();
  const double f32 = learner_mlp_loss(Device::cuda(0).autodiff());
  EXPECT_LT(f32, 0.8) << "the f32 run did not learn the task (ln 10 = 2.30 at the start)";
  for (DType low : {kBF16, kF16}) {
    const double loss = learner_mlp_loss(Device::cuda(0).autodiff().mixed_precision(low));
    std::printf("mlp: f32 loss %.4f, %s loss %.4f\n", f32, std::string(dtype_name(low)).c_str(),
                loss);
    EXPECT_NEAR(loss, f32, kAbs + kRel * f32) << dtype_name(low);
  }
}

struct ConvNet : nn::Module {
  nn::Conv2d c1{{.in = 1, .out = 16, .kernel = 3, .padding = 1}};
  nn::BatchNorm2d bn{16};
  nn::Conv2d c2{{.in = 16, .out = 32, .kernel = 3, .padding = 1}};
  nn::Linear fc{{.in = 32 * 4 * 4, .out = 10}};
  ConvNet() { register_modules({{"c1", c1}, {"bn", bn}, {"c2", c2}, {"fc", fc}}); }
  Tensor forward(const Tensor& x) override {
    Tensor h = max_pool2d(relu(bn(c1(x))), {.kernel_size = {2}});
    h = max_pool2d(relu(c2(h)), {.kernel_size = {2}});
    return fc(h.flatten(1));
  }
};

// 16x16 images: one of 10 fixed patterns under noise. Trains 150 steps of b64 with a manual
// loop (GradScaler for f16) and returns the loss over the set afterwards.
double convnet_loss(Device d, int64_t* skipped = nullptr) {
  manual_seed(11);
  Tensor patterns = randn({10, 1, 16, 16});
  Tensor labels = randint(0, 10, {1024});
  Tensor images = index_select(patterns, 0, labels) + randn({1024, 1, 16, 16}) * 1.5;
  Tensor x = images.to(d), y = labels.to(d);
  manual_seed(12);
  ConvNet net;
  net.to(d);
  optim::Adam opt(net.parameters(), {.lr = 2e-3});
  amp::GradScaler scaler({.enabled = amp::compute_dtype(d) == kF16});
  for (int step = 0; step < 150; ++step) {
    const int64_t at = (step * 64) % 1024;
    Tensor xb = x.narrow(0, at, 64), yb = y.narrow(0, at, 64);
    Gradients g = scaler.scale(F::cross_entropy(net(xb), yb)).backward();
    scaler.step(opt, g);
    scaler.update();
  }
  if (skipped) *skipped = scaler.skipped_steps();
  net.eval();
  NoGradGuard ng;
  return F::cross_entropy(net(x), y).item<double>();
}

TEST(CudaAmp, ConvnetReachesTheF32Loss) {
  EMBER_REQUIRE_GPU();
  const double f32 = convnet_loss(Device::cuda(0).autodiff());
  EXPECT_LT(f32, 1.0) << "the f32 run did not learn the task";
  for (DType low : {kBF16, kF16}) {
    int64_t skipped = 0;
    const double loss = convnet_loss(Device::cuda(0).autodiff().mixed_precision(low), &skipped);
    std::printf("convnet: f32 loss %.4f, %s loss %.4f (%lld steps skipped)\n", f32,
                std::string(dtype_name(low)).c_str(), loss, (long long)skipped);
    EXPECT_NEAR(loss, f32, kAbs + kRel * f32) << dtype_name(low);
    EXPECT_LE(skipped, 5);
  }
}

TEST(CudaAmp, F16OverflowIsSkippedOnTheDevice) {
  EMBER_REQUIRE_GPU();
  const Device d = Device::cuda(0).autodiff().mixed_precision(kF16);
  manual_seed(4);
  Mlp net;
  net.to(d);
  const Tensor before = net.fc1.weight.to(Device::flex()).clone();
  optim::Adam opt(net.parameters(), {.lr = 1e-3});
  amp::GradScaler scaler({.init_scale = std::ldexp(1.0, 40)});
  Tensor x = randn({128, 32}).to(d), y = randint(0, 10, {128}).to(d);
  Gradients g = scaler.scale(F::cross_entropy(net(x), y)).backward();
  EXPECT_FALSE(scaler.step(opt, g));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), std::ldexp(1.0, 39));
  EXPECT_TRUE(equal(net.fc1.weight.to(Device::flex()), before));
}

// Out of memory after the stream-ordered pool holds a large cached block: the allocator gives
// its cache back and retries, a request beyond the GPU raises OutOfMemory naming the requested
// and free bytes, and the process goes on.
TEST(CudaMemory, OutOfMemoryAfterCachingRecovers) {
  EMBER_REQUIRE_GPU();
  cuda::synchronize(0);
  cuda::empty_cache(0);
  // The free and total bytes, from the error of a request no GPU can meet.
  int64_t free_bytes = 0, total = 0;
  try {
    Tensor t = empty({int64_t(1) << 50}, {kU8, Device::cuda(0)});
    FAIL() << "2^50 bytes were allocated";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("requested 1125899906842624 bytes"), std::string::npos) << what;
    const size_t f = what.find(" bytes, ") + 8;
    free_bytes = std::stoll(what.substr(f));
    total = std::stoll(what.substr(what.find("free of ") + 8));
  }
  ASSERT_GT(free_bytes, int64_t(1) << 30);
  ASSERT_GE(total, free_bytes);
  // 55% of the free memory, dropped: the pool keeps it cached (reserved, not allocated).
  {
    Tensor a = empty({free_bytes / 100 * 55}, {kU8, Device::cuda(0)});
    cuda::synchronize(0);
    EXPECT_GE(cuda::memory_stats(0).allocated, free_bytes / 100 * 55);
  }
  cuda::synchronize(0);
  EXPECT_GE(cuda::memory_stats(0).reserved, free_bytes / 100 * 55);
  // 80% more does not fit beside the cache: it fits once the cache was given back.
  {
    Tensor b = empty({free_bytes / 100 * 80}, {kU8, Device::cuda(0)});
    cuda::synchronize(0);
    EXPECT_LT(cuda::memory_stats(0).reserved, free_bytes / 100 * 135);
  }
  // More than the whole GPU: OutOfMemory with the requested and free bytes.
  const int64_t want = total + (int64_t(1) << 30);
  try {
    Tensor c = empty({want}, {kU8, Device::cuda(0)});
    FAIL() << want << " bytes were allocated";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("requested " + std::to_string(want) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes free of " + std::to_string(total)), std::string::npos) << what;
    EXPECT_NE(what.find("cache was emptied"), std::string::npos) << what;
  }
  // The process goes on: a later allocation and a kernel work.
  Tensor ok = full({1 << 20}, 3.f, {kF32, Device::cuda(0)}) * 2;
  EXPECT_FLOAT_EQ(ok.to(Device::flex()).to_vector<float>()[12345], 6.f);
  cuda::empty_cache(0);
}

}  // namespace
}  // namespace ember
