#pragma once
// Captured steps: ember::capture(fn, inputs) records the device work of `fn` once (on CUDA, as a
// CUDA graph) and CapturedStep::replay() runs it again without ember's host work (dispatch,
// autodiff, planning). A whole training step (forward, backward, optimizer step) or an inference
// call is one replay: one launch. No CUDA header here; builds without CUDA have it too.
//
//   auto step = ember::capture([&] { ...; return TensorList{loss}; }, {x, y});
//   step.input(0).copy_(batch);   // static inputs: copy new data in
//   step.replay();                // static outputs (step.output(0)) are overwritten
//
// The rules that make a replay equal the eager step are in docs/backends.md ("Graphs").
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember {

/// A step that cannot be captured or replayed: a host sync inside the capture (item(),
/// to_vector(), printing, a data-dependent shape, an op without a device kernel), a tensor the
/// captured work reads that is gone, a replay on changed inputs. The message names the op.
class CaptureError : public Error {
  using Error::Error;
};

struct CaptureOptions {
  /// The device whose work is captured; unset: the device of the first static input, else the
  /// default device.
  std::optional<Device> device;
};

/// What ember::capture returns: the recorded step, its static inputs and static outputs.
class CapturedStep {
 public:
  /// An empty step (replay() throws CaptureError).
  CapturedStep();
  /// Runs the recorded work once more (on CUDA: one graph launch, asynchronous like any op).
  /// Throws CaptureError when a tensor the step reads is gone or a static input was replaced.
  void replay();
  /// The static inputs given to capture(): copy new data into them (copy_) between replays.
  const TensorList& inputs() const;
  Tensor input(size_t i) const;
  /// What fn returned: tensors each replay overwrites (their values are the last replay's).
  /// On a device without graphs (see graph()) they are filled by the first replay.
  const TensorList& outputs() const;
  Tensor output(size_t i) const;
  /// True when replays launch a device graph; false when each replay runs fn eagerly (devices
  /// without graphs: flex, cpu).
  bool graph() const;
  /// Device memory the step holds for its replays (its private pool), in bytes; 0 when eager.
  int64_t pool_bytes() const;
  /// Replays run so far.
  int64_t replays() const;

  struct Impl;

 private:
  explicit CapturedStep(std::shared_ptr<Impl> impl);
  friend CapturedStep capture(std::function<TensorList()>, TensorList, const CaptureOptions&);
  std::shared_ptr<Impl> impl_;
};

/// Records `fn` (which returns the step's outputs) for replays. On CUDA the device work of fn is
/// captured into a graph: fn runs once on the host, no kernel runs during capture, and the first
/// replay performs the first step. Elsewhere fn runs eagerly on each replay. Run the step
/// eagerly at least once before capturing (kernels compile, optimizer state is created). The
/// step keeps `fn` (and so the tensors it holds by value) as long as it lives.
CapturedStep capture(std::function<TensorList()> fn, TensorList inputs = {},
                     const CaptureOptions& options = {});

}  // namespace ember
