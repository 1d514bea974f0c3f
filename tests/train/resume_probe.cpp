// A training run for the kill-and-resume test: trains the blob MLP with checkpoints in <dir>,
// resuming from the newest one there, and saves the final weights to <out>. With a kill step it
// SIGKILLs itself just before that training batch (counted from the start of this process), as an
// OOM killer or a power cut would, with no chance to save anything.
// Usage: train_resume_probe <dir> <epochs> <out.safetensors> [kill_at_batch]
#include <ember/store/safetensors.h>
#include <ember/train/learner.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "train/synthetic.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: train_resume_probe <dir> <epochs> <out.safetensors> [kill_at_batch]\n";
    return 2;
  }
  const std::string dir = argv[1], out = argv[3];
  const int64_t epochs = std::atoll(argv[2]);
  const int64_t kill_at = argc > 4 ? std::atoll(argv[4]) : -1;

  auto train_ds = test::blobs(256, 4, 8, 11);
  auto valid_ds = test::blobs(96, 4, 8, 12);
  // Worker threads: a resumed epoch must skip to the same batches whoever makes them.
  data::DataLoader<data::Example> train_loader(
      train_ds, {.batch_size = 16, .shuffle = true, .seed = 3, .workers = 2});
  data::DataLoader<data::Example> valid_loader(valid_ds, {.batch_size = 32});
  manual_seed(5);
  test::BlobNet net;
  optim::AdamW opt(net.parameters(), {.lr = 1e-2});
  optim::CosineAnnealingLR sched(opt, 40);
  train::Learner learner(net, opt,
                         {.epochs = epochs,
                          .grad_accumulation = 2,
                          .clip_grad_norm = 1.0,
                          .schedule_every = train::ScheduleEvery::step,
                          .checkpoint_dir = dir,
                          .keep_last = 2,
                          .log_path = dir + "/metrics.jsonl",
                          .renderer = train::plain_renderer(std::cout, 50)});
  learner.set_scheduler(sched);
  learner.add_metric(train::accuracy());
  learner.add_metric(train::f1_score({.num_classes = 4}));
  int64_t calls = 0;
  auto step = train::classification_step(net);
  auto r = learner.fit(train_loader, &valid_loader, [&](data::Example& b) {
    if (++calls == kill_at) raise(SIGKILL);
    return step(b);
  });
  store::save_safetensors(out, net.state_dict());
  std::cout << "finished at epoch " << r.epoch << ", " << r.global_step << " optimizer steps\n";
  return 0;
}
