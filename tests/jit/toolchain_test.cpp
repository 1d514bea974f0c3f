// The host toolchain: finding and identifying the compiler, compiling one header-free source of
// several kernels into a shared object, loading it (from a file and from memory), and running
// its entry points through the launcher, errors included.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/backends/cpu/jit/launch.h"
#include "ember/backends/cpu/jit/shared_object.h"
#include "ember/error.h"
#include "jit/sample_kernels.h"
#include "store/store_test_util.h"

namespace {
using namespace ember::cpu::jit;
using ember::test::ScratchDir;

// The sample source compiled once for the tests that run it (a compile takes a while).
const ember::kl::CompileResult& sample_image() {
  static const ember::kl::CompileResult r = [] {
    ScratchDir scratch;
    return HostToolchain().compile(ember::test::kSampleKernels, {scratch.path.string(), nullptr});
  }();
  return r;
}

// Runs the sample's k0, y = relu(2x + 1) * x, over n items in ranges of `grain`.
void expect_pointwise_works(const ember::kl::Module& m, size_t n, int64_t grain) {
  auto k0 = reinterpret_cast<ember::kl::KernelFn>(m.symbol("k0_pointwise"));
  ASSERT_NE(k0, nullptr);
  std::vector<float> x(n), y(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i) - float(n) / 2 - 0.25f;
  struct {
    const float* x;
    float* y;
  } a{x.data(), y.data()};
  launch(k0, &a, int64_t(n), grain);
  for (size_t i = 0; i < n; ++i) {
    float v = x[i] * 2.0f + 1.0f;
    EXPECT_EQ(y[i], (v < 0 ? 0.0f : v) * x[i]) << i;
  }
}

TEST(JitToolchain, IdentifiesTheCompilerAndTheIsaLevel) {
  HostToolchain tc;
  ASSERT_FALSE(tc.compiler_path().empty()) << "no c++, g++ or clang++ on PATH";
  auto id = tc.identify(nullptr);
  ASSERT_TRUE(id.ok) << id.error;
  EXPECT_EQ(id.fingerprint.size(), 32u);
  EXPECT_TRUE(id.name.rfind("gcc-", 0) == 0 || id.name.rfind("clang-", 0) == 0) << id.name;
  EXPECT_EQ(tc.target(), std::string(machine_name()) + "-" + isa_name(host_isa()));
  // Same compiler, same flags: the same identity in every process.
  EXPECT_EQ(HostToolchain().identify(nullptr).fingerprint, id.fingerprint);
  EXPECT_EQ(HostToolchain().quick_id(), tc.quick_id());
}

TEST(JitToolchain, FingerprintCoversFlagsAndIsa) {
  HostToolchain plain, extra({.extra_flags = {"-fno-tree-vectorize"}});
  HostToolchain baseline({.isa = int(Isa::kBaseline)});
  std::string a = plain.identify(nullptr).fingerprint;
  EXPECT_NE(a, extra.identify(nullptr).fingerprint);
  EXPECT_NE(plain.quick_id(), extra.quick_id());
  if (host_isa() != Isa::kBaseline) {
    EXPECT_NE(a, baseline.identify(nullptr).fingerprint);
    EXPECT_NE(plain.target(), baseline.target());
  }
}

TEST(JitToolchain, CompilerNamesFromVersionText) {
  EXPECT_EQ(compiler_name_from_version("c++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) "
                                       "2022 Free Software Foundation, Inc."),
            "gcc-12.2.0");
  EXPECT_EQ(compiler_name_from_version("g++ (GCC) 13.1.1 20230429\n"), "gcc-13.1.1");
  EXPECT_EQ(compiler_name_from_version("Debian clang version 14.0.6\nTarget: x86_64"),
            "clang-14.0.6");
  EXPECT_EQ(compiler_name_from_version("fakecc\n"), "cxx");
}

TEST(JitToolchain, CompilesLoadsAndRunsSeveralKernels) {
  ScratchDir scratch;
  HostToolchain tc;
  const auto& r = sample_image();
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(tc.plausible(r.image));
  std::string err;
  std::shared_ptr<ember::kl::Module> from_memory = tc.load_image(r.image, &err);
  ASSERT_TRUE(from_memory) << err;
  ember::test::write_bytes(scratch.file("k.so"), r.image);
  std::shared_ptr<ember::kl::Module> from_file = tc.load_file(scratch.file("k.so"), &err);
  ASSERT_TRUE(from_file) << err;
  for (const char* s : ember::test::kSampleSymbols) {
    EXPECT_NE(from_memory->symbol(s), nullptr) << s;
    EXPECT_NE(from_file->symbol(s), nullptr) << s;
  }
  EXPECT_EQ(from_file->symbol("no_such_kernel"), nullptr);

  // k0 over 37 items (vector body and scalar tail), in parallel ranges of 8.
  expect_pointwise_works(*from_file, 37, 8);

  // k2: softmax(scale * x + mask) per row; rows of 13 (vector body + tail) sum to one.
  auto k2 = reinterpret_cast<ember::kl::KernelFn>(from_memory->symbol("k2_softmax"));
  const int rows = 3, cols = 13;
  std::vector<float> sx(rows * cols), mask(cols, 0.0f), sy(rows * cols);
  for (size_t i = 0; i < sx.size(); ++i) sx[i] = std::sin(float(i));
  mask[5] = -1e9f;
  struct {
    const float* x;
    const float* mask;
    float* y;
    int64_t cols;
    float scale;
  } a2{sx.data(), mask.data(), sy.data(), cols, 0.5f};
  launch(k2, &a2, rows, 1);
  for (int r0 = 0; r0 < rows; ++r0) {
    double m = -1e30, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, 0.5 * sx[r0 * cols + c] + mask[c]);
    for (int c = 0; c < cols; ++c) s += std::exp(0.5 * sx[r0 * cols + c] + mask[c] - m);
    for (int c = 0; c < cols; ++c) {
      double want = std::exp(0.5 * sx[r0 * cols + c] + mask[c] - m) / s;
      EXPECT_NEAR(sy[r0 * cols + c], want, 1e-6) << r0 << "," << c;
    }
  }
}

