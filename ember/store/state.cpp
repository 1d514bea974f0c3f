// Optimizer and scheduler state in safetensors files (scalars exact in the metadata).
#include "ember/store/state.h"

#include "ember/detail/decimal.h"
#include "ember/store/format.h"

namespace ember::store {
namespace {

constexpr std::string_view kScalarPrefix = "scalar.";

void check_kind(const std::string& path, const StateFile& f, const std::string& kind,
                const std::string& key, const std::string& name) {
  auto k = f.metadata.find("ember.kind");
  if (k == f.metadata.end() || k->second != kind)
    throw FormatError(detail::message(
        path, "expected a " + kind + " state file (metadata ember.kind = \"" + kind +
                  "\"), found " + (k == f.metadata.end() ? "none" : "\"" + k->second + "\"")));
  auto n = f.metadata.find(key);
  if (n == f.metadata.end() || n->second != name)
    throw ValueError(
        detail::message(path, "expected the state of a " + name + " " + kind + ", found " +
                                  (n == f.metadata.end() ? "no " + kind + " name" : n->second)));
}

}  // namespace

void save_state(const std::string& path, const optim::State& s, const Metadata& metadata) {
  Metadata md;
  for (const auto& [k, v] : metadata) {
    if (k.compare(0, kScalarPrefix.size(), kScalarPrefix) == 0)
      throw ValueError(detail::message(path, "metadata key \"" + k +
                                                 "\" uses the reserved prefix \"" +
                                                 std::string(kScalarPrefix) + "\""));
    md[k] = v;
  }
  for (const auto& [k, v] : s.scalars)
    md[std::string(kScalarPrefix) + k] = ember::detail::exact_decimal(v);
  TensorMap tensors(s.tensors.begin(), s.tensors.end());
  save_safetensors(path, tensors, md);
}

StateFile load_state(const std::string& path) {
  SafetensorsFile file(path);
  StateFile out;
  for (const auto& [k, v] : file.metadata()) {
    if (k.compare(0, kScalarPrefix.size(), kScalarPrefix) != 0) {
      out.metadata[k] = v;
      continue;
    }
    double d;
    if (!ember::detail::parse_exact(v, d))
      throw FormatError(
          detail::message(path, "scalar \"" + k + "\" is not a number: \"" + v + "\""));
    out.state.scalars[k.substr(kScalarPrefix.size())] = d;
  }
  for (auto& [k, t] : file.load_all()) out.state.tensors[k] = t;
  return out;
}

void save_optimizer(const std::string& path, const optim::Optimizer& opt) {
  save_state(path, opt.state_dict(),
             {{"ember.kind", "optimizer"}, {"ember.optimizer", opt.name()}});
}

void load_optimizer(const std::string& path, optim::Optimizer& opt) {
  StateFile f = load_state(path);
  check_kind(path, f, "optimizer", "ember.optimizer", opt.name());
  opt.load_state_dict(f.state);
}

void save_scheduler(const std::string& path, const optim::LRScheduler& sched) {
  save_state(path, sched.state_dict(),
             {{"ember.kind", "scheduler"}, {"ember.scheduler", sched.name()}});
}

void load_scheduler(const std::string& path, optim::LRScheduler& sched) {
  StateFile f = load_state(path);
  check_kind(path, f, "scheduler", "ember.scheduler", sched.name());
  sched.load_state_dict(f.state);
}

}  // namespace ember::store
