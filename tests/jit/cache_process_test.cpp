// The kernel cache across processes (tests/jit/jit_probe.cpp is the child): a second run
// compiles nothing, two processes racing on one key compile it once, and a cache directory that
// cannot be written or cannot hold code, or a compiler that is missing, leaves the program
// working with exactly one warning on stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <thread>

#include "ember/backends/cpu/jit/subprocess.h"
#include "jit/probe_run.h"
#include "store/store_test_util.h"

namespace {
using ember::cpu::jit::ProcessOptions;
using ember::cpu::jit::run_process;
using ember::test::ScratchDir;

using ember::test::Probe;

// Runs the probe for `tag` with the environment `env` ("NAME=value") and extra `args`.
Probe run_probe(const ScratchDir& scratch, const std::string& name, int tag,
                std::vector<std::string> env, std::vector<std::string> args = {},
                std::vector<std::string> wrapper = {}) {
  const std::string result = scratch.file(name + ".result");
  std::vector<std::string> argv = wrapper;
  argv.insert(argv.end(), {EMBER_JIT_PROBE, result, std::to_string(tag)});
  argv.insert(argv.end(), args.begin(), args.end());
  return ember::test::run_probe_program(argv, std::move(env), result);
}

TEST(JitProcess, ASecondRunCompilesNothing) {
  ScratchDir scratch;
  std::vector<std::string> env{"EMBER_CACHE_DIR=" + scratch.file("cache")};
  Probe first = run_probe(scratch, "first", 1, env);
  ASSERT_TRUE(first.exited_ok) << first.output;
  EXPECT_EQ(first.result["ran"], 1) << first.output;
  EXPECT_EQ(first.result["compiles"], 1);
  EXPECT_EQ(first.result["persistent"], 1);
  Probe second = run_probe(scratch, "second", 1, env);
  ASSERT_TRUE(second.exited_ok) << second.output;
  EXPECT_EQ(second.result["ran"], 1);
  EXPECT_EQ(second.result["compiles"], 0);
  EXPECT_EQ(second.result["disk_hits"], 1);
  EXPECT_EQ(second.result["ready_at_once"], 1);
  EXPECT_EQ(first.warnings() + second.warnings(), 0) << first.output << second.output;
  std::printf("[ jit ] disk hit in a fresh process: request() took %ld us\n",
              second.result["request_us"]);
}

TEST(JitProcess, TheCacheLivesUnderXdgCacheHomeByDefault) {
  ScratchDir scratch;
  std::vector<std::string> env{"EMBER_CACHE_DIR=", "XDG_CACHE_HOME=" + scratch.file("xdg")};
  Probe p = run_probe(scratch, "xdg", 2, env);
  ASSERT_TRUE(p.exited_ok) << p.output;
  EXPECT_EQ(p.result["ran"], 1);
  EXPECT_TRUE(std::filesystem::is_directory(scratch.file("xdg") + "/ember/v1"));
}

TEST(JitProcess, TwoProcessesRacingOnOneKeyCompileItOnce) {
  ScratchDir scratch;
  std::vector<std::string> env{"EMBER_CACHE_DIR=" + scratch.file("cache")};
  // Both start before either can have finished (a compile takes tens of milliseconds at least).
  Probe a, b;
  std::thread ta([&] { a = run_probe(scratch, "a", 3, env); });
  std::thread tb([&] { b = run_probe(scratch, "b", 3, env); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.exited_ok && b.exited_ok) << a.output << b.output;
  EXPECT_EQ(a.result["ran"] + b.result["ran"], 2);
  EXPECT_EQ(a.result["compiles"] + b.result["compiles"], 1);
  EXPECT_EQ(a.result["disk_hits"] + b.result["disk_hits"], 1);
}

TEST(JitProcess, AnUnwritableCacheFallsBackToMemoryWithOneWarning) {
  ScratchDir scratch;
  const std::string dir = scratch.file("cache");
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0500);
  // --drop-dac: as root, permissions would not stop the writes otherwise.
  Probe p = run_probe(scratch, "ro", 4, {"EMBER_CACHE_DIR=" + dir}, {"--drop-dac"});
  ::chmod(dir.c_str(), 0700);
  ASSERT_TRUE(p.exited_ok) << p.output;
  EXPECT_EQ(p.result["ran"], 1) << p.output;
  EXPECT_EQ(p.result["persistent"], 0);
  EXPECT_EQ(p.warnings(), 1) << p.output;
}

TEST(JitProcess, AReadOnlyCacheStillServesItsEntries) {
  ScratchDir scratch;
  const std::string dir = scratch.file("cache");
  Probe fill = run_probe(scratch, "fill", 7, {"EMBER_CACHE_DIR=" + dir});
  ASSERT_TRUE(fill.exited_ok && fill.result["compiles"] == 1) << fill.output;
  namespace fs = std::filesystem;
  auto set_mode = [&](fs::perms dirs, fs::perms files) {
    fs::permissions(dir, dirs);
    for (auto& f : fs::recursive_directory_iterator(dir))
      fs::permissions(f.path(), f.is_directory() ? dirs : files);
  };
  set_mode(fs::perms(0500), fs::perms(0400));
  Probe p = run_probe(scratch, "ro", 7, {"EMBER_CACHE_DIR=" + dir}, {"--drop-dac"});
  set_mode(fs::perms(0700), fs::perms(0600));
  ASSERT_TRUE(p.exited_ok) << p.output;
  EXPECT_EQ(p.result["ran"], 1) << p.output;
  EXPECT_EQ(p.result["compiles"], 0);
  EXPECT_EQ(p.result["disk_hits"], 1);
  EXPECT_EQ(p.warnings(), 1) << p.output;
}

TEST(JitProcess, ACacheOnANoexecMountFallsBackToMemoryWithOneWarning) {
  ScratchDir scratch;
  const std::string dir = scratch.file("mnt");
  std::filesystem::create_directories(dir);
  std::vector<std::string> env{"EMBER_CACHE_DIR=" + dir + "/cache"};
  // A real noexec tmpfs in a private mount namespace when we may make one; else the probe
  // treats the directory as noexec.
  bool can_mount = ::geteuid() == 0 && run_process({"/usr/bin/unshare", "-m", "/bin/sh", "-c",
                                                    "mount -t tmpfs -o noexec tmpfs " + dir},
                                                   {})
                                           .success();
  Probe p = can_mount
                ? run_probe(scratch, "noexec", 5, env, {},
                            {"/usr/bin/unshare", "-m", "/bin/sh", "-c",
                             "mount -t tmpfs -o noexec tmpfs " + dir + " && exec \"$0\" \"$@\""})
                : run_probe(scratch, "noexec", 5, env, {"--assume-noexec"});
  if (!can_mount) std::printf("[ jit ] no mount namespace here: noexec simulated\n");
  ASSERT_TRUE(p.exited_ok) << p.output;
  EXPECT_EQ(p.result["ran"], 1) << p.output;
  EXPECT_EQ(p.result["persistent"], 0);
  EXPECT_EQ(p.warnings(), 1) << p.output;
  EXPECT_NE(p.output.find("noexec"), std::string::npos) << p.output;
}

TEST(JitProcess, AMissingOrCrashingCompilerLeavesTheProgramRunning) {
  ScratchDir scratch;
  ember::test::write_bytes(scratch.file("cc"), "#!/bin/sh\nkill -SEGV $$\n");
  ::chmod(scratch.file("cc").c_str(), 0755);
  for (std::string cc : {scratch.file("missing"), scratch.file("cc")}) {
    Probe p = run_probe(scratch, "broken", 6,
                        {"EMBER_CACHE_DIR=" + scratch.file("cache"), "EMBER_CXX=" + cc});
    ASSERT_TRUE(p.exited_ok) << cc << ": " << p.output;
    EXPECT_EQ(p.result["ok"], 0) << cc;
    EXPECT_EQ(p.result["failures"], 1) << cc;
    EXPECT_EQ(p.warnings(), 1) << p.output;
    EXPECT_NE(p.output.find("EMBER_CXX"), std::string::npos) << p.output;
  }
}

}  // namespace
