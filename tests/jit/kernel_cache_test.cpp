// The kernel cache in one process: background compiles, memory and disk hits, damaged entries
// rebuilt, the size cap, fallbacks to memory when the directory cannot hold code, and broken
// compilers that make requests fail cleanly (one warning, no hang, no crash).
#include "ember/kl/cache/kernel_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "jit/jit_test_util.h"

namespace {
using ember::cpu::jit::HostToolchain;
using ember::cpu::jit::HostToolchainOptions;
using ember::test::RecordingCache;
using ember::test::ScratchDir;
using ember::test::tiny_kernel_works;
using ember::test::tiny_source;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::shared_ptr<HostToolchain> host(HostToolchainOptions o = {}) {
  return std::make_shared<HostToolchain>(std::move(o));
}

ember::kl::KernelHandle request_tiny(ember::kl::KernelCache& c, int tag) {
  return c.request("tiny-" + std::to_string(tag), tiny_source(tag), {"axpb"});
}

TEST(JitCache, CompilesInTheBackgroundThenHitsMemory) {
  ScratchDir scratch;
  RecordingCache rc(host(), scratch.path.string());
  auto t0 = Clock::now();
  auto h = request_tiny(*rc.cache, 1);
  double request_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(h.valid());
  const auto& set = h.get();
  ASSERT_TRUE(set.ok) << set.error;
  EXPECT_TRUE(h.ready());
  EXPECT_TRUE(tiny_kernel_works(set, 1));
  auto s = rc.cache->stats();
  EXPECT_EQ(s.compiles, 1);
  // request() returned before the compiler finished: nothing waited on it.
  EXPECT_LT(request_s, s.compile_seconds);

  auto again = request_tiny(*rc.cache, 1);
  EXPECT_TRUE(again.ready());
  EXPECT_EQ(again.get().fns[0], set.fns[0]);
  EXPECT_TRUE(rc.cache->find("tiny-1").valid());
  EXPECT_FALSE(rc.cache->find("tiny-2").valid());
  s = rc.cache->stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.memory_hits, 2);
  EXPECT_EQ(rc.warnings(), 0);
  EXPECT_TRUE(rc.cache->persistent());
  EXPECT_EQ(rc.cache->directory().rfind(scratch.path.string() + "/v1/", 0), 0u)
      << rc.cache->directory();
}

TEST(JitCache, ANewCacheOnTheSameDirectoryLoadsWithoutCompiling) {
  ScratchDir scratch;
  {
    RecordingCache first(host(), scratch.path.string());
    ASSERT_TRUE(request_tiny(*first.cache, 2).get().ok);
  }
  RecordingCache second(host(), scratch.path.string());
  auto h = request_tiny(*second.cache, 2);
  // The identity and the entry are on disk: the hit resolves inside request().
  EXPECT_TRUE(h.ready());
  EXPECT_TRUE(tiny_kernel_works(h.get(), 2));
  auto s = second.cache->stats();
  EXPECT_EQ(s.compiles, 0);
  EXPECT_EQ(s.disk_hits, 1);
}

// Damages the one cached entry in four ways; each time a new cache rebuilds it, and the rebuilt
// entry is then a clean hit.
TEST(JitCache, DamagedEntriesAreRebuiltNotLoaded) {
  ScratchDir scratch;
  const std::string root = scratch.path.string();
  {
    RecordingCache c(host(), root);
    ASSERT_TRUE(request_tiny(*c.cache, 3).get().ok);
  }
  auto images = ember::test::cached_images(root);
  ASSERT_EQ(images.size(), 1u);
  const std::string so = images[0], meta = so.substr(0, so.size() - 3) + ".meta";
  const std::string good = ember::test::read_bytes(so);
  std::vector<std::pair<std::string, std::function<void()>>> damage = {
      {"truncated", [&] { fs::resize_file(so, good.size() / 2); }},
      {"overwritten",
       [&] {
         std::string bad = good;
         for (size_t i = bad.size() / 3; i < bad.size() / 3 + 64; ++i) bad[i] ^= 0x5a;
         ember::test::write_bytes(so, bad);
       }},
      {"garbage meta", [&] { ember::test::write_bytes(meta, "not a meta file"); }},
      {"image missing", [&] { fs::remove(so); }},
  };
  for (auto& [what, hurt] : damage) {
    hurt();
    {
      RecordingCache c(host(), root);
      auto h = request_tiny(*c.cache, 3);
      EXPECT_TRUE(tiny_kernel_works(h.get(), 3)) << what;
      auto s = c.cache->stats();
      EXPECT_EQ(s.compiles, 1) << what;
      EXPECT_EQ(s.corrupt, 1) << what;
      EXPECT_EQ(s.disk_hits, 0) << what;
    }
    RecordingCache after(host(), root);
    EXPECT_TRUE(tiny_kernel_works(request_tiny(*after.cache, 3).get(), 3)) << what;
    EXPECT_EQ(after.cache->stats().disk_hits, 1) << what;
  }
}

