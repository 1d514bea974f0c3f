// Kill-and-resume across processes: a run SIGKILLed in the middle of an epoch and started again
// ends with the same weights, byte for byte, as a run that was never interrupted.
#include <ember/train/metric_log.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/store_test_util.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;

// Runs the probe with `args`; returns the raw wait status.
int run_probe(std::vector<std::string> args) {
  args.insert(args.begin(), EMBER_RESUME_PROBE);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(LearnerResume, KilledMidEpochResumesToIdenticalWeights) {
  ember::test::ScratchDir scratch;
  const std::string whole = scratch.file("whole"), killed = scratch.file("killed");

  int st = run_probe({whole, "4", scratch.file("whole.safetensors")});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;

  // 16 batches per epoch: batch 16 * 2 + 7 is in the middle of epoch 3.
  st = run_probe({killed, "4", scratch.file("killed.safetensors"), "39"});
  ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "status " << st;
  EXPECT_FALSE(fs::exists(scratch.file("killed.safetensors")));
  EXPECT_TRUE(fs::exists(fs::path(killed) / "epoch-0002.safetensors"));

  st = run_probe({killed, "4", scratch.file("killed.safetensors")});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;

  std::string a = ember::test::read_bytes(scratch.file("whole.safetensors"));
  std::string b = ember::test::read_bytes(scratch.file("killed.safetensors"));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the resumed run's weights differ from the uninterrupted run's";
  // The resumed run's log has every epoch once, like the uninterrupted one.
  auto la = ember::train::read_metric_log(whole + "/metrics.jsonl");
  auto lb = ember::train::read_metric_log(killed + "/metrics.jsonl");
  ASSERT_EQ(la.size(), 4u);
  ASSERT_EQ(lb.size(), 4u);
  for (size_t e = 0; e < 4; ++e) {
    EXPECT_EQ(la[e].train, lb[e].train);
    EXPECT_EQ(la[e].valid, lb[e].valid);
  }
}

}  // namespace
