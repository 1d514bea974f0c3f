// Shape arithmetic on hostile sizes: every size, stride, offset and count stays inside int64,
// and sizes that would overflow are typed errors naming the op (never UB, never a wrapped size).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "hostile/expect_error.h"

using namespace ember;
namespace F = nn::functional;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k62 = int64_t(1) << 62;
}  // namespace

TEST(HostileShapes, CreationRefusesSizesThatOverflow) {
  // The element count multiplies to 0, but the strides would overflow: refused.
  EXPECT_ERROR(zeros({0, k62, k62}), ValueError, "zeros");
  EXPECT_ERROR(empty({k62, 4}), ValueError, "empty");
  EXPECT_ERROR(ones({int64_t(1) << 30, int64_t(1) << 30}), ValueError, "ones");
  EXPECT_ERROR(full({kMax}, 1.0), ValueError, "full");
  EXPECT_ERROR(rand({-1}), ValueError, "rand");
  EXPECT_ERROR(randint(0, 5, {kMin}), ValueError, "randint");
  EXPECT_ERROR(zeros(Shape(17, 1)), ShapeError, "zeros");
  // 2^56 elements is the limit; a zero-element shape within it is fine.
  EXPECT_EQ(zeros({0, int64_t(1) << 28, int64_t(1) << 28}).numel(), 0);
}

TEST(HostileShapes, ArangeLengthsNeverOverflow) {
  EXPECT_ERROR(arange(kMin, kMax), ValueError, "arange");
  EXPECT_ERROR(arange(0.0, 1e300, 1e-300), ValueError, "arange");
  // A range wider than int64 with a big step: 4 elements, computed without overflow.
  Tensor t = arange(kMin, kMax, k62);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{kMin, -k62, 0, k62}));
  Tensor d = arange(kMax, kMin, -k62);
  EXPECT_EQ(d.numel(), 4);
  EXPECT_EQ(d.to_vector<int64_t>()[3], kMax - k62 - k62 - k62);  // -2^62 - 1
}

TEST(HostileShapes, RandintWideRanges) {
  Tensor r = randint(kMin, kMax, {64});
  EXPECT_EQ(r.numel(), 64);  // any int64 is valid; the point is no UB computing them
  Tensor s = randint(kMax - 2, kMax, {64});
  EXPECT_GE(ember::min(s).item<int64_t>(), kMax - 2);
}

