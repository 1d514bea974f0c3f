// A training program for the dashboard's terminal test (tests/train/dashboard_tmux.sh): the blob
// MLP with slow-ish steps (a sleep in each), checkpoints in <dir>, resuming from the newest one,
// and the Learner's default renderer: the dashboard on a terminal, plain lines otherwise.
// Usage: train_dashboard_probe <dir> <epochs> [step_ms = 20]
// Exits 130 when stopped (q or Ctrl-C), 0 when all epochs ran.
#include <ember/train/learner.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "train/synthetic.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: train_dashboard_probe <dir> <epochs> [step_ms]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t epochs = std::atoll(argv[2]);
  const int step_ms = argc > 3 ? std::atoi(argv[3]) : 20;
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
  auto r = learner.fit(train_loader, &valid_loader, [&](data::Example& b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    return step(b);
  });
  std::cout << (r.interrupted ? "stopped" : "finished") << " at epoch " << r.epoch << ", "
            << r.global_step << " optimizer steps" << std::endl;
  return r.interrupted ? 130 : 0;
}
