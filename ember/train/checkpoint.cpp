// Learner checkpoints: one safetensors file per checkpoint holding the model's state_dict
// ("model.<key>"), the optimizer's and scheduler's State ("optimizer.<key>", "scheduler.<key>";
// scalars exact in the metadata), and the Learner's position, RNG, metric state and history as
// JSON metadata. Files are written atomically; old ones are pruned to keep_last.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "ember/ops/creation.h"
#include "ember/store/state.h"
#include "ember/train/learner_impl.h"
#include "ember/train/metric_log.h"

namespace ember::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kKind = "learner-checkpoint";

// (epochs finished, batches into the next epoch): the order of checkpoints in time.
struct Position {
  int64_t done = 0, step = 0;
  auto operator<=>(const Position&) const = default;
};

std::optional<Position> parse_name(const std::string& name) {
  static const std::regex re(R"(epoch-(\d+)(?:-step-(\d+))?\.safetensors)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  int64_t e = std::stoll(m[1].str());
  if (!m[2].matched) return Position{e, 0};
  if (e < 1) return std::nullopt;
  return Position{e - 1, std::stoll(m[2].str())};
}

std::vector<std::pair<Position, fs::path>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<Position, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    if (auto p = parse_name(entry.path().filename().string())) out.emplace_back(*p, entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Splits "<prefix>.<key>" entries of a State into their owners.
optim::State sub_state(const optim::State& s, const std::string& prefix) {
  optim::State out;
  for (const auto& [k, v] : s.tensors)
    if (k.rfind(prefix, 0) == 0) out.tensors[k.substr(prefix.size())] = v;
  for (const auto& [k, v] : s.scalars)
    if (k.rfind(prefix, 0) == 0) out.scalars[k.substr(prefix.size())] = v;
  return out;
}

void add_state(optim::State& to, const optim::State& from, const std::string& prefix) {
  for (const auto& [k, v] : from.tensors) to.tensors[prefix + k] = v;
  for (const auto& [k, v] : from.scalars) to.scalars[prefix + k] = v;
}

}  // namespace

std::string checkpoint_name(int64_t epochs_done, int64_t step_in_epoch) {
  char buf[64];
  if (step_in_epoch == 0)
    std::snprintf(buf, sizeof buf, "epoch-%04lld.safetensors", (long long)epochs_done);
  else
    std::snprintf(buf, sizeof buf, "epoch-%04lld-step-%07lld.safetensors",
                  (long long)(epochs_done + 1), (long long)step_in_epoch);
  return buf;
}

std::string Learner::latest_checkpoint(const std::string& dir) {
  auto all = list_checkpoints(dir);
  return all.empty() ? std::string() : all.back().second.string();
}

std::string Learner::Impl::save_checkpoint(int64_t done, int64_t step_in_epoch,
                                           double seconds_in_epoch) {
  const std::string& dir = options.checkpoint_dir;
  if (dir.empty()) return {};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw store::IOError("[Learner] cannot create the checkpoint directory " + dir + ": " +
                         ec.message());
  optim::State all;
  for (const auto& [k, t] : model.state_dict()) all.tensors["model." + k] = t;
  add_state(all, optimizer.state_dict(), "optimizer.");
  if (scheduler) add_state(all, scheduler->state_dict(), "scheduler.");

  json j;
  j["version"] = 1;
  j["epochs_done"] = done;
  j["step"] = step_in_epoch;
  j["seconds"] = seconds_in_epoch;
  j["global_step"] = global_step;
  j["rng"] = get_rng_state();
  j["best"] = has_best ? json(best) : json(nullptr);
  j["best_saved"] = best_saved ? json(*best_saved) : json(nullptr);
  j["bad_epochs"] = bad_epochs;
  j["optimizer"] = optimizer.name();
  j["scheduler"] = scheduler ? json(scheduler->name()) : json(nullptr);
  json ms = json::array();
  if (step_in_epoch > 0)  // the epoch's running training metrics
    for (const auto& m : train_metrics) ms.push_back({{"name", m->name()}, {"state", m->state()}});
  j["train_metrics"] = ms;

  std::string path = (fs::path(dir) / checkpoint_name(done, step_in_epoch)).string();
  store::save_state(path, all,
                    {{"ember.kind", kKind},
                     {"ember.learner", j.dump()},
                     {"ember.history", history_to_json(history)}});
  if (options.keep_last > 0) {
    auto list = list_checkpoints(dir);
    for (size_t i = 0; i + size_t(options.keep_last) < list.size(); ++i)
      if (list[i].second != fs::path(path)) fs::remove(list[i].second, ec);
  }
  return path;
}

void Learner::Impl::load(const std::string& path) {
  auto fail_file = [&](const std::string& msg) {
    throw store::FormatError("[Learner] " + path + ": " + msg);
  };
  store::StateFile f = store::load_state(path);
  auto kind = f.metadata.find("ember.kind");
  if (kind == f.metadata.end() || kind->second != kKind)
    fail_file("expected a Learner checkpoint (metadata ember.kind = \"" + std::string(kKind) +
              "\"), found " + (kind == f.metadata.end() ? "none" : "\"" + kind->second + "\""));
  // Every field is read before anything is checked or changed.
  std::vector<EpochRecord> hist;
  std::string opt_name;
  std::optional<std::string> sched_name;
  std::vector<std::pair<std::string, std::vector<double>>> ms;
  std::vector<uint64_t> rng;
  int64_t done = 0, step_in = 0, gstep = 0, bad = 0;
  double secs = 0;
  std::optional<double> best_v, best_saved_v;
  try {
    json j = json::parse(f.metadata.at("ember.learner"));
    hist = history_from_json(f.metadata.at("ember.history"));
    opt_name = j.at("optimizer").get<std::string>();
    if (!j.at("scheduler").is_null()) sched_name = j["scheduler"].get<std::string>();
    for (const auto& m : j.at("train_metrics"))
      ms.emplace_back(m.at("name").get<std::string>(), m.at("state").get<std::vector<double>>());
    rng = j.at("rng").get<std::vector<uint64_t>>();
    done = j.at("epochs_done").get<int64_t>();
    step_in = j.at("step").get<int64_t>();
    gstep = j.at("global_step").get<int64_t>();
    bad = j.at("bad_epochs").get<int64_t>();
    secs = j.at("seconds").get<double>();
    if (!j.at("best").is_null()) best_v = j["best"].get<double>();
    if (j.contains("best_saved") && !j["best_saved"].is_null())
      best_saved_v = j["best_saved"].get<double>();
  } catch (const std::exception& e) {
    fail_file(std::string("unreadable Learner metadata: ") + e.what());
  }
  if (done < 0 || step_in < 0 || gstep < 0 || bad < 0)
    fail_file("negative position in the Learner metadata");
  // Everything is checked against this Learner before anything changes.
  if (opt_name != optimizer.name())
    fail("expected a checkpoint of a " + optimizer.name() + " optimizer, found " + opt_name +
         " in " + path);
  if (sched_name.has_value() != (scheduler != nullptr) ||
      (scheduler && *sched_name != scheduler->name()))
    fail("expected a checkpoint " +
         (scheduler ? "with a " + scheduler->name() + " scheduler"
                    : std::string("without a scheduler")) +
         ", found " + sched_name.value_or("none") + " in " + path);
  if (!ms.empty()) {
    std::string want, found;
    for (const auto& m : train_metrics) want += (want.empty() ? "" : ", ") + m->name();
    for (const auto& m : ms) found += (found.empty() ? "" : ", ") + m.first;
    if (want != found)
      fail("expected training metrics [" + want + "] to resume mid-epoch, found [" + found +
           "] in " + path);
  }
  nn::StateDict model_sd;
  for (const auto& [k, t] : f.state.tensors)
    if (k.rfind("model.", 0) == 0) model_sd.emplace_back(k.substr(6), t);

  // Apply, restoring what was there if any part refuses.
  nn::StateDict before_model;
  for (const auto& [k, t] : model.state_dict()) before_model.emplace_back(k, t.clone());
  optim::State before_opt = optimizer.state_dict();
  std::optional<optim::State> before_sched;
  if (scheduler) before_sched = scheduler->state_dict();
  try {
    model.load_state_dict(model_sd);
    optimizer.load_state_dict(sub_state(f.state, "optimizer."));
    if (scheduler) scheduler->load_state_dict(sub_state(f.state, "scheduler."));
    for (size_t i = 0; i < ms.size(); ++i) train_metrics[i]->load_state(ms[i].second);
    set_rng_state(rng);
  } catch (...) {
    model.load_state_dict(before_model);
    optimizer.load_state_dict(before_opt);
    if (scheduler) scheduler->load_state_dict(*before_sched);
    throw;
  }
  epochs_done = done;
  resume_step = step_in;
  resumed_seconds = secs;
  global_step = gstep;
  has_best = best_v.has_value();
  best = best_v.value_or(0);
  best_saved = best_saved_v;
  bad_epochs = bad;
  history = std::move(hist);
  checkpoint = path;
}

}  // namespace ember::train
