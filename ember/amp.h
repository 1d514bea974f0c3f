#pragma once
// Mixed precision as a device policy (PyTorch's autocast and GradScaler, as a layer):
//
//   Device dev = Device::cuda(0).autodiff().mixed_precision(kBF16);
//   net.to(dev);   // parameters stay float32: the master weights
//   Tensor loss = nn::functional::cross_entropy(net(x.to(dev)), y.to(dev));
//   opt.step(loss.backward());   // float32 gradients for float32 parameters
//
// On such a device each op of the autocast list (matmul, linear, bmm, conv, attention) casts its
// floating inputs to the compute dtype and runs there (cuBLASLt and cuDNN accumulate in f32; the
// host backends compute f16/bf16 through f32); the numerically sensitive ops (softmax,
// log_softmax, norms, losses, sum/mean/prod and other reductions, exp/log/pow) cast theirs to
// f32; every other op runs in its inputs' dtypes (binary ops promote, as always). The casts are
// ops the autodiff layer records, so gradients flow back to the f32 parameters in f32. The
// backward pass itself runs without casting (in the dtypes the forward pass chose).
//
// f16's narrow range needs dynamic loss scaling: GradScaler (below). The Learner uses one by
// itself when the model's parameters sit on an f16 device.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ember/autodiff.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember::optim {
class Optimizer;
struct State;
}  // namespace ember::optim

namespace ember::amp {

/// How an op runs on a mixed-precision device.
enum class OpPolicy : uint8_t {
  lower,  // floating inputs cast to the compute dtype (bf16/f16)
  f32,    // floating inputs cast to float32
  keep,   // run in the inputs' dtypes
};
/// The policy of the op named `op` ("linear", "softmax", ...); throws ValueError for a name that
/// is not an op.
OpPolicy op_policy(std::string_view op);
/// The compute dtype of `d`'s mixed precision (none when `d` has none).
std::optional<DType> compute_dtype(Device d);

/// While alive, mixed-precision devices cast nothing on this thread (torch.autocast(enabled=
/// False)): a region that needs float32 matmuls, say. backward() runs under one.
class AutocastOff {
 public:
  AutocastOff();
  ~AutocastOff();
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;

 private:
  bool prev_;
};
/// Whether mixed-precision devices cast on this thread (false inside an AutocastOff).
bool autocast_enabled();

struct GradScalerOptions {
  /// The first scale (2^16, as torch).
  double init_scale = 65536.0;
  /// The scale is multiplied by this after `growth_interval` steps in a row without inf/nan...
  double growth_factor = 2.0;
  /// ...and by this after a step that had one (the step is skipped).
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  /// A disabled scaler scales by 1 and always steps (code can keep one call sequence).
  bool enabled = true;
};

/// Dynamic loss scaling for f16 training (torch.amp.GradScaler):
///
///   Tensor loss = ...;
///   Gradients g = scaler.scale(loss).backward();
///   scaler.unscale(g, opt.all_params());   // optional: before clipping
///   scaler.step(opt, g);                  // skipped when a gradient is inf or nan
///   scaler.update();
///
/// or, PyTorch's way, on the gradients backward() left in the parameters' grad() slots:
///
///   optimizer.zero_grad();
///   scaler.scale(loss).backward();
///   scaler.unscale_(optimizer);           // optional: before clip_grad_norm_
///   nn::utils::clip_grad_norm_(params, 1.0);
///   scaler.step(optimizer);               // skipped when a gradient is inf or nan
///   scaler.update();
///
/// The finiteness check is one device-side reduction over all gradients, read once per step:
/// step() is a host sync (one scalar). The scale itself lives on the host.
class GradScaler {
 public:
  /// Throws ValueError for a scale that is not positive and finite, a growth factor <= 1, a
  /// backoff factor outside (0, 1) or a growth interval < 1.
  explicit GradScaler(GradScalerOptions options = {});

  /// loss times the current scale (loss itself when disabled).
  Tensor scale(const Tensor& loss) const;
  /// Divides the gradients of `params` held in `grads` by the scale (in place: the held
  /// gradients are replaced) and queues the check for inf/nan among them, without a host sync.
  /// Once per step; step() does it when it was not done.
  void unscale(Gradients& grads, const std::vector<Tensor>& params);
  /// Unscales (unless done), reads the check (a host sync), and runs opt.step(grads) when every
  /// gradient is finite; returns whether it stepped.
  bool step(optim::Optimizer& opt, Gradients& grads);
  /// unscale() on the grad() slots of opt's parameters (PyTorch's unscale_(optimizer)): each
  /// defined slot is replaced by slot / scale. Once per step.
  void unscale_(optim::Optimizer& opt);
  /// step() on the grad() slots: unscales them (unless unscale_ ran), reads the check, and runs
  /// opt.step() when every gradient is finite (the slots are left for zero_grad, as PyTorch
  /// does); returns whether it stepped.
  bool step(optim::Optimizer& opt);
  /// After step(): backs the scale off when the step was skipped, else counts the step and
  /// grows the scale every growth_interval finite steps. Throws ValueError without a step().
  void update();

  double get_scale() const { return scale_; }
  /// Finite steps since the scale last changed.
  int64_t growth_tracker() const { return tracker_; }
  /// Steps skipped for inf/nan since construction (or the last load_state_dict).
  int64_t skipped_steps() const { return skipped_; }
  bool enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  /// "scale" and "growth_tracker" (what a checkpoint needs to resume exactly).
  optim::State state_dict() const;
  /// Restores a state_dict(); throws ValueError for a scale that is not positive and finite or a
  /// growth tracker that is not a whole number in [0, growth_interval) (nothing changes then).
  void load_state_dict(const optim::State& s);

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t tracker_ = 0;
  int64_t skipped_ = 0;
  Tensor found_;            // device scalar: the sum over gradients of g * 0 (NaN iff inf/nan)
  bool unscaled_ = false;   // unscale() ran for the current step
  std::optional<bool> stepped_;  // step()'s result, until update()
  // Reads the finiteness check of the unscaled gradients (a host sync) and records the result.
  bool read_finite();
  // Divides each gradient by the scale; get/set read and replace one parameter's gradient.
  template <class Get, class Set>
  void unscale_with(const std::vector<Tensor>& params, const char* op, Get get, Set set);
};

}  // namespace ember::amp
