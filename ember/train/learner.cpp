// The Learner's loop: steps, gradient accumulation, metrics, scheduling, early stopping, logs,
// and the Ctrl-C handler. Checkpoints live in checkpoint.cpp.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "ember/detail/decimal.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/optim/clip.h"
#include "ember/store/safetensors.h"
#include "ember/train/learner_impl.h"
#include "ember/train/metric_log.h"
#include "ember/train/report.h"

namespace ember::train {
namespace {

// Ctrl-C: the first press asks the fit to stop after its current step; a second one restores
// the previous action and re-raises, so a stuck program can still be killed.
std::atomic<int> g_interrupts{0};
struct sigaction g_previous;
std::atomic<bool> g_installed{false};

extern "C" void on_sigint(int sig) {
  if (g_interrupts.fetch_add(1) >= 1) {
    sigaction(SIGINT, &g_previous, nullptr);
    raise(sig);
  }
}

void install_handler() {
  if (g_installed.exchange(true)) return;  // a nested fit shares the outer handler
  g_interrupts = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_previous);
}

void remove_handler() {
  if (!g_installed.exchange(false)) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_interrupts = 0;
}

bool interrupt_requested() { return g_interrupts.load(std::memory_order_relaxed) > 0; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

MetricValues values_of(const std::vector<MetricPtr>& ms) {
  MetricValues out;
  for (const auto& m : ms) out.emplace_back(m->name(), m->value());
  return out;
}

// "valid.accuracy" -> (true, "accuracy"); the prefix was checked when the options were.
std::pair<bool, std::string> split_key(const std::string& key) {
  return {key.rfind("valid.", 0) == 0, key.substr(key.find('.') + 1)};
}

}  // namespace

void Learner::Impl::fail(const std::string& msg) const { throw ValueError("[Learner] " + msg); }

MetricValues Learner::Impl::epoch_values(const std::vector<MetricPtr>& metrics) const {
  const auto& dp = options.data_parallel;
  if (!dp || dp->world_size() == 1) return values_of(metrics);
  // Counts and sums add up across ranks; the learning rate (the same everywhere) and timings
  // (wall time is not additive) stay this rank's.
  auto summed = [](const Metric& m) { return !m.timing() && m.name() != "lr"; };
  std::vector<double> states;
  for (const auto& m : metrics)
    if (summed(*m)) {
      std::vector<double> st = m->state();
      states.insert(states.end(), st.begin(), st.end());
    }
  dp->sum(states);
  MetricValues out;
  size_t at = 0;
  for (const auto& m : metrics) {
    if (!summed(*m)) {
      out.emplace_back(m->name(), m->value());
      continue;
    }
    const size_t n = m->state().size();
    MetricPtr all = m->fresh();
    all->load_state(std::vector<double>(states.begin() + long(at), states.begin() + long(at + n)));
    at += n;
    out.emplace_back(all->name(), all->value());
  }
  return out;
}

void Learner::Impl::check_loss(const Tensor& l, const char* pass) const {
  if (!l.defined() || l.numel() != 1 || !is_floating(l.dtype()))
    fail(std::string("expected the ") + pass +
         " step to return a floating loss with one element, found " +
         (l.defined() ? std::string(dtype_name(l.dtype())) + " of shape " + shape_str(l.shape())
                      : std::string("an undefined tensor")));
}

double Learner::Impl::read_loss(const StepOutput& out, const char* pass) const {
  check_loss(out.loss, pass);
  return out.loss.item<double>();
}

void Learner::Impl::check_finite(double loss, const char* note) const {
  if (options.stop_on_nan && !std::isfinite(loss))
    fail("the training loss is " + std::to_string(loss) + " at epoch " + std::to_string(epoch) +
         ", batch " + std::to_string(step + 1) + note);
}

double Learner::Impl::current_lr() const { return optimizer.num_groups() ? optimizer.lr(0) : 0; }

void Learner::Impl::report(Split split, int64_t done, int64_t steps,
                           const std::vector<MetricPtr>& metrics, const StepContext& ctx) {
  const double elapsed = seconds_since(pass_start);
  renderer->on_progress({.split = split,
                         .epoch = epoch,
                         .epochs = options.epochs,
                         .step = done,
                         .steps = steps,
                         .elapsed_s = elapsed,
                         .eta_s = elapsed / double(done) * double(steps - done),
                         .metrics = values_of(metrics),
                         .loss = ctx.loss.value_or(0),
                         .lr = ctx.lr,
                         .samples = ctx.samples});
}

bool Learner::Impl::stop_requested() const {
  return interrupt_requested() || renderer->stop_requested();
}

bool Learner::Impl::higher_is_better(const std::string& key) const {
  auto [valid, name] = split_key(key);
  for (const auto& m : valid ? valid_metrics : train_metrics)
    if (m->name() == name) return m->higher_is_better();
  fail("\"" + key + "\" is monitored, but no metric provides it");
}

double Learner::Impl::metric_value(const std::string& key, const EpochRecord& r) const {
  auto [valid, name] = split_key(key);
  for (const auto& [n, v] : valid ? r.valid : r.train)
    if (n == name) return v;
  fail("\"" + key + "\" is monitored, but epoch " + std::to_string(r.epoch) + " does not have it");
}

nn::StateDict Learner::Impl::model_state() const {
  nn::StateDict sd = model.state_dict();
  // Sharded parameters are gathered as they are read: on every rank, in the same order.
  if (options.data_parallel && options.data_parallel->shards_parameters()) {
    NoGradGuard no_grad;
    for (auto& [k, t] : sd) t = t.detach().clone();
  }
  return sd;
}

void Learner::Impl::save_best(const EpochRecord& rec) {
  const std::string& key = options.save_best;
  double v = metric_value(key, rec);  // the same on every rank (metrics are over all ranks)
  bool higher = higher_is_better(key);
  if (best_saved && !(higher ? v > *best_saved : v < *best_saved)) return;
  const nn::StateDict state = model_state();
  if (!writer()) return;
  std::error_code ec;
  std::filesystem::create_directories(options.checkpoint_dir, ec);
  store::save_safetensors(
      (std::filesystem::path(options.checkpoint_dir) / "best.safetensors").string(), state,
      {{"epoch", std::to_string(rec.epoch)}, {"metric", key}, {"value", detail::exact_decimal(v)}});
  best_saved = v;
}

std::function<StepOutput(std::pair<Tensor, Tensor>&)> classification_step(nn::Module& model) {
  return [&model](std::pair<Tensor, Tensor>& batch) {
    // The batch goes where the model is: loaders yield host tensors, and a model on a GPU needs
    // its inputs there. Tensors already in the model's place are not copied.
    const std::vector<Tensor> params = model.parameters();
    if (!params.empty()) {
      const Device d = params.front().device();
      for (Tensor* t : {&batch.first, &batch.second})
        if (t->defined() && !t->device().same_place(d)) *t = t->to(d);
    }
    Tensor out = model(batch.first);
    return StepOutput{.loss = nn::functional::cross_entropy(out, batch.second),
                      .output = out,
                      .target = batch.second};
  };
}

Learner::Learner(nn::Module& model, optim::Optimizer& opt, LearnerOptions o)
    : impl_(std::make_unique<Impl>(model, opt, std::move(o))) {
  const LearnerOptions& op = impl_->options;
  auto bad = [&](const std::string& m) { impl_->fail("expected " + m); };
  if (op.epochs < 0) bad("epochs >= 0, found " + std::to_string(op.epochs));
  if (op.grad_accumulation < 1)
    bad("grad_accumulation >= 1, found " + std::to_string(op.grad_accumulation));
  if (op.keep_last < 0) bad("keep_last >= 0, found " + std::to_string(op.keep_last));
  if (op.clip_grad_norm && !(*op.clip_grad_norm > 0))
    bad("clip_grad_norm > 0, found " + std::to_string(*op.clip_grad_norm));
  if (op.clip_grad_value && !(*op.clip_grad_value > 0))
    bad("clip_grad_value > 0, found " + std::to_string(*op.clip_grad_value));
  if (op.early_stopping) {
    const EarlyStopping& es = *op.early_stopping;
    if (es.patience < 1) bad("early stopping patience >= 1, found " + std::to_string(es.patience));
    if (es.metric.rfind("train.", 0) != 0 && es.metric.rfind("valid.", 0) != 0)
      bad("an early stopping metric \"train.<name>\" or \"valid.<name>\", found \"" + es.metric +
          "\"");
  }
  if (!op.save_best.empty()) {
    if (op.save_best.rfind("train.", 0) != 0 && op.save_best.rfind("valid.", 0) != 0)
      bad("save_best \"train.<name>\" or \"valid.<name>\", found \"" + op.save_best + "\"");
    if (op.checkpoint_dir.empty()) bad("a checkpoint_dir for save_best, found none");
  }
  if (!op.log_path.empty()) log_format_for(op.log_path);  // throws for a bad extension
  if (op.grad_scaler) {
    impl_->scaler.emplace(*op.grad_scaler);
  } else {
    const std::vector<Tensor> params = model.parameters();
    if (!params.empty() && amp::compute_dtype(params.front().device()) == DType::F16)
      impl_->scaler.emplace();
  }
  impl_->train_metrics.push_back(loss_metric());
  impl_->valid_metrics.push_back(loss_metric());
}

Learner::~Learner() = default;

Learner& Learner::set_scheduler(optim::LRScheduler& sched) {
  impl_->scheduler = &sched;
  return *this;
}

Learner& Learner::add_metric(MetricPtr m) {
  impl_->valid_metrics.push_back(m->fresh());
  impl_->train_metrics.push_back(std::move(m));
  return *this;
}
Learner& Learner::add_train_metric(MetricPtr m) {
  impl_->train_metrics.push_back(std::move(m));
  return *this;
}
Learner& Learner::add_valid_metric(MetricPtr m) {
  impl_->valid_metrics.push_back(std::move(m));
  return *this;
}
const LearnerOptions& Learner::options() const { return impl_->options; }

void Learner::load_checkpoint(const std::string& path) {
  impl_->load(path);
  impl_->loaded = true;
}

// --- one fit ---

Learner::FitScope::FitScope(Learner& l, int64_t train_steps, int64_t valid_steps) : l_(l) {
  Impl& s = *l.impl_;
  // An empty loader would record epochs with a NaN loss: refuse it before anything runs.
  if (train_steps <= 0)
    s.fail("the training loader has no batches (an empty dataset, or drop_last with fewer "
           "items than batch_size)");
  if (valid_steps == 0) s.fail("the validation loader has no batches");
  valid_steps = std::max<int64_t>(valid_steps, 0);
  s.train_steps = train_steps;
  s.valid_steps = valid_steps;
  s.interrupted = s.stopped_early = false;
  if (s.options.early_stopping) {
    if (s.options.early_stopping->metric.rfind("valid.", 0) == 0 && valid_steps == 0)
      s.fail("early stopping monitors \"" + s.options.early_stopping->metric +
             "\", but fit has no validation loader");
    s.higher_is_better(s.options.early_stopping->metric);  // throws when no metric has it
  }
  if (!s.options.save_best.empty()) {
    if (s.options.save_best.rfind("valid.", 0) == 0 && valid_steps == 0)
      s.fail("save_best monitors \"" + s.options.save_best +
             "\", but fit has no validation loader");
    s.higher_is_better(s.options.save_best);
  }
  s.renderer = s.options.renderer ? s.options.renderer
               : s.writer()        ? std::shared_ptr<Renderer>(auto_renderer(s.options.dashboard))
                                   : std::shared_ptr<Renderer>(silent_renderer());
  std::string resumed;
  if (!s.loaded && s.options.resume && !s.options.checkpoint_dir.empty()) {
    resumed = latest_checkpoint(s.options.checkpoint_dir);
    if (!resumed.empty()) s.load(resumed);
  } else if (s.loaded) {
    resumed = s.checkpoint;
  }
  s.loaded = false;
  if (s.resume_step > train_steps)
    s.fail("the checkpoint is " + std::to_string(s.resume_step) + " batches into epoch " +
           std::to_string(s.epochs_done + 1) + ", but the training loader has only " +
           std::to_string(train_steps));
  // The log matches the history the fit continues from (rows of a lost epoch are dropped).
  if (!s.options.log_path.empty() && !resumed.empty() && s.writer())
    write_metric_log(s.options.log_path, s.history);
  if (!s.options.tensorboard_dir.empty() && s.writer()) {
    // Steps after the position this fit starts from (a run lost after its checkpoint, or the
    // whole of an earlier run when this one starts afresh) would be in the directory twice.
    const int64_t epochs = s.epochs_done, batches = s.epochs_done * train_steps + s.resume_step;
    drop_scalars(s.options.tensorboard_dir, [&](const std::string& tag, int64_t step) {
      return step <= (tag.rfind("batch/", 0) == 0 ? batches : epochs);
    });
    s.events = std::make_unique<TensorBoardWriter>(s.options.tensorboard_dir);
  }
  if (s.options.handle_interrupt) install_handler();
  s.replayed = 0;
  s.drop_captured("", true);
  if (s.options.capture != CaptureMode::off) {
    const std::vector<Tensor> params = s.model.parameters();
    if (!params.empty() && (s.options.capture == CaptureMode::always ||
                            params.front().device().backend() == Backend::Cuda))
      s.capture_device = params.front().device();
  }
  int gpu = -1;
  for (const Tensor& p : s.model.parameters()) {
    if (p.device().backend() == Backend::Cuda) gpu = p.device().index();
    break;
  }
  s.renderer->on_fit_start({.epochs = s.options.epochs,
                            .start_epoch = s.epochs_done + 1,
                            .train_steps = train_steps,
                            .valid_steps = valid_steps,
                            .gpu = gpu,
                            .history = s.history});
  if (!resumed.empty())
    s.renderer->on_message("resumed from " + resumed + " (epoch " +
                           std::to_string(s.epochs_done + 1) + ", batch " +
                           std::to_string(s.resume_step) + ")");
}

Learner::FitScope::~FitScope() {
  // The renderer first: a dashboard restores the terminal and its own signal handlers (installed
  // after this fit's) before the fit's handler goes.
  if (!finished_ && l_.impl_->renderer) l_.impl_->renderer->on_fit_end();  // end a live line
  if (l_.impl_->options.handle_interrupt) remove_handler();
  l_.impl_->events.reset();
  l_.impl_->drop_captured("", true);  // their functions refer to this fit's step
}

FitResult Learner::FitScope::finish() {
  Impl& s = *l_.impl_;
  s.renderer->on_fit_end();
  finished_ = true;
  s.events.reset();
  if (!s.options.report_path.empty() && s.writer()) {
    std::vector<ScalarEvent> scalars;
    if (!s.options.tensorboard_dir.empty()) scalars = read_event_dir(s.options.tensorboard_dir);
    std::string run = std::filesystem::path(s.options.report_path).parent_path().filename();
    write_report(s.options.report_path, run.empty() ? "Training run" : "Training run " + run,
                 run_plots(s.history, scalars));
  }
  return {.history = s.history,
          .epoch = s.epochs_done,
          .global_step = s.global_step,
          .stopped_early = s.stopped_early,
          .interrupted = s.interrupted,
          .checkpoint = s.checkpoint,
          .replayed_steps = s.replayed};
}

bool Learner::next_epoch(int64_t& epoch, int64_t& start_batch) {
  Impl& s = *impl_;
  if (s.interrupted || s.stopped_early) return false;
  if (s.options.early_stopping && s.bad_epochs >= s.options.early_stopping->patience) {
    s.stopped_early = true;  // a resumed fit that had already stopped
    return false;
  }
  if (s.epochs_done >= s.options.epochs) return false;
  if (s.stop_requested()) {  // pressed between epochs: the last checkpoint is current
    s.interrupted = true;
    s.renderer->on_message("interrupted between epochs");
    return false;
  }
  s.epoch = s.epochs_done + 1;
  s.step = start_batch = s.resume_step;
  s.resume_step = 0;
  // A checkpoint taken mid-epoch restored the epoch's running metrics and time so far.
  const double already = start_batch > 0 ? s.resumed_seconds : 0;
  if (start_batch == 0)
    for (auto& m : s.train_metrics) m->reset();
  s.resumed_seconds = 0;
  s.grads = Gradients();
  s.epoch_start = s.pass_start =
      Impl::Clock::now() -
      std::chrono::duration_cast<Impl::Clock::duration>(std::chrono::duration<double>(already));
  s.model.train();
  epoch = s.epoch;
  return true;
}

bool Learner::run_train_step(const std::function<StepOutput()>& step_fn) {
  Impl& s = *impl_;
  auto t0 = Impl::Clock::now();
  const double lr = s.current_lr();
  StepOutput out = step_fn();
  const double loss = s.read_loss(out, "training");
  s.check_finite(loss, "");
  const int64_t accum = s.options.grad_accumulation;
  Tensor scaled = accum > 1 ? out.loss / double(accum) : out.loss;
  if (s.scaler) scaled = s.scaler->scale(scaled);
  ++s.step;
  const bool boundary = s.step % accum == 0 || s.step == s.train_steps;
  if (s.options.data_parallel) {  // gradients combined across ranks at the optimizer step only
    s.options.data_parallel->backward(scaled.reshape({}), s.grads, boundary);
  } else {
    BackwardOptions bo;
    bo.accumulate_into = &s.grads;
    scaled.reshape({}).backward(bo);
  }
  scaled = Tensor();
  if (boundary) {
    if (s.scaler) s.scaler->unscale(s.grads, s.optimizer.all_params());
    if (s.options.clip_grad_value)
      optim::clip_grad_value(s.grads, s.optimizer.all_params(), *s.options.clip_grad_value);
    if (s.options.clip_grad_norm)
      optim::clip_grad_norm_on_device(s.grads, s.optimizer.all_params(),
                                      *s.options.clip_grad_norm);
    if (s.scaler) {  // skips the step when a gradient is inf or nan (one host read)
      s.scaler->step(s.optimizer, s.grads);
      s.scaler->update();
    } else {
      s.optimizer.step(s.grads);
    }
    s.grads = Gradients();
    ++s.global_step;
    if (s.scheduler && s.options.schedule_every == ScheduleEvery::step) s.scheduler->step();
  }
  return s.end_train_step(out, loss, lr, t0, boundary);
}

// A batch of (input, target): replayed when a captured step has its shapes (see
// LearnerOptions::capture), else eager.
bool Learner::run_train_step(std::pair<Tensor, Tensor>& batch,
                             const std::function<StepOutput(std::pair<Tensor, Tensor>&)>& step) {
  Impl& s = *impl_;
  Impl::Captured* c = s.captured_for(batch, step);
  if (!c) return run_train_step([&] { return step(batch); });
  auto t0 = Impl::Clock::now();
  const double lr = s.current_lr();
  try {
    // copy_ takes tensors of one device: a host batch goes to the graph's device first.
    for (size_t i = 0; i < 2; ++i) {
      Tensor in = c->step.input(i);
      const Tensor& b = i == 0 ? batch.first : batch.second;
      in.copy_(b.device().same_place(in.device()) ? b : b.to(in.device()));
    }
    c->step.replay();
  } catch (const CaptureError& e) {
    // A tensor the graph reads was replaced (a loaded checkpoint, a new optimizer state): the
    // graph was not launched, so the step runs eagerly and may be captured again later.
    s.drop_captured(std::string("captured step dropped: ") + e.what(), false);
    return run_train_step([&] { return step(batch); });
  }
  ++s.replayed;
  size_t k = 0;
  StepOutput out{.loss = c->step.output(k++), .batch_size = c->batch_size};
  if (c->has_output) out.output = c->step.output(k++);
  if (c->has_target) out.target = c->step.output(k++);
  const double loss = s.read_loss(out, "training");
  s.check_finite(loss, " (a replayed step: the optimizer has stepped)");
  ++s.step;
  ++s.global_step;
  if (s.scheduler && s.options.schedule_every == ScheduleEvery::step) s.scheduler->step();
  return s.end_train_step(out, loss, lr, t0, true);
}

Learner::Impl::Captured* Learner::Impl::captured_for(
    const std::pair<Tensor, Tensor>& batch,
    const std::function<StepOutput(std::pair<Tensor, Tensor>&)>& step) {
  // Data-parallel steps wait for collectives on the host: not captured (yet).
  if (!capture_device || options.grad_accumulation != 1 || scaler || options.data_parallel)
    return nullptr;
  const Tensor &x = batch.first, &y = batch.second;
  if (!x.defined() || !y.defined()) return nullptr;
  for (auto& c : captured)
    if (c->x == x.shape() && c->y == y.shape() && c->xd == x.dtype() && c->yd == y.dtype())
      return c.get();
  const bool same = same_shape_steps > 0 && last_x == x.shape() && last_y == y.shape() &&
                    last_xd == x.dtype() && last_yd == y.dtype();
  same_shape_steps = same ? same_shape_steps + 1 : 1;
  last_x = x.shape(), last_y = y.shape(), last_xd = x.dtype(), last_yd = y.dtype();
  // Two eager steps of these shapes first (kernels compile, the optimizer creates its state),
  // then the third is captured. A step of other shapes (a last, shorter batch) stays eager.
  if (same_shape_steps < 3) return nullptr;
  auto c = std::make_unique<Captured>();
  c->x = x.shape(), c->y = y.shape(), c->xd = x.dtype(), c->yd = y.dtype();
  const Device d = *capture_device;
  Tensor sx = empty(x.shape(), {x.dtype(), d}), sy = empty(y.shape(), {y.dtype(), d});
  Captured* raw = c.get();
  auto fn = [this, raw, &step, sx, sy] {
    std::pair<Tensor, Tensor> b{sx, sy};
    StepOutput out = step(b);
    const Tensor& l = out.loss;
    check_loss(l, "training");
    Gradients g = l.reshape({}).backward();
    const std::vector<Tensor> params = optimizer.all_params();
    if (options.clip_grad_value) optim::clip_grad_value(g, params, *options.clip_grad_value);
    if (options.clip_grad_norm) optim::clip_grad_norm_on_device(g, params, *options.clip_grad_norm);
    optimizer.step(g);
    raw->has_output = out.output.defined();
    raw->has_target = out.target.defined();
    raw->batch_size = batch_size_of(out);
    TensorList res{l.detach().reshape({})};
    if (raw->has_output) res.push_back(out.output.detach());
    if (raw->has_target) res.push_back(out.target.detach());
    return res;
  };
  try {
    c->step = capture(fn, {sx, sy}, {.device = d});
  } catch (const CaptureError& e) {
    drop_captured(std::string("training steps run eagerly: ") + e.what(), true);
    return nullptr;
  }
  if (captured.size() == 2) captured.erase(captured.begin());
  captured.push_back(std::move(c));
  return raw;
}

void Learner::Impl::drop_captured(const std::string& why, bool off) {
  captured.clear();
  same_shape_steps = 0;
  if (off) capture_device.reset();
  if (!why.empty() && renderer) renderer->on_message(why);
}

bool Learner::Impl::end_train_step(StepOutput& out, double loss, double lr, Clock::time_point t0,
                                   bool boundary) {
  StepContext ctx{
      .samples = batch_size_of(out), .lr = lr, .seconds = seconds_since(t0), .loss = loss};
  {
    NoGradGuard no_grad;
    for (auto& m : train_metrics) m->update(out, ctx);
  }
  out = StepOutput();
  if (events) {
    // Per batch: its loss and learning rate, and the other metrics' running values.
    const int64_t batch = (epoch - 1) * train_steps + step;
    events->add_scalar("batch/train/loss", loss, batch);
    events->add_scalar("batch/train/lr", lr, batch);
    for (const auto& m : train_metrics)
      if (m->name() != "loss" && m->name() != "lr")
        events->add_scalar("batch/train/" + m->name(), m->value(), batch);
  }
  report(Split::train, step, train_steps, train_metrics, ctx);
  if (boundary && stop_requested()) {
    interrupted = true;
    checkpoint = save_checkpoint(epochs_done, step, seconds_since(epoch_start));
    renderer->on_message(checkpoint.empty()
                             ? "interrupted at epoch " + std::to_string(epoch) + ", batch " +
                                   std::to_string(step) + " (no checkpoint_dir: not saved)"
                             : "interrupted: saved " + checkpoint);
    return false;
  }
  return true;
}

bool Learner::end_train() {
  Impl& s = *impl_;
  if (s.interrupted) return false;
  s.train_values = s.epoch_values(s.train_metrics);
  s.train_seconds = seconds_since(s.epoch_start);
  s.valid_step = 0;
  for (auto& m : s.valid_metrics) m->reset();
  s.model.eval();
  s.pass_start = Impl::Clock::now();
  return true;
}

bool Learner::run_valid_step(const std::function<StepOutput()>& step_fn) {
  Impl& s = *impl_;
  if (s.stop_requested()) {  // validation is cheap to redo: save as "training done"
    s.interrupted = true;
    return false;
  }
  auto t0 = Impl::Clock::now();
  NoGradGuard no_grad;
  StepOutput out = step_fn();
  const double loss = s.read_loss(out, "validation");
  StepContext ctx{.samples = batch_size_of(out),
                  .lr = s.current_lr(),
                  .seconds = seconds_since(t0),
                  .loss = loss};
  for (auto& m : s.valid_metrics) m->update(out, ctx);
  ++s.valid_step;
  s.report(Split::valid, s.valid_step, s.valid_steps, s.valid_metrics, ctx);
  return true;
}

bool Learner::end_epoch() {
  Impl& s = *impl_;
  s.model.train();
  if (s.interrupted) {  // during validation: resume re-runs it
    s.checkpoint = s.save_checkpoint(s.epochs_done, s.train_steps, s.train_seconds);
    s.renderer->on_message(s.checkpoint.empty() ? "interrupted during validation (not saved)"
                                                : "interrupted: saved " + s.checkpoint);
    return false;
  }
  EpochRecord rec{.epoch = s.epoch,
                  .seconds = seconds_since(s.epoch_start),
                  .train = s.train_values,
                  .valid = s.valid_steps > 0 ? s.epoch_values(s.valid_metrics) : MetricValues{}};
  s.history.push_back(rec);
  s.epochs_done = s.epoch;
  if (s.scheduler && s.options.schedule_every == ScheduleEvery::epoch) s.scheduler->step();
  std::string note;
  if (s.options.early_stopping) {
    const EarlyStopping& es = *s.options.early_stopping;
    double v = s.metric_value(es.metric, rec);
    bool higher = s.higher_is_better(es.metric);
    bool better = !s.has_best || (higher ? v > s.best + es.min_delta : v < s.best - es.min_delta);
    if (better) {
      s.best = v;
      s.has_best = true;
      s.bad_epochs = 0;
    } else if (++s.bad_epochs >= es.patience) {
      s.stopped_early = true;
      note = "early stopping: " + es.metric + " has not improved for " +
             std::to_string(es.patience) + " epochs";
    }
  }
  if (!s.options.save_best.empty()) s.save_best(rec);
  // Before the checkpoint: a crash between the two repeats the epoch's scalars, which the resumed
  // fit drops, rather than losing them.
  if (s.events)
    for (Split sp : {Split::train, Split::valid})
      for (const auto& [name, v] : sp == Split::train ? rec.train : rec.valid)
        s.events->add_scalar(std::string(split_name(sp)) + "/" + name, v, rec.epoch);
  std::string saved = s.save_checkpoint(s.epochs_done, 0, 0);
  if (!saved.empty()) s.checkpoint = saved;
  if (!s.options.log_path.empty() && s.writer()) write_metric_log(s.options.log_path, s.history);
  s.renderer->on_epoch_end(rec);
  if (!note.empty()) s.renderer->on_message(note);
  return !s.stopped_early && s.epochs_done < s.options.epochs;
}

}  // namespace ember::train
