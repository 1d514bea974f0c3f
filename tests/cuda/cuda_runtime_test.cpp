// The CUDA runtime: what a process without a GPU sees (runs everywhere), then devices, copies,
// memory statistics, out-of-memory recovery, events and the host fallback (skipped without a
// GPU).
#include <ember/cuda.h>

#include <cstdlib>

#include "cuda/cuda_util.h"
#include "ember/backends/backend.h"

namespace ember {
namespace {

TEST(CudaNoGpu, DeviceCountAndErrors) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_EQ(device_count(Backend::Cuda), 0);
  EXPECT_FALSE(cuda::is_available());
  try {
    Device::cuda(0);
    FAIL() << "Device::cuda(0) should throw without a GPU";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[Device::cuda]"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda:0"), std::string::npos) << what;
    EXPECT_TRUE(what.find("no CUDA driver") != std::string::npos ||
                what.find("no GPU") != std::string::npos ||
                what.find("no CUDA backend") != std::string::npos)
        << what;
  }
  EXPECT_THROW(cuda::memory_stats(0), DeviceError);
  EXPECT_THROW(cuda::synchronize(0), DeviceError);
  EXPECT_THROW(cuda::empty_cache(0), DeviceError);
  EXPECT_THROW(cuda::reset_peak(0), DeviceError);
  EXPECT_TRUE(cuda::fallback_stats().empty());
}

TEST(CudaNoGpu, Tf32Flag) {
  EXPECT_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(true);
  EXPECT_TRUE(cuda::allow_tf32());
  cuda::set_allow_tf32(false);
  EXPECT_FALSE(cuda::allow_tf32());
}

TEST(CudaDevice, IndexPastTheLast) {
  EMBER_REQUIRE_GPU();
  const int n = cuda::device_count();
  try {
    Device::cuda(n);
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("index " + std::to_string(n) + " of " + std::to_string(n)),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(Device::cuda(0).str(), "cuda:0");
}

TEST(CudaCopy, BothWaysAndStridedViews) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  Tensor h = arange(24, {kF32}).reshape({2, 3, 4});
  Tensor d = h.to(g);
  EXPECT_EQ(d.device(), g);
  EXPECT_EQ(d.to_vector<float>(), h.to_vector<float>());
  EXPECT_FLOAT_EQ(d.sum().item<float>(), 276.f);  // sum runs through the fallback
  Tensor pv = d.permute({2, 0, 1}).slice(0, 1, 4, 2);  // strided view on the device
  EXPECT_EQ(pv.to(Device::flex()).to_vector<float>(),
            h.permute({2, 0, 1}).slice(0, 1, 4, 2).contiguous().to_vector<float>());
  EXPECT_EQ(pv.contiguous().to_vector<float>(), h.permute({2, 0, 1}).slice(0, 1, 4, 2).contiguous().to_vector<float>());
  // In place into a strided view, with a cast and a broadcast.
  Tensor z = zeros({3, 4}, {kF64, g});
  z.slice(1, 0, 4, 2).copy_(tensor({1.f, 2.f, 3.f}, kF32, g).reshape({3, 1}));
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{1, 0, 1, 0, 2, 0, 2, 0, 3, 0, 3, 0}));
  // Every dtype there and back.
  for (DType t : {kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64}) {
    Tensor x = arange(10, {kF32}).to(t);
    EXPECT_TRUE(equal(x.to(g).to(Device::flex()), x)) << dtype_name(t);
    EXPECT_TRUE(equal(x.to(g).to(kF32).to(Device::flex()), x.to(kF32))) << dtype_name(t);
  }
  // Large enough to go through several staging chunks.
  Tensor big = randn({3 << 20}, {kF32});
  EXPECT_TRUE(equal(big.to(g).to(Device::flex()), big));
  EXPECT_NE(d.str().find("cuda:0"), std::string::npos);
  EXPECT_FLOAT_EQ(d[1][2][3].item<float>(), 23.f);
}

// Same-dtype strided copies (copy_kernel.cu's chunked form): transposes whose innermost dim is
// contiguous (16-, 8-, 4-byte chunks), misaligned starts, odd extents, broadcasts and
// transposed innermost dims, every element size; bitwise against the host.
TEST(CudaCopy, StridedSameDtypeCopiesAreExact) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  for (DType t : {kBool, kU8, kI16, kBF16, kF32, kF64, kI64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor h = (randn({4, 33, 6, 64}) * 10).to(t);
    const Tensor d = h.to(g);
    auto same = [&](const Tensor& dv, const Tensor& hv, const char* what) {
      EXPECT_TRUE(equal(dv.contiguous().to(Device::flex()), hv.contiguous())) << what;
    };
    same(d.transpose(1, 2), h.transpose(1, 2), "transpose(1, 2)");
    same(d.narrow(3, 1, 62).transpose(1, 2), h.narrow(3, 1, 62).transpose(1, 2), "misaligned");
    same(d.narrow(3, 0, 7).transpose(0, 1), h.narrow(3, 0, 7).transpose(0, 1), "odd extent");
    same(d.transpose(2, 3), h.transpose(2, 3), "innermost transposed");
    same(d.narrow(0, 1, 1).expand({3, 33, 6, 64}), h.narrow(0, 1, 1).expand({3, 33, 6, 64}),
         "broadcast");
    Tensor into = zeros({4, 6, 33, 64}, {t, g});
    into.copy_(d.transpose(1, 2));
    same(into, h.transpose(1, 2), "copy_ into");
  }
}