// The same vector-extension source at the baseline level (SSE2 only): what a CPU without AVX2
// gets, checked here whatever this CPU has.
TEST(JitToolchain, TheBaselineLevelRunsTheSameSource) {
  ScratchDir scratch;
  HostToolchain tc({.isa = int(Isa::kBaseline)});
  auto r = tc.compile(ember::test::kSampleKernels, {scratch.path.string(), nullptr});
  ASSERT_TRUE(r.ok) << r.log;
  std::string err;
  auto m = tc.load_image(r.image, &err);
  ASSERT_TRUE(m) << err;
  expect_pointwise_works(*m, 21, 1000);
}

TEST(JitToolchain, KernelErrorsAndExceptionsReachTheCaller) {
  HostToolchain tc;
  const auto& r = sample_image();
  ASSERT_TRUE(r.ok) << r.log;
  std::string err;
  auto m = tc.load_image(r.image, &err);
  ASSERT_TRUE(m) << err;
  auto gather = reinterpret_cast<ember::kl::KernelFn>(m->symbol("k6_gather"));
  std::vector<float> table{10, 11, 12};
  std::vector<int64_t> idx(5000, 1);
  idx[4321] = 7;
  std::vector<float> out(idx.size());
  KernelStatus status;
  struct {
    const float* table;
    const int64_t* idx;
    float* y;
    int64_t rows;
    KernelStatus* status;
  } a{table.data(), idx.data(), out.data(), 3, &status};
  KernelStatus s = launch(gather, &a, int64_t(idx.size()), 256, &status);
  EXPECT_EQ(s.code, kIndexOutOfRange);
  EXPECT_EQ(s.detail, 7);
  EXPECT_EQ(out[0], 11.0f);
  EXPECT_THROW(throw_if_failed(s, "gather"), ember::IndexError);
  try {
    throw_if_failed(s, "gather");
  } catch (const ember::Error& e) {
    EXPECT_STREQ(e.what(), "[gather] index 7 is out of range");
  }
  idx[4321] = 2;
  s = launch(gather, &a, int64_t(idx.size()), 256, &status);
  EXPECT_EQ(s.code, kOk);
  EXPECT_NO_THROW(throw_if_failed(s, "gather"));
  EXPECT_EQ(out[4321], 12.0f);

  // An entry point that throws (a host-written kernel) propagates through the pool.
  ember::kl::KernelFn thrower = [](const void*, int64_t b, int64_t) {
    if (b > 0) throw ember::ValueError("[test] thrown in a kernel");
  };
  EXPECT_THROW(launch(thrower, nullptr, 1 << 16, 1 << 10), ember::ValueError);
}