// Views compute their target's strides before checking its size; under UBSan an overflow there
// was a report (reshape({0, 2^62, 2^62})).
TEST(HostileShapes, ContiguousStridesSaturateInsteadOfWrapping) {
  EXPECT_EQ(contiguous_strides(Shape{k62, k62}), Shape({k62, 1}));
  EXPECT_EQ(contiguous_strides(Shape{k62, k62, k62}), Shape({kMax, k62, 1}));
  EXPECT_EQ(contiguous_strides(Shape{0, k62 / 4, 4}), Shape({k62, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape{0, k62, 4}), Shape({kMax, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape{kMax, kMax, kMax, 2}), Shape({kMax, kMax, 2, 1}));
}

TEST(HostileShapes, ViewsCheckTheirResults) {
  Tensor e = zeros({0});
  EXPECT_ERROR(e.reshape({0, k62, k62}), ValueError, "reshape");
  EXPECT_ERROR(e.reshape({-1, k62, k62}), ShapeError, "reshape");
  EXPECT_ERROR(zeros({6}).reshape({k62, 4, -1}), ShapeError, "reshape");
  EXPECT_ERROR(zeros({6}).view({kMax, kMax}), ShapeError, "view");
  EXPECT_ERROR(zeros({1, 3}).expand({k62, 3}), ValueError, "expand");
  EXPECT_ERROR(zeros({1, 1}).expand({k62, k62}), ValueError, "expand");
  EXPECT_ERROR(broadcast_to(zeros({1}), {kMax}), ValueError, "broadcast_to");
  EXPECT_ERROR(unflatten(zeros({1}), 0, {k62, 0}), ShapeError, "unflatten");
  EXPECT_ERROR(unflatten(zeros({0}), 0, {0, k62, k62}), ValueError, "unflatten");
  // A result within the limits is a plain view (stride 0).
  EXPECT_EQ(zeros({1, 3}).expand({int64_t(1) << 40, 3}).numel(), int64_t(3) << 40);
}

TEST(HostileShapes, SliceNarrowSelectWithExtremeBounds) {
  Tensor x = arange(5);
  EXPECT_EQ(x.slice(0, 1, std::nullopt, kMax).to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(x.slice(0, kMin, kMax).numel(), 5);
  EXPECT_EQ(x.slice(0, kMax, kMin).numel(), 0);
  EXPECT_EQ(x.slice(0, 0, 5, k62).to_vector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_ERROR(x.slice(0, 0, 5, 0), ValueError, "slice");
  EXPECT_ERROR(x.slice(0, 0, 5, kMin), ValueError, "slice");
  EXPECT_ERROR(x.narrow(0, 2, kMax), IndexError, "narrow");
  EXPECT_ERROR(x.narrow(0, kMin, 1), IndexError, "narrow");
  EXPECT_ERROR(x.narrow(0, kMax, 0), IndexError, "narrow");
  EXPECT_ERROR(x.narrow(0, 0, -1), IndexError, "narrow");
  EXPECT_ERROR(x.select(0, kMin), IndexError, "select");
  EXPECT_ERROR(x.select(0, kMax), IndexError, "select");
  EXPECT_ERROR(x.unsqueeze(kMin), IndexError, "unsqueeze");
  EXPECT_ERROR(x.transpose(kMax, 0), IndexError, "transpose");
  Tensor m = arange(12).reshape({3, 4});
  EXPECT_EQ(m.diagonal(kMax).numel(), 0);
  EXPECT_EQ(m.diagonal(kMin).numel(), 0);
  EXPECT_EQ(m.diagonal(-2).to_vector<int64_t>(), std::vector<int64_t>{8});
  // A sliced tensor with a huge step viewed again stays well-formed.
  Tensor s = x.slice(0, 0, 5, k62).unsqueeze(0);
  EXPECT_EQ(s.shape(), Shape({1, 1}));
}

TEST(HostileShapes, JoinsAndSplitsCheckTheirSums) {
  Tensor big = zeros({1}).expand({int64_t(1) << 55});
  EXPECT_ERROR(cat({big, big, big}), ValueError, "cat");
  EXPECT_ERROR(split(arange(4), {kMax, 2}), ValueError, "split");
  EXPECT_ERROR(split(arange(4), {kMax, kMax, 2}), ValueError, "split");
  EXPECT_EQ(chunk(arange(5), kMax).size(), 5u);
  EXPECT_EQ(split(arange(5), kMax).size(), 1u);
  EXPECT_ERROR(chunk(zeros({0}), int64_t(1) << 40), ValueError, "chunk");
  EXPECT_EQ(chunk(zeros({0}), 3).size(), 3u);
}

TEST(HostileShapes, ConvGeometryOverflowIsAnError) {
  Tensor x = zeros({1, 1, 4, 4}), w = zeros({1, 1, 2, 2});
  EXPECT_ERROR(F::conv2d(x, w, {}, {.padding = {k62}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, w, {}, {.padding = {kMax}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, w, {}, {.dilation = {k62}}), ShapeError, "conv2d");  // too big
  EXPECT_ERROR(F::conv2d(x, w, {}, {.dilation = {kMax}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, w, {}, {.padding_mode = "same", .dilation = {kMax}}), ValueError,
               "conv2d");
  EXPECT_ERROR(F::conv2d(x, w, {}, {.stride = {kMin}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv1d(zeros({1, 1, 4}), zeros({1, 1, 2}), {}, {.padding = {k62}}), ValueError,
               "conv1d");
  EXPECT_ERROR(F::conv_transpose2d(x, w, {}, {.stride = {k62}}), ValueError, "conv_transpose2d");
  EXPECT_ERROR(F::conv_transpose2d(x, w, {}, {.stride = {kMax}, .dilation = {kMax}}), ValueError,
               "conv_transpose2d");
  EXPECT_ERROR(F::conv_transpose1d(zeros({1, 1, 4}), zeros({1, 1, 2}), {}, {.dilation = {kMax}}),
               ValueError, "conv_transpose1d");
  EXPECT_ERROR(F::unfold(x, {k62, k62}), ValueError, "unfold");
  EXPECT_ERROR(F::unfold(x, {2, 2}, {kMax}), ValueError, "unfold");
  EXPECT_ERROR(F::unfold(x, {2, 2}, {1}, {kMax}), ValueError, "unfold");
  EXPECT_ERROR(F::fold(zeros({1, 4, 9}), {kMax, kMax}, {2, 2}), ValueError, "fold");
  EXPECT_ERROR(F::fold(zeros({1, 4, 9}), {4, 4}, {k62, k62}), ValueError, "fold");
}

TEST(HostileShapes, PoolingAndInterpolationSizes) {
  Tensor x = zeros({1, 1, 4, 4});
  EXPECT_ERROR(F::max_pool2d(x, {.kernel_size = {3}, .dilation = {kMax}}), ValueError,
               "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(x, {.kernel_size = {kMax}, .padding = {kMax / 2}}), ValueError,
               "max_pool2d");
  EXPECT_ERROR(F::avg_pool2d(x, {.kernel_size = {kMax}, .padding = {kMax / 2}}), ValueError,
               "avg_pool2d");
  EXPECT_EQ(F::max_pool2d(x, {.kernel_size = {2}, .stride = {kMax}}).shape(), Shape({1, 1, 1, 1}));
  EXPECT_ERROR(F::interpolate(zeros({1, 1, 4}), {.scale_factor = {1e300}}), ValueError,
               "interpolate");
  EXPECT_ERROR(F::interpolate(zeros({1, 1, 4}), {.scale_factor = {1e-300}}), ValueError,
               "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.size = {kMax, kMax}}), ValueError, "interpolate");
  EXPECT_ERROR(F::adaptive_avg_pool2d(x, {k62, k62}), ValueError, "adaptive_avg_pool2d");
}

TEST(HostileShapes, LoaderBatchCountsNeverOverflow) {
  auto ds = data::in_memory(std::vector<Tensor>{zeros({2}), ones({2}), zeros({2})});
  data::DataLoader<Tensor> all(ds, {.batch_size = kMax});
  EXPECT_EQ(all.size(), 1);
  int batches = 0;
  for (auto& b : all) {
    EXPECT_EQ(b.shape(), Shape({3, 2}));
    ++batches;
  }
  EXPECT_EQ(batches, 1);
  data::DataLoader<Tensor> dropped(ds, {.batch_size = kMax, .drop_last = true});
  EXPECT_EQ(dropped.size(), 0);
  data::DataLoader<Tensor> threaded(ds,
                                    {.batch_size = kMax - 1, .workers = 2, .prefetch = 1 << 30});
  EXPECT_EQ(threaded.size(), 1);
  for (auto& b : threaded) EXPECT_EQ(b.size(0), 3);
}

TEST(HostileShapes, ModulesCheckTheirParameterShapes) {
  // Named after the module, not "[empty]" (which the module called).
  EXPECT_ERROR(nn::Linear({.in = 2, .out = int64_t(1) << 60}), ValueError, "Linear");
  EXPECT_ERROR(nn::Linear({.in = kMax, .out = 2}), ValueError, "Linear");
  EXPECT_ERROR(nn::Embedding({.num = int64_t(1) << 40, .dim = int64_t(1) << 40}), ValueError,
               "Embedding");
  EXPECT_ERROR(nn::Bilinear({.in1 = int64_t(1) << 30, .in2 = int64_t(1) << 30, .out = 1 << 20}),
               ValueError, "Bilinear");
  EXPECT_ERROR(nn::Conv2d({.in = 1, .out = 1, .kernel = {k62, k62}}), ValueError, "Conv2d");
  EXPECT_ERROR(nn::LSTM({.in = 4, .hidden = k62}), ValueError, "LSTM");
  EXPECT_ERROR(nn::GRU({.in = 4, .hidden = kMax / 2}), ValueError, "GRU");
  EXPECT_ERROR(nn::MultiheadAttention({.embed_dim = k62, .num_heads = 1}), ValueError,
               "MultiheadAttention");
  EXPECT_ERROR(nn::LearnedPositionalEncoding({.max_len = k62, .d_model = 4}), ValueError,
               "LearnedPositionalEncoding");
}
