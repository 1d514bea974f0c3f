// Channels-last convolutions on the cpu backend (ember/backends/cpu/dnnl_conv.cpp): an input and
// a placed output with NHWC strides under the NCHW shape give the NCHW result, with no reorder
// of either; a batch of one splits over two threads by output rows; and the fusion layer keeps
// the values that pass from one convolution to the next channels-last (fusion/plan.cpp).
#include "cpu_test_util.h"
#include "fusion/fusion_helpers.h"
#include "ember/backends/backend.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/fusion.h"
#include "ember/ops/conv.h"
#include "ember/tensor_impl.h"

namespace ember::test {
namespace {

namespace F = nn::functional;
using cpu::Activation;
using cpu::Epilogue;

const Device kCpu = Device::cpu().eager();

Tensor to_last(const Tensor& t) {  // the same values, channels-last, on eager cpu
  Tensor r = ops::empty_channels_last(t.shape(), t.dtype(), kCpu);
  r.copy_(t.to(kCpu));
  return r;
}

struct Case {
  const char* name;
  Shape x, w;
  ConvOptions o;
  // Split by output channels (rows would not share out evenly, or a piece would read no row):
  // a band of a channels-last output's channels is not dense, so each piece's is reordered.
  bool by_channels = false;
};

// Two threads, whatever the machine: the splits by rows and by channels are what is tested.
class ConvLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
    threads_ = flex::num_threads();
    flex::set_num_threads(2);
  }
  void TearDown() override {
    if (threads_) flex::set_num_threads(threads_);
  }
  static Attrs attrs(const ConvOptions& o) {
    return ops::conv_attrs(o.stride, o.padding, o.dilation, o.groups);
  }
  int threads_ = 0;
};

const Case kCases[] = {
    {"3x3, rows split evenly", {1, 32, 28, 28}, {32, 32, 3, 3}, {.padding = {1}}},
    {"3x3 stride 2", {1, 32, 28, 28}, {64, 32, 3, 3}, {.stride = {2}, .padding = {1}}},
    {"7 rows: split by channels", {1, 64, 7, 7}, {64, 64, 3, 3}, {.padding = {1}}, true},
    {"1x1", {1, 48, 20, 20}, {96, 48, 1, 1}, {}},
    {"1x1 stride 2", {1, 64, 14, 14}, {128, 64, 1, 1}, {.stride = {2}}},
    {"depthwise", {1, 128, 56, 56}, {128, 1, 3, 3}, {.padding = {1}, .groups = 128}},
    {"depthwise stride 2",
     {1, 96, 56, 56},
     {96, 1, 3, 3},
     {.stride = {2}, .padding = {1}, .groups = 96}},
    {"5x5 dilated, odd rows", {1, 16, 31, 30}, {32, 16, 5, 5}, {.padding = {3}, .dilation = {2}}},
    {"padding wider than the input", {1, 256, 1, 64}, {256, 256, 1, 1}, {.padding = {5}}, true},
    {"batch of three", {3, 16, 20, 20}, {32, 16, 3, 3}, {.padding = {1}}},
};

TEST_F(ConvLayout, ChannelsLastEqualsNchw) {
  for (const Case& k : kCases) {
    SCOPED_TRACE(k.name);
    const Tensor x = rnd(k.x), w = rnd(k.w), b = rnd({k.w[0]});
    const Tensor want = F::conv2d(x, w, b, k.o);
    const Tensor res = rnd(want.shape());
    const Attrs a = attrs(k.o);
    const Tensor xc = x.to(kCpu), xl = to_last(x), wc = w.to(kCpu), bc = b.to(kCpu);
    for (const bool last_in : {false, true}) {
      const Tensor in = last_in ? xl : xc;
      // NCHW output (from either input), then channels-last, with and without epilogues.
      const Tensor nchw = cpu::conv(OpId::conv2d, a, in, wc, bc);
      EXPECT_EQ(mismatch(nchw, want, 1e-4, 1e-4), "") << last_in;
      const Tensor placed = ops::empty_channels_last(want.shape(), DType::F32, kCpu);
      ASSERT_TRUE(cpu::can_conv(OpId::conv2d, a, in, wc, bc, {}, placed));
      const int64_t reorders = cpu::dnnl_stats().activation_reorders;
      EXPECT_EQ(cpu::conv(OpId::conv2d, a, in, wc, bc, {}, placed).impl(), placed.impl());
      if (last_in)
        EXPECT_EQ(cpu::dnnl_stats().activation_reorders - reorders, k.by_channels ? 2 : 0);
      EXPECT_TRUE(ops::channels_last(placed));
      EXPECT_EQ(mismatch(placed, nchw, 1e-5, 1e-5), "") << last_in;
      // ResNet's relu(conv + residual) and MobileNetV2's clamp, residuals in either layout.
      for (const Tensor& r : {res.to(kCpu), to_last(res)}) {
        const Epilogue ep{.act = Activation::Relu, .residual = r, .residual_first = true};
        const Tensor y = ops::empty_channels_last(want.shape(), DType::F32, kCpu);
        cpu::conv(OpId::conv2d, a, in, wc, bc, ep, y);
        EXPECT_EQ(mismatch(y, relu(want + res), 1e-4, 1e-4), "") << last_in;
      }
      const Tensor y = ops::empty_channels_last(want.shape(), DType::F32, kCpu);
      cpu::conv(OpId::conv2d, a, in, wc, Tensor(),
                {.act = Activation::Clamp, .alpha = 0.f, .beta = 6.f}, y);
      EXPECT_EQ(mismatch(y, clamp(F::conv2d(x, w, Tensor(), k.o), 0.0, 6.0), 1e-4, 1e-4), "");
    }
  }
}