// Generated sources declare the status word with kStatusDecl; it must match KernelStatus.
TEST(JitToolchain, TheStatusDeclarationMatchesTheLauncher) {
  ScratchDir scratch;
  HostToolchain tc;
  std::string src = std::string(kStatusDecl) +
                    "extern \"C\" void k(const void* a, __INT64_TYPE__ b, __INT64_TYPE__ e) {\n"
                    "  for (__INT64_TYPE__ i = b; i < e; ++i)\n"
                    "    if (i == 1234) ember_fail(*(struct ember_status* const*)a, 2, -i);\n"
                    "}\n";
  auto r = tc.compile(src, {scratch.path.string(), nullptr});
  ASSERT_TRUE(r.ok) << r.log;
  std::string err;
  auto m = tc.load_image(r.image, &err);
  ASSERT_TRUE(m) << err;
  KernelStatus status;
  KernelStatus* args = &status;
  auto s = launch(reinterpret_cast<ember::kl::KernelFn>(m->symbol("k")), &args, 5000, 100, &status);
  EXPECT_EQ(s.code, kInvalidValue);
  EXPECT_EQ(s.detail, -1234);
  EXPECT_THROW(throw_if_failed(s, "k"), ember::ValueError);
}

TEST(JitToolchain, LaunchCoversTheRangeOnceAndRunsSmallRangesInline) {
  static std::vector<std::atomic<int>> hits(100000);
  for (auto& h : hits) h = 0;
  ember::kl::KernelFn count = [](const void*, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
  };
  launch(count, nullptr, int64_t(hits.size()), 1000);
  int64_t wrong = 0;
  for (auto& h : hits) wrong += h.load() != 1;
  EXPECT_EQ(wrong, 0);
  static std::thread::id seen;
  ember::kl::KernelFn where = [](const void*, int64_t, int64_t) {
    seen = std::this_thread::get_id();
  };
  launch(where, nullptr, 10, 1000);
  EXPECT_TRUE(seen == std::this_thread::get_id()) << "a small range did not run inline";
  launch(where, nullptr, 0, 1);  // nothing to do: not called, no error
}

TEST(JitToolchain, ACompileErrorIsReportedNotThrown) {
  ScratchDir scratch;
  HostToolchain tc;
  auto r = tc.compile("extern \"C\" void k(const void*, long, long) { this is not C++ }",
                      {scratch.path.string(), nullptr});
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.toolchain_broken);
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
}

TEST(JitToolchain, SharedObjectCheckRejectsGarbageAndTruncatedImages) {
  ScratchDir scratch;
  HostToolchain tc;
  auto r = tc.compile(ember::test::tiny_source(3), {scratch.path.string(), nullptr});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(looks_like_shared_object(r.image));
  EXPECT_FALSE(looks_like_shared_object(r.image.substr(0, r.image.size() / 2)));
  EXPECT_FALSE(looks_like_shared_object(std::string(4000, 'x')));
  EXPECT_FALSE(looks_like_shared_object(""));
  std::string err;
  EXPECT_FALSE(SharedObject::from_image(std::string(4000, 'x'), &err));
  EXPECT_FALSE(err.empty());
}

}  // namespace
