// Running the compiler as a child: output captured, exit status and signals reported, a deadline
// that kills the whole process group, and no zombie or stray process left afterwards.
#include "ember/backends/cpu/jit/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "store/store_test_util.h"

namespace {
using namespace ember::cpu::jit;

// True when `pid` is gone (or a zombie someone else must reap: not ours, not running).
bool not_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST(JitSubprocess, CapturesOutputAndExitStatus) {
  ProcessOptions o;
  o.env = {"EMBER_SUBPROCESS_TEST=hello"};
  auto r =
      run_process({"/bin/sh", "-c", "echo out $EMBER_SUBPROCESS_TEST; echo err >&2; exit 3"}, o);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.success());
  EXPECT_NE(r.output.find("out hello"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("err"), std::string::npos) << r.output;
  EXPECT_EQ(r.describe(), "exited with status 3");
  EXPECT_TRUE(run_process({"/bin/sh", "-c", "exit 0"}, {}).success());
}

TEST(JitSubprocess, ReportsSignalsAndProgramsThatCannotStart) {
  auto r = run_process({"/bin/sh", "-c", "kill -SEGV $$"}, {});
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos) << r.describe();
  auto missing = run_process({"/nonexistent/compiler", "--version"}, {});
  EXPECT_FALSE(missing.started);
  EXPECT_FALSE(missing.success());
}

TEST(JitSubprocess, TimeoutKillsTheGroupAndLeavesNoZombie) {
  ember::test::ScratchDir scratch;
  const std::string pidfile = scratch.file("pid");
  ProcessOptions o;
  o.timeout_s = 0.3;
  auto t0 = std::chrono::steady_clock::now();
  // The shell starts a grandchild (like a compiler driver starting cc1plus) and both hang.
  auto r = run_process({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.success());
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child is left to reap";
  pid_t grandchild = 0;
  std::ifstream(pidfile) >> grandchild;
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 200 && !not_running(grandchild); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(not_running(grandchild)) << "the compiler's child survived the timeout";
}

TEST(JitSubprocess, CancelStopsAWaitingRun) {
  std::atomic<bool> cancel{false};
  ProcessOptions o;
  o.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto r = run_process({"/bin/sh", "-c", "sleep 30"}, o);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(r.seconds, 5.0);
}

TEST(JitSubprocess, FindsProgramsOnPath) {
  EXPECT_FALSE(find_program("sh").empty());
  EXPECT_EQ(find_program("/bin/sh"), "/bin/sh");
  EXPECT_EQ(find_program("ember-no-such-program"), "");
  EXPECT_EQ(find_program("/nonexistent/cc"), "");
}

}  // namespace
