// The fusion layer across processes (tests/fusion/fusion_probe.cpp is the child): a second run
// of a program compiles nothing, and a broken compiler or a cache directory that cannot be
// written leaves the results right (eager kernels, or kernels kept in memory) with one warning.
#include <gtest/gtest.h>

#include "jit/probe_run.h"

namespace {
using ember::test::ScratchDir;

using ProbeRun = ember::test::Probe;

ProbeRun probe(const ScratchDir& scratch, const std::string& name, std::vector<std::string> env) {
  const std::string result = scratch.file(name + ".result");
  return ember::test::run_probe_program({EMBER_FUSION_PROBE, result}, std::move(env), result);
}

TEST(FusionProcess, ASecondRunCompilesNothing) {
  ScratchDir scratch;
  const std::vector<std::string> env{"EMBER_CACHE_DIR=" + scratch.file("cache")};
  ProbeRun first = probe(scratch, "first", env);
  ASSERT_TRUE(first.exited_ok) << first.output;
  EXPECT_EQ(first.result["ok"], 1);
  EXPECT_GE(first.result["compiles"], 1);
  EXPECT_GE(first.result["fused_kernels"], 4);
  ProbeRun second = probe(scratch, "second", env);
  ASSERT_TRUE(second.exited_ok) << second.output;
  EXPECT_EQ(second.result["ok"], 1);
  EXPECT_EQ(second.result["compiles"], 0);
  EXPECT_GE(second.result["disk_hits"], 1);
  EXPECT_EQ(second.result["fused_kernels"], first.result["fused_kernels"]);
  EXPECT_EQ(second.warnings(), 0) << second.output;
}

TEST(FusionProcess, ABrokenCompilerRunsTheOpsEagerly) {
  ScratchDir scratch;
  for (const char* cxx : {"/bin/false", "/nonexistent/c++"}) {
    SCOPED_TRACE(cxx);
    ProbeRun r = probe(scratch, "broken", {"EMBER_CACHE_DIR=" + scratch.file("cache"),
                                      std::string("EMBER_CXX=") + cxx});
    ASSERT_TRUE(r.exited_ok) << r.output;
    EXPECT_EQ(r.result["ok"], 1);  // right results, from the eager kernels
    EXPECT_EQ(r.result["fused_kernels"], 0);
    EXPECT_GT(r.result["eager_ops"], 0);
    EXPECT_EQ(r.warnings(), 1) << r.output;
  }
}

TEST(FusionProcess, AnUnusableCacheDirectoryKeepsKernelsInMemory) {
  ScratchDir scratch;
  // /proc does not take new directories, even from root.
  ProbeRun r = probe(scratch, "nodir", {"EMBER_CACHE_DIR=/proc/ember-cache"});
  ASSERT_TRUE(r.exited_ok) << r.output;
  EXPECT_EQ(r.result["ok"], 1);
  EXPECT_GE(r.result["fused_kernels"], 4);  // compiled and run from memory
  EXPECT_EQ(r.warnings(), 1) << r.output;
}

}  // namespace
