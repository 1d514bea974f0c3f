// Fuzzes optimizer and scheduler state loading. An input starting with '#' is a list of
// "key=value" scalar lines loaded with load_state_dict straight into fresh optimizers and
// schedulers (the value checks); any other input is a state file read with load_optimizer /
// load_scheduler. A load that fails must leave the object as it was.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "ember/store/state.h"
#include "fuzz_util.h"

namespace {
using namespace ember;

optim::State parse_lines(const std::string& text) {
  optim::State s;
  size_t at = 1;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    char* stop = nullptr;
    std::string num = line.substr(eq + 1);
    double v = std::strtod(num.c_str(), &stop);
    s.scalars[line.substr(0, eq)] = v;
  }
  return s;
}

template <class Sched>
void check_scheduler(Sched& s, const optim::State& st) {
  optim::State before = s.state_dict();
  try {
    s.load_state_dict(st);
  } catch (const Error&) {
    if (s.state_dict().scalars != before.scalars) std::abort();  // half applied
    throw;
  }
  for (int i = 0; i < 3; ++i) s.step();
}

void check_optimizer(optim::Optimizer& o, const optim::State& st) {
  optim::State before = o.state_dict();
  try {
    o.load_state_dict(st);
  } catch (const Error&) {
    if (o.state_dict().scalars != before.scalars) std::abort();
    throw;
  }
}

struct Objects {
  std::vector<Tensor> p{ones({3}).requires_grad_(), ones({2, 2}).requires_grad_()};
  optim::Adam adam{p, {.lr = 0.1}};
  std::vector<Tensor> q{ones({3}).requires_grad_()};
  optim::SGD sgd{q, {.lr = 0.1, .momentum = 0.9}};
  std::shared_ptr<optim::StepLR> a = std::make_shared<optim::StepLR>(sgd, 2);
  std::shared_ptr<optim::CosineAnnealingWarmRestarts> b =
      std::make_shared<optim::CosineAnnealingWarmRestarts>(sgd, 3, 2);
  optim::SequentialLR seq{sgd, {a, b}, {2}};
  std::vector<Tensor> r{ones({1}).requires_grad_()};
  optim::SGD sgd2{r, {.lr = 0.1, .momentum = 0.9}};
  std::shared_ptr<optim::LinearLR> c = std::make_shared<optim::LinearLR>(sgd2);
  std::shared_ptr<optim::CosineAnnealingLR> d = std::make_shared<optim::CosineAnnealingLR>(sgd2, 5);
  optim::ChainedScheduler chain{{c, d}};
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  Objects o;
  if (!in.empty() && in[0] == '#') {
    optim::State st = parse_lines(in);
    fuzz::run([&] { check_optimizer(o.adam, st); });
    fuzz::run([&] { check_optimizer(o.sgd, st); });
    fuzz::run([&] { check_scheduler(*o.b, st); });
    fuzz::run([&] { check_scheduler(o.seq, st); });
    fuzz::run([&] { check_scheduler(o.chain, st); });
    return 0;
  }
  const std::string& path = fuzz::write_scratch("state.safetensors", data, size);
  fuzz::run([&] { store::load_optimizer(path, o.adam); });
  fuzz::run([&] { store::load_optimizer(path, o.sgd); });
  fuzz::run([&] { store::load_scheduler(path, o.seq); });
  fuzz::run([&] { store::load_scheduler(path, o.chain); });
  fuzz::run([&] { store::load_scheduler(path, *o.b); });
  fuzz::run([&] { (void)store::load_state(path); });
  return 0;
}
