// Learner checkpoints: one safetensors file per checkpoint holding the model's state_dict
// ("model.<key>"), the optimizer's and scheduler's State ("optimizer.<key>", "scheduler.<key>";
// scalars exact in the metadata), and the Learner's position, RNG, metric state and history as
// JSON metadata. Files are written atomically; old ones are pruned to keep_last.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "ember/detail/json.h"
#include "ember/ops/creation.h"
#include "ember/store/state.h"
#include "ember/train/learner_impl.h"
#include "ember/train/metric_log.h"

namespace ember::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kKind = "learner-checkpoint";
// Positions and counters are whole numbers below 2^53 (so epoch + 1 and friends never overflow);
// the seconds spent in an epoch are finite and below 10^9 (30 years).
constexpr int64_t kMaxCount = int64_t(1) << 53;
constexpr double kMaxSeconds = 1e9;
// The Learner's metadata nests three levels ({"train_metrics": [{"state": [...]}]}).
constexpr int kMaxDepth = 4;

// (epochs finished, batches into the next epoch): the order of checkpoints in time.
struct Position {
  int64_t done = 0, step = 0;
  auto operator<=>(const Position&) const = default;
};

// A whole decimal number below 2^53, or nothing (no exception for 99999999999999999999).
std::optional<int64_t> parse_count(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v >= kMaxCount) return {};
  return v;
}