TEST(CudaCopy, BetweenDevices) {
  EMBER_REQUIRE_GPU();
  if (cuda::device_count() < 2) GTEST_SKIP() << "one GPU";
  Tensor x = randn({1000}, {kF32});
  Tensor y = x.to(Device::cuda(0)).to(Device::cuda(1));
  EXPECT_EQ(y.device(), Device::cuda(1));
  EXPECT_TRUE(equal(y.to(Device::flex()), x));
}

TEST(CudaMemory, StatsAndCache) {
  EMBER_REQUIRE_GPU();
  cuda::synchronize(0);
  const auto s0 = cuda::memory_stats(0);
  {
    Tensor a = empty({1 << 20}, {kF32, Device::cuda(0)});
    const auto s1 = cuda::memory_stats(0);
    EXPECT_EQ(s1.allocated - s0.allocated, 4 << 20);
    EXPECT_GE(s1.reserved, s1.allocated);
    EXPECT_GE(s1.peak_allocated, s1.allocated);
    EXPECT_EQ(s1.allocs, s0.allocs + 1);
  }
  const auto s2 = cuda::memory_stats(0);
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_EQ(s2.frees, s0.frees + 1);
  { Tensor b = empty({1 << 20}, {kF32, Device::cuda(0)}); }  // the freed block again
  EXPECT_GT(cuda::memory_stats(0).cache_hits, s2.cache_hits);
  cuda::reset_peak(0);
  EXPECT_EQ(cuda::memory_stats(0).peak_allocated, cuda::memory_stats(0).allocated);
  cuda::empty_cache(0);
  EXPECT_LE(cuda::memory_stats(0).reserved, s2.reserved);
}

TEST(CudaMemory, OutOfMemoryRecovers) {
  EMBER_REQUIRE_GPU();
  try {
    Tensor t = empty({int64_t(250'000'000'000'000)}, {kF32, Device::cuda(0)});  // 10^15 bytes
    FAIL() << "10^15 bytes were allocated";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[empty]"), std::string::npos) << what;
    EXPECT_NE(what.find("requested 1000000000000000 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes free"), std::string::npos) << what;
  }
  Tensor ok = full({1000}, 2.f, {kF32, Device::cuda(0)});
  EXPECT_FLOAT_EQ(ok.to(Device::flex()).to_vector<float>()[999], 2.f);
}

TEST(CudaEvents, RecordWaitTime) {
  EMBER_REQUIRE_GPU();
  BackendImpl* b = backend_for(Backend::Cuda);
  Stream* s = b->default_stream(Device::cuda(0));
  ASSERT_NE(s, nullptr);
  auto e0 = b->record_event(s);
  Tensor a = randn({1024, 1024}, {kF32}).to(Device::cuda(0));
  for (int i = 0; i < 10; ++i) a = matmul(a, a) * 0.01;
  auto e1 = b->record_event(s);
  b->wait_event(s, *e1);
  b->synchronize_event(*e1);
  cuda::synchronize(0);
  SUCCEED();
}

TEST(CudaFallback, CountsOpsWithoutKernels) {
  EMBER_REQUIRE_GPU();
  cuda::reset_fallback_stats();
  Tensor x = tensor({1.f, -2.f, 3.f}, kF32, Device::cuda(0));
  // kthvalue has no cuda kernel yet (the host fallback runs it); relu and add are kl kernels.
  Tensor y = std::get<0>(kthvalue(relu(x) + 1, 2, 0, false));
  EXPECT_EQ(y.device(), Device::cuda(0));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2}));
  auto st = cuda::fallback_stats();
  auto count = [&](const std::string& op) {
    for (auto& [n, c] : st)
      if (n == op) return c;
    return int64_t(0);
  };
  EXPECT_EQ(count("kthvalue"), 1);
  EXPECT_EQ(count("relu"), 0);
  EXPECT_EQ(count("add"), 0);
  EXPECT_EQ(count("copy"), 0);  // a cuda kernel
}

}  // namespace
}  // namespace ember
