// The cpu backend's convolutions and pooling against flex's: strides, padding (symmetric,
// 'same', 'valid'), dilation, groups, depthwise, transposed convolutions with output_padding,
// non-contiguous and unbatched inputs, batches that end in a partial chunk, gradients, and every
// fallback (dtypes, indices, NaN and infinities, ceil_mode windows past the padding).
#include "cpu_test_util.h"

namespace ember::test {
namespace {

namespace F = nn::functional;

struct ConvCase {
  const char* name;
  Shape x, w;
  F::ConvOptions o;
  bool bias = true;
};

TEST(CpuConv, Conv2dVariants) {
  const ConvCase cases[] = {
      {"3x3_pad1", {2, 8, 10, 10}, {16, 8, 3, 3}, {.padding = {1}}},
      {"stride2", {2, 8, 11, 9}, {16, 8, 3, 3}, {.stride = {2}, .padding = {1}}},
      {"stride_2x1", {2, 8, 11, 9}, {16, 8, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}}},
      {"dilation2", {2, 8, 12, 12}, {8, 8, 3, 3}, {.padding = {2}, .dilation = {2}}},
      {"groups4", {2, 8, 9, 9}, {16, 2, 3, 3}, {.padding = {1}, .groups = 4}},
      {"depthwise", {2, 8, 9, 9}, {8, 1, 3, 3}, {.padding = {1}, .groups = 8}},
      {"same_even_kernel", {2, 4, 9, 8}, {6, 4, 4, 4}, {.padding_mode = "same"}},
      {"valid", {2, 4, 9, 8}, {6, 4, 3, 3}, {.padding_mode = "valid"}},
      {"1x1", {2, 16, 7, 7}, {8, 16, 1, 1}, {}},
      {"stride_skips_rows", {2, 4, 10, 10}, {4, 4, 3, 3}, {.stride = {4}}},
      {"no_bias", {2, 8, 10, 10}, {16, 8, 3, 3}, {.padding = {1}}, false},
      {"one_input_channel", {3, 1, 12, 12}, {8, 1, 5, 5}, {.padding = {2}}},
      {"partial_chunk", {11, 16, 64, 64}, {16, 16, 3, 3}, {.padding = {1}}},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const F::ConvOptions o = c.o;
    expect_same([o](auto& t) { return F::conv2d(t[0], t[1], t[2], o); },
                {rnd(c.x), rnd(c.w), c.bias ? rnd({c.w[0]}) : Tensor()}, true, 1e-4, 1e-4);
  }
}

TEST(CpuConv, OtherRanksAndLayouts) {
  expect_same([](auto& t) { return F::conv1d(t[0], t[1], t[2], {.stride = {2}, .padding = {2}}); },
              {rnd({2, 4, 20}), rnd({6, 4, 5}), rnd({6})}, true);
  expect_same([](auto& t) { return F::conv3d(t[0], t[1], t[2], {.padding = {1}}); },
              {rnd({2, 3, 6, 6, 6}), rnd({4, 3, 3, 3, 3}), rnd({4})}, true);
  // Unbatched, and a channels-last view (the reorder reads the strides; nothing is copied first).
  expect_same([](auto& t) { return F::conv2d(t[0], t[1], t[2], {.padding = {1}}); },
              {rnd({8, 10, 10}), rnd({16, 8, 3, 3}), rnd({16})}, true);
  expect_same(
      [](auto& t) {
        return F::conv2d(t[0].permute({0, 3, 1, 2}), t[1], t[2], {.padding = {1}});
      },
      {rnd({2, 10, 10, 8}), rnd({16, 8, 3, 3}), rnd({16})}, true);
  // A transposed weight view.
  expect_same([](auto& t) { return F::conv2d(t[0], t[1].transpose(0, 1), t[2], {.padding = {1}}); },
              {rnd({2, 8, 10, 10}), rnd({8, 16, 3, 3}), rnd({16})}, true);
}

TEST(CpuConv, ConvTranspose) {
  struct Case {
    const char* name;
    Shape x, w;
    F::ConvTransposeOptions o;
  };
  const Case cases[] = {
      {"plain", {2, 8, 7, 7}, {8, 4, 3, 3}, {}},
      {"stride2_pad1", {2, 8, 7, 7}, {8, 4, 3, 3}, {.stride = {2}, .padding = {1}}},
      {"output_padding", {2, 8, 7, 6}, {8, 4, 3, 3}, {.stride = {2}, .output_padding = {1}}},
      {"groups2", {2, 8, 5, 5}, {8, 3, 3, 3}, {.stride = {2}, .padding = {1}, .groups = 2}},
      {"dilation2",
       {2, 4, 6, 6},
       {4, 4, 3, 3},
       {.stride = {3}, .output_padding = {2}, .dilation = {2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const F::ConvTransposeOptions o = c.o;
    const int64_t out_ch = c.w[1] * o.groups;
    expect_same([o](auto& t) { return F::conv_transpose2d(t[0], t[1], t[2], o); },
                {rnd(c.x), rnd(c.w), rnd({out_ch})}, true);
  }
  expect_same([](auto& t) { return F::conv_transpose1d(t[0], t[1], t[2], {.stride = {2}}); },
              {rnd({2, 4, 9}), rnd({4, 6, 4}), rnd({6})}, true);
}

TEST(CpuConv, OtherDtypesFallBack) {
  auto conv = [](auto& t) { return F::conv2d(t[0], t[1], t[2], {.padding = {1}}); };
  expect_same(conv,
              {rnd({2, 4, 6, 6}, DType::F64), rnd({4, 4, 3, 3}, DType::F64), rnd({4}, DType::F64)},
              false, 1e-12, 1e-12);
  Tensor x = (rnd({2, 4, 6, 6}) * 4).to(DType::I32), w = (rnd({4, 4, 3, 3}) * 4).to(DType::I32);
  expect_same(conv, {x, w, Tensor()}, false, 0, 0);
  for (DType dt : {DType::F16, DType::BF16})  // through flex's cast to f32
    expect_same(conv, {rnd({2, 4, 6, 6}, dt), rnd({4, 4, 3, 3}, dt), rnd({4}, dt)}, true, 2e-2,
                2e-2);
  expect_same(conv, {rnd({0, 4, 6, 6}), rnd({4, 4, 3, 3}), rnd({4})}, false);  // empty batch
}

TEST(CpuConv, GradientsMatchFlex) {
  // The VJP rules run transposed convolutions (strided input gradient), convolutions of the
  // padded cotangent (unit stride) and unfold + matmul (weight gradient): all reach oneDNN.
  for (int64_t stride : {1, 2}) {
    SCOPED_TRACE(stride);
    std::vector<Tensor> in = {rnd({2, 4, 9, 9}), rnd({6, 2, 3, 3}), rnd({6})};
    const F::ConvOptions o{.stride = {stride}, .padding = {1}, .groups = 2};
    auto grads = [&](Device d) {
      Device ad = d.autodiff();
      Tensor x = in[0].to(ad).requires_grad_(), w = in[1].to(ad).requires_grad_();
      Tensor b = in[2].to(ad).requires_grad_();
      Tensor y = F::conv2d(x, w, b, o);
      Gradients g = (y * y).sum().backward();
      return std::vector<Tensor>{x.grad(g), w.grad(g), b.grad(g)};
    };
    const int64_t served = cpu::dnnl_stats().served;
    auto gc = grads(Device::cpu());
    if (cpu::dnnl_available()) EXPECT_GT(cpu::dnnl_stats().served, served + 1);
    auto gf = grads(Device::flex());
    for (size_t i = 0; i < gf.size(); ++i) EXPECT_EQ(mismatch(gc[i], gf[i], 1e-4, 1e-3), "") << i;
  }
}

// conv_input_grad and conv_weight_grad as oneDNN calls (a deconvolution, a backward-weights
// convolution over image ranges): one group, strides, padding, dilation, input rows past the last
// window, one image and several, a channels-last input.
TEST(CpuConv, GradientOpsMatchFlex) {
  struct Case {
    const char* name;
    Shape x, w;
    F::ConvOptions o;
    bool channels_last = false;
  };
  const Case cases[] = {
      {"3x3_p1", {3, 8, 12, 12}, {16, 8, 3, 3}, {.padding = {1}}},
      {"3x3_s2", {2, 4, 10, 11}, {8, 4, 3, 3}, {.stride = {2}}},
      {"3x3_d2_p2", {1, 4, 9, 9}, {4, 4, 3, 3}, {.padding = {2}, .dilation = {2}}},
      {"5x3_s2_p1", {2, 3, 13, 9}, {6, 3, 5, 3}, {.stride = {2}, .padding = {1}}},
      {"one_in_channel", {64, 1, 28, 28}, {32, 1, 3, 3}, {.padding = {1}}},
      {"channels_last", {2, 16, 8, 8}, {16, 16, 3, 3}, {.padding = {1}}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = {rnd(c.x), rnd(c.w), rnd({c.w[0]})};
    auto grads = [&](Device d) {
      Device ad = d.autodiff();
      Tensor x0 = in[0].to(ad);
      if (c.channels_last) x0 = x0.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      Tensor x = x0.detach().requires_grad_(), w = in[1].to(ad).requires_grad_();
      Tensor b = in[2].to(ad).requires_grad_();
      Tensor y = F::conv2d(x, w, b, c.o);
      Gradients g = (y * y).sum().backward();
      return std::vector<Tensor>{x.grad(g), w.grad(g), b.grad(g)};
    };
    const int64_t served = cpu::dnnl_stats().served;
    auto gc = grads(Device::cpu().eager());
    // The forward and both gradients.
    if (cpu::dnnl_available()) EXPECT_GE(cpu::dnnl_stats().served, served + 3);
    auto gl = grads(Device::cpu());
    auto gf = grads(Device::flex());
    for (size_t i = 0; i < gf.size(); ++i) {
      EXPECT_EQ(mismatch(gc[i], gf[i], 1e-4, 1e-3), "") << i;
      EXPECT_EQ(mismatch(gl[i], gf[i], 1e-4, 1e-3), "") << i;
    }
  }
}

// --- pooling ---

TEST(CpuPool, MaxAndAverage) {
  struct Case {
    const char* name;
    bool max;
    Shape x;
    F::PoolOptions o;
    bool by_dnnl = true;
  };
  const Case cases[] = {
      {"max_3x3", true, {2, 16, 12, 12}, {.kernel_size = {3}}},
      // flex's 2x2 stride-2 kernel is faster than oneDNN's: flex's.
      {"max_2x2", true, {2, 16, 12, 12}, {.kernel_size = {2}}, false},
      {"max_3x3_s2_p1", true, {2, 16, 13, 11}, {.kernel_size = {3}, .stride = {2}, .padding = {1}}},
      {"max_ceil", true, {2, 8, 10, 10}, {.kernel_size = {3}, .stride = {2}, .ceil_mode = true}},
      // oneDNN has only its reference loop for dilated pooling: flex's.
      {"max_dilation2",
       true,
       {2, 8, 10, 10},
       {.kernel_size = {3}, .padding = {1}, .dilation = {2}},
       false},
      {"max_odd_channels", true, {2, 5, 9, 9}, {.kernel_size = {2}, .stride = {1}}},
      {"avg_include_pad",
       false,
       {2, 16, 13, 11},
       {.kernel_size = {3}, .stride = {2}, .padding = {1}}},
      {"avg_exclude_pad",
       false,
       {2, 16, 13, 11},
       {.kernel_size = {3}, .stride = {2}, .padding = {1}, .count_include_pad = false}},
      {"avg_ceil_exclude",
       false,
       {2, 8, 10, 10},
       {.kernel_size = {3}, .stride = {2}, .ceil_mode = true, .count_include_pad = false}},
      // torch shrinks the divisor of a ceil_mode window that hangs past the padding: flex's.
      {"avg_ceil_include_past_pad",
       false,
       {2, 8, 10, 10},
       {.kernel_size = {3}, .stride = {2}, .ceil_mode = true},
       false},
      {"avg_ceil_include_within_pad",
       false,
       {2, 8, 9, 9},
       {.kernel_size = {3}, .stride = {2}, .padding = {1}, .ceil_mode = true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const F::PoolOptions o = c.o;
    if (c.max)
      expect_same([o](auto& t) { return F::max_pool2d(t[0], o); }, {rnd(c.x)}, c.by_dnnl);
    else
      expect_same([o](auto& t) { return F::avg_pool2d(t[0], o); }, {rnd(c.x)}, c.by_dnnl);
  }
  expect_same([](auto& t) { return F::max_pool1d(t[0], {.kernel_size = {3}, .stride = {2}}); },
              {rnd({2, 8, 21})}, true);
  expect_same([](auto& t) { return F::avg_pool1d(t[0], {.kernel_size = {4}, .padding = {2}}); },
              {rnd({2, 8, 21})}, true);
  // Unbatched and non-contiguous inputs.
  expect_same([](auto& t) { return F::max_pool2d(t[0], {.kernel_size = {3}, .stride = {2}}); },
              {rnd({8, 10, 10})}, true);
  expect_same(
      [](auto& t) {
        return F::avg_pool2d(t[0].permute({0, 3, 1, 2}), {.kernel_size = {2}});
      },
      {rnd({2, 10, 10, 8})}, true);
}

TEST(CpuPool, FallbacksKeepTorchSemantics) {
  auto pool = [](auto& t) {
    return F::max_pool2d(t[0], {.kernel_size = {3}, .stride = {1}, .padding = {1}});
  };
  // NaN wins its window and -inf is a value (oneDNN would return -FLT_MAX): flex's kernel.
  Tensor x = rnd({2, 8, 6, 6});
  std::vector<float> v = x.to_vector<float>();
  v[3] = NAN;
  for (int r = 2; r < 5; ++r)  // a 3x3 block of -inf in plane 1: one window sees only -inf
    for (int c = 2; c < 5; ++c) v[size_t(36 + r * 6 + c)] = -INFINITY;
  v[200] = INFINITY;
  expect_same(pool, {tensor(v, x.shape())}, false);
  v[3] = 0;  // infinities alone
  expect_same(pool, {tensor(v, x.shape())}, false);
  expect_same(pool, {x}, true);  // the same call, finite: oneDNN's
  // Indices: torch's flat positions (oneDNN's workspace is not).
  expect_same(
      [](auto& t) { return std::get<1>(F::max_pool2d_with_indices(t[0], {.kernel_size = {2}})); },
      {rnd({2, 8, 6, 6})}, false, 0, 0);
  // Other dtypes: f64 is flex's; f16/bf16 have no oneDNN path on every CPU: flex's.
  expect_same(pool, {rnd({2, 8, 6, 6}, DType::F64)}, false, 0, 0);
  expect_same(pool, {rnd({2, 8, 6, 6}, DType::BF16)}, false, 0, 0);
  expect_same(pool, {rnd({0, 8, 6, 6})}, false);
}

TEST(CpuPool, PartialChunkAndLargeInput) {
  // 20 images of 64 x 56 x 56: chunks of a few images and a partial last chunk.
  expect_same(
      [](auto& t) {
        return F::max_pool2d(t[0], {.kernel_size = {3}, .stride = {2}, .padding = {1}});
      },
      {rnd({20, 64, 56, 56})}, true, 0, 0);
  expect_same([](auto& t) { return F::avg_pool2d(t[0], {.kernel_size = {2}}); },
              {rnd({20, 64, 56, 56})}, true, 1e-6, 1e-6);
}

// flex's max pooling without indices (taps outermost, columns innermost) against its windowed
// kernel with indices, over strides, padding, dilation and ceil_mode, NaN and infinities included.
TEST(FlexPool, ValuesWithoutIndicesMatchTheWindowedKernel) {
  Tensor x = rnd({2, 3, 9, 11});
  std::vector<float> v = x.to_vector<float>();
  v[5] = NAN, v[40] = -INFINITY, v[41] = -INFINITY, v[120] = INFINITY, v[300] = NAN;
  x = tensor(v, x.shape());
  for (int64_t k : {2, 3, 4})
    for (int64_t st : {1, 2, 3})
      for (int64_t pad = 0; pad <= k / 2; ++pad)
        for (int64_t dil : {1, 2})
          for (bool ceil : {false, true}) {
            SCOPED_TRACE(std::to_string(k) + " " + std::to_string(st) + " " + std::to_string(pad) +
                         " " + std::to_string(dil) + " " + std::to_string(ceil));
            const PoolOptions o{.kernel_size = {k},
                                .stride = {st},
                                .padding = {pad},
                                .dilation = {dil},
                                .ceil_mode = ceil};
            EXPECT_EQ(
                mismatch(F::max_pool2d(x, o), std::get<0>(F::max_pool2d_with_indices(x, o)), 0, 0),
                "");
          }
}

}  // namespace
}  // namespace ember::test