std::optional<Position> parse_name(const std::string& name) {
  static const std::regex re(R"(epoch-(\d+)(?:-step-(\d+))?\.safetensors)");
  if (name.size() > 64) return std::nullopt;  // longer than any name ember writes
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  auto e = parse_count(m[1].str());
  if (!e) return std::nullopt;
  if (!m[2].matched) return Position{*e, 0};
  auto step = parse_count(m[2].str());
  if (*e < 1 || !step) return std::nullopt;
  return Position{*e - 1, *step};
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

// nlohmann's get<int64_t>() of a float is a plain cast (undefined for 1e300): integers are
// checked to be integers first. Out-of-range values come back as -1, which the caller refuses.
int64_t json_count(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw std::invalid_argument(std::string(key) + " is not an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxCount)) return -1;
  return v.get<int64_t>();
}
uint64_t json_word(const json& v) {
  if (!v.is_number_unsigned()) throw std::invalid_argument("an RNG word is not an unsigned integer");
  return v.get<uint64_t>();
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
  // On every rank: a sharded optimizer (ZeRO-1) gathers its state here, a collective.
  const optim::State opt_state = options.data_parallel
                                     ? options.data_parallel->checkpoint_optimizer(optimizer.state_dict())
                                     : optimizer.state_dict();
  const nn::StateDict model_sd = model_state();  // FSDP gathers here
  if (!writer()) return {};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw store::IOError("[Learner] cannot create the checkpoint directory " + dir + ": " +
                         ec.message());
  optim::State all;
  for (const auto& [k, t] : model_sd) all.tensors["model." + k] = t;
  add_state(all, opt_state, "optimizer.");
  if (scheduler) add_state(all, scheduler->state_dict(), "scheduler.");
  if (scaler) add_state(all, scaler->state_dict(), "amp.");

  json j;
  j["version"] = 1;
  j["epochs_done"] = done;
  j["step"] = step_in_epoch;
  j["seconds"] = seconds_in_epoch;
  j["global_step"] = global_step;
  j["world_size"] = options.data_parallel ? options.data_parallel->world_size() : 1;
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
  std::string learner_json;
  try {
    learner_json = j.dump();
  } catch (const nlohmann::json::exception& e) {  // a metric or optimizer name not in UTF-8
    fail(std::string("cannot write a checkpoint: names must be UTF-8 (") + e.what() + ")");
  }
  store::save_state(path, all,
                    {{"ember.kind", kKind},
                     {"ember.learner", learner_json},
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
  int64_t done = 0, step_in = 0, gstep = 0, bad = 0, saved_world = 1;
  double secs = 0;
  std::optional<double> best_v, best_saved_v;
  try {
    auto md = f.metadata.find("ember.learner");
    if (md == f.metadata.end()) fail_file("no ember.learner metadata");
    json j = ember::detail::parse_json_bounded(md->second, kMaxDepth);
    if (j.is_discarded()) fail_file("ember.learner is not valid JSON (or nested too deep)");
    if (!f.metadata.count("ember.history")) fail_file("no ember.history metadata");
    hist = history_from_json(f.metadata.at("ember.history"));
    opt_name = j.at("optimizer").get<std::string>();
    if (!j.at("scheduler").is_null()) sched_name = j["scheduler"].get<std::string>();
    for (const auto& m : j.at("train_metrics"))
      ms.emplace_back(m.at("name").get<std::string>(), m.at("state").get<std::vector<double>>());
    for (const auto& w : j.at("rng")) rng.push_back(json_word(w));
    done = json_count(j, "epochs_done");
    step_in = json_count(j, "step");
    gstep = json_count(j, "global_step");
    bad = json_count(j, "bad_epochs");
    if (j.contains("world_size")) saved_world = json_count(j, "world_size");
    secs = j.at("seconds").get<double>();
    if (!j.at("best").is_null()) best_v = j["best"].get<double>();
    if (j.contains("best_saved") && !j["best_saved"].is_null())
      best_saved_v = j["best_saved"].get<double>();
  } catch (const store::StoreError&) {
    throw;
  } catch (const std::exception& e) {
    fail_file(std::string("unreadable Learner metadata: ") + e.what());
  }
  // The values the Learner's own loop could reach, nothing else (a hostile file may hold
  // anything: INT64_MAX epochs, 1e300 seconds, NaN).
  const std::pair<const char*, int64_t> counts[] = {
      {"epochs_done", done}, {"step", step_in}, {"global_step", gstep}, {"bad_epochs", bad}};
  for (const auto& [name, v] : counts)
    if (v < 0 || v >= kMaxCount)
      fail_file(std::string(name) + " " + std::to_string(v) + " is outside [0, 2^53)");
  if (!(secs >= 0 && secs < kMaxSeconds))
    fail_file("seconds " + std::to_string(secs) + " is outside [0, 1e9)");
  for (const auto& v : {best_v, best_saved_v})
    if (v && !std::isfinite(*v)) fail_file("a best value is not finite");
  for (const auto& [name, st] : ms)
    for (double x : st)
      if (!std::isfinite(x)) fail_file("the state of metric " + name + " is not finite");
  for (const auto& r : hist)
    if (r.epoch < 0 || r.epoch >= kMaxCount || !(r.seconds >= 0 && r.seconds < kMaxSeconds))
      fail_file("a history record has epoch " + std::to_string(r.epoch) + " and seconds " +
                std::to_string(r.seconds) + " (expected [0, 2^53) and [0, 1e9))");
  // Everything is checked against this Learner before anything changes. An epoch's end resumes
  // under any world size; a position inside an epoch counts this world's batches, whose rows
  // (and running metrics, rank 0's) depend on how many ranks shared the epoch.
  const int64_t world = options.data_parallel ? options.data_parallel->world_size() : 1;
  if (step_in > 0 && saved_world != world)
    fail("the checkpoint " + path + " was written " + std::to_string(step_in) +
         " batches into an epoch by " + std::to_string(saved_world) +
         " ranks; it resumes mid-epoch only under the same world size, found " +
         std::to_string(world) + " (an end-of-epoch checkpoint resumes under any)");
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

  // What can be checked without changing anything is checked here; the model and optimizer
  // check all their values before they change any.
  if (scheduler) scheduler->check_state(sub_state(f.state, "scheduler."));
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i].second.size() != train_metrics[i]->state().size())
      fail_file("metric " + ms[i].first + " has a state of " + std::to_string(ms[i].second.size()) +
                " numbers, expected " + std::to_string(train_metrics[i]->state().size()));
  if (rng.size() != get_rng_state().size())
    fail_file("the RNG state has " + std::to_string(rng.size()) + " words, expected " +
              std::to_string(get_rng_state().size()));

  // The loss scale (f16 mixed precision) goes with the checkpoint when both have one.
  std::optional<amp::GradScaler> next_scaler = scaler;
  const optim::State amp_state = sub_state(f.state, "amp.");
  if (next_scaler && !amp_state.scalars.empty()) {
    try {
      next_scaler->load_state_dict(amp_state);
    } catch (const ValueError& e) {
      fail_file(e.what());
    }
  }

  // Apply, restoring what was there if any part still refuses.
  const bool sharded = options.data_parallel && options.data_parallel->shards_parameters();
  auto load_model = [&](const nn::StateDict& sd) {
    if (sharded) options.data_parallel->load_model(sd);
    else model.load_state_dict(sd);
  };
  nn::StateDict before_model;
  for (const auto& [k, t] : model.state_dict()) before_model.emplace_back(k, t.clone());
  optim::State before_opt = optimizer.state_dict();
  std::optional<optim::State> before_sched;
  if (scheduler) before_sched = scheduler->state_dict();
  std::vector<std::vector<double>> before_metrics;
  for (size_t i = 0; i < ms.size(); ++i) before_metrics.push_back(train_metrics[i]->state());
  try {
    load_model(model_sd);
    const optim::State saved_opt = sub_state(f.state, "optimizer.");
    optimizer.load_state_dict(options.data_parallel
                                  ? options.data_parallel->local_optimizer(saved_opt)
                                  : saved_opt);
    if (scheduler) scheduler->load_state_dict(sub_state(f.state, "scheduler."));
    for (size_t i = 0; i < ms.size(); ++i) train_metrics[i]->load_state(ms[i].second);
    set_rng_state(rng);
  } catch (...) {
    load_model(before_model);
    optimizer.load_state_dict(before_opt);
    if (scheduler) scheduler->load_state_dict(*before_sched);
    for (size_t i = 0; i < before_metrics.size(); ++i) train_metrics[i]->load_state(before_metrics[i]);
    throw;
  }
  scaler = next_scaler;
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