TEST(JitCache, EvictionKeepsTheTreeUnderItsCap) {
  ScratchDir scratch;
  const std::string root = scratch.path.string();
  int64_t entry_bytes;
  {
    RecordingCache probe(host(), root);
    ASSERT_TRUE(request_tiny(*probe.cache, 100).get().ok);
    entry_bytes = ember::test::tree_size(root).bytes;
  }
  const int64_t cap = entry_bytes * 7 / 2;  // room for three entries and a half
  RecordingCache c(host(), root, cap);
  for (int tag = 101; tag <= 106; ++tag) {
    ASSERT_TRUE(request_tiny(*c.cache, tag).get().ok) << tag;
    auto t = ember::test::tree_size(root);
    EXPECT_LE(t.bytes, cap) << "after tag " << tag;
  }
  EXPECT_GT(c.cache->stats().evicted, 0);
  // The newest entry stays; the oldest went first.
  RecordingCache later(host(), root, cap);
  EXPECT_TRUE(request_tiny(*later.cache, 106).ready());
  EXPECT_FALSE(request_tiny(*later.cache, 100).ready());
}

TEST(JitCache, ADirectoryThatIsAFileFallsBackToMemoryWithOneWarning) {
  ScratchDir scratch;
  ember::test::write_bytes(scratch.file("file"), "x");
  RecordingCache c(host(), scratch.file("file"));
  EXPECT_TRUE(tiny_kernel_works(request_tiny(*c.cache, 4).get(), 4));
  EXPECT_TRUE(tiny_kernel_works(request_tiny(*c.cache, 5).get(), 5));
  EXPECT_FALSE(c.cache->persistent());
  EXPECT_EQ(c.cache->directory(), "");
  ASSERT_EQ(c.warnings(), 1);
  EXPECT_NE(c.messages->at(0).find("memory"), std::string::npos) << c.messages->at(0);
}

TEST(JitCache, ANoexecDirectoryFallsBackToMemoryWithOneWarning) {
  ScratchDir scratch;
  RecordingCache c(host(), scratch.path.string(), 0, /*assume_noexec=*/true);
  EXPECT_TRUE(tiny_kernel_works(request_tiny(*c.cache, 6).get(), 6));
  EXPECT_TRUE(tiny_kernel_works(request_tiny(*c.cache, 7).get(), 7));
  EXPECT_FALSE(c.cache->persistent());
  ASSERT_EQ(c.warnings(), 1);
  EXPECT_NE(c.messages->at(0).find("noexec"), std::string::npos) << c.messages->at(0);
  EXPECT_TRUE(ember::test::cached_images(scratch.path.string()).empty());
}

TEST(JitCache, ShutdownCancelsARunningCompile) {
  ScratchDir scratch;
  auto fake = ember::test::write_fake_compiler(scratch.file("cc"), "sleep 30");
  auto t0 = Clock::now();
  ember::kl::KernelHandle h;
  {
    RecordingCache c(host({.compiler = fake, .timeout_s = 60}), scratch.file("cache"));
    h = request_tiny(*c.cache, 8);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(h.ready());
  EXPECT_FALSE(h.get().ok);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0);
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a compiler is left to reap";
}

struct Broken {
  const char* name;
  const char* body;          // what the fake does when asked to compile ("" = no program)
  const char* version_body;  // what it does for --version
  bool per_source;           // the compiler works, this source fails: later sources still try
  int compiles;              // compiler runs the two requests make
};

class JitBrokenCompiler : public ::testing::TestWithParam<Broken> {};

TEST_P(JitBrokenCompiler, FallsBackCleanlyWithOneWarning) {
  const Broken& b = GetParam();
  ScratchDir scratch;
  std::string cc = scratch.file("no-such-compiler");
  if (*b.body) cc = ember::test::write_fake_compiler(scratch.file("cc"), b.body, b.version_body);
  auto t0 = Clock::now();
  RecordingCache c(host({.compiler = cc, .timeout_s = 0.5}), scratch.file("cache"));
  auto h1 = request_tiny(*c.cache, 9);
  const auto& s1 = h1.get();
  EXPECT_FALSE(s1.ok);
  EXPECT_FALSE(s1.error.empty());
  auto h2 = request_tiny(*c.cache, 10);
  EXPECT_FALSE(h2.get().ok);
  if (!b.per_source) EXPECT_TRUE(h2.ready());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 20.0);
  EXPECT_EQ(c.warnings(), 1) << (c.messages->empty() ? "" : c.messages->at(0));
  auto st = c.cache->stats();
  EXPECT_EQ(st.failures, 2);
  EXPECT_EQ(st.compiles, b.compiles);
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a compiler is left to reap";
  c.cache.reset();
}

const char* kVersionOk = "echo 'fakecc 1.0'";
INSTANTIATE_TEST_SUITE_P(
    Modes, JitBrokenCompiler,
    ::testing::Values(Broken{"missing", "", kVersionOk, false, 0},
                      Broken{"version_fails", "exit 0", "exit 1", false, 0},
                      Broken{"version_crashes", "exit 0", "kill -SEGV $$", false, 0},
                      Broken{"version_hangs", "exit 0", "sleep 30", false, 0},
                      Broken{"exits_1", "echo 'error: no' >&2; exit 1", kVersionOk, true, 2},
                      Broken{"crashes", "kill -SEGV $$", kVersionOk, false, 1},
                      Broken{"hangs", "sleep 30", kVersionOk, false, 1},
                      Broken{"writes_garbage", "head -c 5000 /dev/urandom > \"$out\"", kVersionOk,
                             false, 1},
                      Broken{"writes_nothing", "exit 0", kVersionOk, false, 1}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
