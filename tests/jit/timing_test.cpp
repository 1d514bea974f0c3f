// What the JIT costs, printed for the record and bounded loosely (CI machines are slow and
// shared): compiling a typical flush of kernels, loading a cached one from disk, and looking one
// up in memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "jit/jit_test_util.h"
#include "jit/sample_kernels.h"

namespace {
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(JitTiming, CompileDiskHitAndMemoryLookup) {
  ember::test::ScratchDir scratch;
  auto tc = std::make_shared<ember::cpu::jit::HostToolchain>();
  std::vector<std::string> symbols(std::begin(ember::test::kSampleSymbols),
                                   std::end(ember::test::kSampleSymbols));
  double compile_s;
  {
    ember::test::RecordingCache c(tc, scratch.path.string());
    auto h = c.cache->request("sample", ember::test::kSampleKernels, symbols);
    ASSERT_TRUE(h.get().ok) << h.get().error;
    compile_s = c.cache->stats().compile_seconds;
  }
  // Disk hits: each in a fresh cache, after the previous one let go of the object (dlclose), so
  // every load maps the file anew.
  std::vector<double> hits;
  for (int i = 0; i < 5; ++i) {
    ember::test::RecordingCache c(tc, scratch.path.string());
    auto t0 = Clock::now();
    auto h = c.cache->request("sample", ember::test::kSampleKernels, symbols);
    hits.push_back(since(t0));
    ASSERT_TRUE(h.ready());
    ASSERT_TRUE(h.get().ok);
  }
  std::sort(hits.begin(), hits.end());
  // Memory hits: the same key again and again.
  ember::test::RecordingCache c(tc, scratch.path.string());
  auto first = c.cache->request("sample", ember::test::kSampleKernels, symbols);
  const int n = 20000;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    auto h = c.cache->find("sample");
    ASSERT_TRUE(h.ready());
  }
  double lookup_ns = since(t0) / n * 1e9;
  std::printf(
      "[ jit ] compile of %zu kernels: %.0f ms; disk hit: %.0f us (median of 5); "
      "memory lookup: %.0f ns\n",
      symbols.size(), compile_s * 1e3, hits[2] * 1e6, lookup_ns);
  EXPECT_LT(hits[2], 0.01);     // well under 1 ms on a quiet machine
  EXPECT_LT(lookup_ns, 20000);  // ~100 ns on a quiet machine
}

}  // namespace
