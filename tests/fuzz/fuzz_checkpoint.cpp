// Fuzzes Learner checkpoints. An input starting with '{' is the Learner's JSON metadata (and,
// after a newline, the history JSON), put into a checkpoint with valid tensors, so every input
// reaches the value checks; any other input is a whole checkpoint file. A load that fails must
// leave the model as it was.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "ember/store/state.h"
#include "ember/train/learner.h"
#include "fuzz_util.h"

namespace {
using namespace ember;

struct Net : nn::Module {
  nn::Linear fc{{.in = 4, .out = 2}};
  Net() { register_modules({{"fc", fc}}); }
  Tensor forward(const Tensor& x) override { return fc(x); }
};

struct Setup {
  Net net;
  optim::Adam opt{net.parameters(), {.lr = 1e-2}};
  optim::StepLR sched{opt, 2};
  train::Learner learner{
      net,
      opt,
      {.checkpoint_dir = "", .handle_interrupt = false, .renderer = train::silent_renderer()}};
  Setup() {
    learner.set_scheduler(sched);
    learner.add_metric(train::accuracy());
  }
};

// The tensors and scalars of a checkpoint of `s` (what save_checkpoint stores).
optim::State base_state(Setup& s) {
  optim::State all;
  for (const auto& [k, t] : s.net.state_dict()) all.tensors["model." + k] = t;
  for (const auto& [k, t] : s.opt.state_dict().tensors) all.tensors["optimizer." + k] = t;
  for (const auto& [k, v] : s.opt.state_dict().scalars) all.scalars["optimizer." + k] = v;
  for (const auto& [k, v] : s.sched.state_dict().scalars) all.scalars["scheduler." + k] = v;
  return all;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  Setup s;
  const std::string path = fuzz::scratch_path("epoch-0001.safetensors");
  if (!in.empty() && in[0] == '{') {
    size_t nl = in.find('\n');
    std::string learner = in.substr(0, nl),
                history = nl == std::string::npos ? "[]" : in.substr(nl + 1);
    fuzz::run([&] {
      store::save_state(path, base_state(s),
                        {{"ember.kind", "learner-checkpoint"},
                         {"ember.learner", learner},
                         {"ember.history", history}});
    });
  } else {
    fuzz::write_scratch("epoch-0001.safetensors", data, size);
  }
  Tensor before = s.net.fc.weight.detach().clone();
  const optim::State opt_before = s.opt.state_dict(), sched_before = s.sched.state_dict();
  fuzz::run([&] {
    try {
      s.learner.load_checkpoint(path);
    } catch (const Error&) {
      // Half applied: the model, the optimizer or the scheduler changed.
      if (!equal(s.net.fc.weight.detach(), before) ||
          s.opt.state_dict().scalars != opt_before.scalars ||
          s.sched.state_dict().scalars != sched_before.scalars)
        std::abort();
      throw;
    }
  });
  return 0;
}
