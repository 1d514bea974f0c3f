// A training program for the dashboard's terminal test (tests/train/dashboard_tmux.sh): the blob
// MLP with slow-ish steps (a sleep in each), checkpoints in <dir>, resuming from the newest one,
// and the Learner's default renderer: the dashboard on a terminal, plain lines otherwise.
// Usage: train_dashboard_probe <dir> <epochs> [step_ms = 20] [fail_at_step | exit<step>]
//        train_dashboard_probe --cost [step_ms = 27]: what the dashboard costs the training
//        thread per step, and the CPU its drawing thread takes, on a 120x32 pseudo-terminal.
// Exits 130 when stopped (q or Ctrl-C), 0 when all epochs ran; with fail_at_step the step of
// that number throws an exception nothing catches, with exit<step> it calls exit(3) (the
// terminal must come back either way).
#include <ember/train/dashboard.h>
#include <ember/train/learner.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "train/synthetic.h"

using namespace ember;

namespace {

double seconds(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

train::Progress fashion_step(int64_t i) {
  train::Progress p;
  p.epoch = 1 + i / 937;
  p.epochs = 1000;
  p.step = 1 + i % 937;
  p.steps = 937;
  p.elapsed_s = 0.027 * double(p.step);
  p.metrics = {{"loss", 0.3 + 1.0 / double(i + 1)},
               {"accuracy", 0.89},
               {"lr", 0.001},
               {"samples_per_s", 2400}};
  p.loss = p.metrics[0].second;
  p.lr = 0.001;
  p.samples = 64;
  return p;
}

// The dashboard on a 120x32 pseudo-terminal whose other end a child process drains (as a
// terminal would), fed Fashion-MNIST-shaped steps.
int cost(int step_ms) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return 1;
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  winsize ws{};
  ws.ws_col = 120;
  ws.ws_row = 32;
  ioctl(slave, TIOCSWINSZ, &ws);
  pid_t drain = fork();
  if (drain == 0) {
    char buf[65536];
    while (read(master, buf, sizeof buf) > 0) {
    }
    _exit(0);
  }
  auto r = train::dashboard_renderer(
      {.out_fd = slave, .in_fd = -1, .handle_signals = false, .summary = false});
  r->on_fit_start({.epochs = 1000, .start_epoch = 1, .train_steps = 937, .valid_steps = 10});
  // 1. The training thread's cost per step: on_progress back to back.
  const int64_t n = 200000;
  double t0 = seconds(CLOCK_MONOTONIC);
  for (int64_t i = 0; i < n; ++i) r->on_progress(fashion_step(i));
  const double per_step_us = (seconds(CLOCK_MONOTONIC) - t0) / double(n) * 1e6;
  // 2. The drawing thread: steps every step_ms for 10 s; the process's CPU time is the
  // dashboard's (the steps themselves only sleep).
  const double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
  for (int64_t i = n; seconds(CLOCK_MONOTONIC) - w0 < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    r->on_progress(fashion_step(i));
  }
  const double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0, wall = seconds(CLOCK_MONOTONIC) - w0;
  r->on_fit_end();
  r.reset();
  close(slave);
  close(master);
  kill(drain, SIGTERM);
  waitpid(drain, nullptr, 0);
  std::printf("on_progress: %.2f us per step (%.4f%% of a %d ms step)\n", per_step_us,
              per_step_us / (10.0 * step_ms), step_ms);
  std::printf("drawing thread: %.4f s CPU in %.2f s (%.3f%% of one core)\n", cpu, wall,
              100.0 * cpu / wall);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--cost") return cost(argc > 2 ? std::atoi(argv[2]) : 27);
  if (argc < 3) {
    std::cerr << "usage: train_dashboard_probe <dir> <epochs> [step_ms]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t epochs = std::atoll(argv[2]);
  const int step_ms = argc > 3 ? std::atoi(argv[3]) : 20;
  const std::string fail = argc > 4 ? argv[4] : "";
  const bool exit_instead = fail.rfind("exit", 0) == 0;
  const int64_t fail_at = fail.empty() ? -1 : std::atoll(fail.c_str() + (exit_instead ? 4 : 0));
  auto train_ds = test::blobs(1024, 4, 8, 11);
  auto valid_ds = test::blobs(256, 4, 8, 12);
  data::DataLoader<data::Example> train_loader(train_ds, {.batch_size = 16, .shuffle = true});
  data::DataLoader<data::Example> valid_loader(valid_ds, {.batch_size = 32});
  manual_seed(5);
  test::BlobNet net;
  optim::Adam opt(net.parameters(), {.lr = 1e-2});
  optim::StepLR sched(opt, 2, 0.5);
  train::Learner learner(net, opt, {.epochs = epochs, .checkpoint_dir = dir});
  learner.set_scheduler(sched);
  learner.add_metric(train::accuracy());
  learner.add_train_metric(train::throughput());
  auto step = train::classification_step(net);
  int64_t calls = 0;
  auto r = learner.fit(train_loader, &valid_loader, [&](data::Example& b) {
    if (++calls == fail_at && exit_instead) std::exit(3);
    if (calls == fail_at)
      throw std::runtime_error("probe failure at step " + std::to_string(calls));
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    return step(b);
  });
  std::cout << (r.interrupted ? "stopped" : "finished") << " at epoch " << r.epoch << ", "
            << r.global_step << " optimizer steps" << std::endl;
  return r.interrupted ? 130 : 0;
}