// try_conv (a fused queue's one call) runs what can_conv serves and returns nothing for the rest,
// writing nothing: a placed output in neither layout, another dtype.
TEST_F(ConvLayout, TryConvRunsOnlyWhatCanConvServes) {
  const Tensor x = rnd({1, 16, 12, 12}), w = rnd({16, 16, 3, 3});
  const Attrs a = attrs({.padding = {1}});
  const Tensor want = F::conv2d(x, w, Tensor(), {.padding = {1}});
  const Tensor y = ops::empty_channels_last(want.shape(), DType::F32, kCpu);
  EXPECT_EQ(cpu::try_conv(OpId::conv2d, a, to_last(x), w.to(kCpu), Tensor(), {}, y).impl(),
            y.impl());
  EXPECT_EQ(mismatch(y, want, 1e-4, 1e-4), "");
  const Tensor odd = Tensor(rnd({1, 16, 12, 12}).to(kCpu)).transpose(2, 3);  // [N, C, W, H] memory
  const Tensor before = odd.contiguous();
  EXPECT_FALSE(cpu::try_conv(OpId::conv2d, a, x.to(kCpu), w.to(kCpu), Tensor(), {}, odd).defined());
  EXPECT_FALSE(cpu::can_conv(OpId::conv2d, a, x.to(kCpu), w.to(kCpu), Tensor(), {}, odd));
  EXPECT_EQ(mismatch(odd, before, 0, 0), "");
  EXPECT_FALSE(
      cpu::try_conv(OpId::conv2d, a, x.to(DType::F64).to(kCpu), w.to(DType::F64).to(kCpu), Tensor())
          .defined());
}

// A loaded model's (frozen) weights take Winograd's kernel for 3x3 convolutions at 28x28 and
// above where oneDNN has one (AVX-512): its sums round differently, within 1e-4 of flex's; with
// epilogues, residuals and either layout, over one and two threads, and a second call reusing
// the cached weights.
TEST_F(ConvLayout, FrozenWeightsThroughWinograd) {
  const Tensor x = rnd({1, 32, 28, 28}), w = rnd({64, 32, 3, 3}), b = rnd({64});
  const Tensor res = rnd({1, 64, 28, 28});
  const Tensor want = relu(F::conv2d(x, w, b, {.padding = {1}}) + res);
  const Tensor wc = w.to(kCpu), bc = b.to(kCpu);
  ember::detail::freeze(wc);
  const Attrs a = attrs({.padding = {1}});
  for (int n : {1, 2})
    for (const bool last : {false, true})
      for (int call = 0; call < 2; ++call) {
        flex::set_num_threads(n);
        const Tensor in = last ? to_last(x) : x.to(kCpu);
        const Tensor y = last ? ops::empty_channels_last(want.shape(), DType::F32, kCpu)
                              : Tensor(ember::detail::empty_tensor(want.shape(), DType::F32, kCpu));
        const Epilogue ep{.act = Activation::Relu,
                          .residual = last ? to_last(res) : res.to(kCpu),
                          .residual_first = true};
        cpu::conv(OpId::conv2d, a, in, wc, bc, ep, y);
        EXPECT_EQ(mismatch(y, want, 1e-4, 1e-4), "") << n << " threads, " << last << " " << call;
      }
}

// Inputs with other strides (a slice, a permuted copy) are read in place into a channels-last
// output too; the result does not depend on the number of threads.
TEST_F(ConvLayout, OtherStridesAndThreadCounts) {
  const Tensor big = rnd({1, 32, 30, 60}), w = rnd({32, 32, 3, 3});
  const Tensor x = big.slice(3, 0, 60, 2);  // [1, 32, 30, 30], W stride 2
  const Tensor want = F::conv2d(x.contiguous(), w, Tensor(), {.padding = {1}});
  const Attrs a = attrs({.padding = {1}});
  const Tensor hwc = rnd({1, 30, 30, 32});
  const Tensor x2 = hwc.permute({0, 3, 1, 2});  // channels-last on flex: moved as it is
  const Tensor want2 = F::conv2d(x2.contiguous(), w, Tensor(), {.padding = {1}});
  for (int n : {1, 2, 3}) {
    flex::set_num_threads(n);
    const Tensor y = ops::empty_channels_last(want.shape(), DType::F32, kCpu);
    cpu::conv(OpId::conv2d, a, big.to(kCpu).slice(3, 0, 60, 2), w.to(kCpu), Tensor(), {}, y);
    EXPECT_EQ(mismatch(y, want, 1e-4, 1e-4), "") << n << " threads";
    const Tensor y2 = ops::empty_channels_last(want2.shape(), DType::F32, kCpu);
    cpu::conv(OpId::conv2d, a, hwc.to(kCpu).permute({0, 3, 1, 2}), w.to(kCpu), Tensor(), {}, y2);
    EXPECT_EQ(mismatch(y2, want2, 1e-4, 1e-4), "") << n << " threads";
  }
}

// The conv kernel writes a channels-last placed output through the kernel table; a call oneDNN
// does not serve (f64) runs flex's kernel, and its result lands in the placed output.
TEST_F(ConvLayout, PlacedChannelsLastThroughTheKernelTable) {
  const Attrs a = attrs({.padding = {1}});
  for (const DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = rnd({1, 16, 12, 12}, dt), w = rnd({16, 16, 3, 3}, dt), b = rnd({16}, dt);
    const Tensor ins[] = {x.to(kCpu), w.to(kCpu), b.to(kCpu)};
    const Tensor y = ops::empty_channels_last({1, 16, 12, 12}, dt, kCpu);
    const Tensor placed[] = {y};
    MetaList meta;
    meta.add({1, 16, 12, 12}, dt);
    const OpCall call{OpId::conv2d, a, ins, meta, Device::cpu(), nullptr, placed};
    EXPECT_EQ(run_on_backend(call)[0].impl(), y.impl());
    EXPECT_EQ(mismatch(y, F::conv2d(x, w, b, {.padding = {1}}), 1e-4, 1e-4), "");
  }
}

// In a fused queue (Device::cpu()), the values from one convolution to the next are
// channels-last: a ResNet block and a MobileNetV2 block run without reordering any activation
// but the first input and the last output, and give flex's results.
TEST_F(ConvLayout, FusedChainsPassChannelsLastValues) {
  const Tensor xf = rnd({1, 32, 14, 14}), w1 = rnd({32, 32, 3, 3}), b1 = rnd({32});
  const Tensor w2 = rnd({32, 32, 3, 3}), b2 = rnd({32}), we = rnd({96, 32, 1, 1});
  const Tensor wd = rnd({96, 1, 3, 3}), wp = rnd({32, 96, 1, 1});
  auto net = [](const std::vector<Tensor>& t) {
    const Tensor& x = t[0];
    // ResNet: relu(conv(relu(conv(x))) + x)
    Tensor h = relu(F::conv2d(x, t[1], t[2], {.padding = {1}}));
    h = relu(F::conv2d(h, t[3], t[4], {.padding = {1}}) + x);
    // MobileNetV2: h + project(clamp(depthwise(clamp(expand(h)))))
    Tensor e = clamp(F::conv2d(h, t[5], Tensor()), 0.0, 6.0);
    e = clamp(F::conv2d(e, t[6], Tensor(), {.padding = {1}, .groups = 96}), 0.0, 6.0);
    h = h + F::conv2d(e, t[7], Tensor());
    return h.mean({2, 3});
  };
  // The count of eager ops must not depend on the compiler's speed: the first run waits for its
  // kernels (otherwise the mean runs eagerly while it compiles, as under the sanitizers).
  fusion_test::WaitForKernels wait;
  const std::vector<Tensor> flex_in = {xf, w1, b1, w2, b2, we, wd, wp};
  std::vector<Tensor> cpu_in;
  for (const Tensor& t : flex_in) cpu_in.push_back(t.to(Device::cpu()));
  const Tensor want = net(flex_in);
  for (int run = 0; run < 2; ++run) {  // planned, then the cached plan
    fusion::reset_stats();
    const int64_t reorders = cpu::dnnl_stats().activation_reorders;
    const Tensor got = net(cpu_in);
    synchronize(Device::cpu());
    EXPECT_EQ(mismatch(got, want, 1e-4, 1e-4), "") << run;
    // The first convolution reads NCHW memory, the last writes what the mean reads; split by
    // rows over two threads, each of those is two reorders, one per piece.
    EXPECT_LE(cpu::dnnl_stats().activation_reorders - reorders, 4) << run;
    EXPECT_EQ(fusion::stats().eager_ops, 0) << run;
  }
}

}  // namespace
}  // namespace ember::test
