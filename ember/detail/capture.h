#pragma once
// The capture in progress (private; ember/graph.h is the public side). A backend that records
// graphs (cuda) opens one while ember::capture runs fn, on the calling thread; the code above the
// backend asks for it where a step's work must be written differently to replay correctly:
//   - the optimizers take their per-step scalars (bias corrections, the lr a scheduler sets) from
//     replay_scalar tensors and advance their step counts in on_replay hooks;
//   - random ops note their Philox draws, and the fusion layer says which kernel parameters hold
//     them, so each replay draws the offsets an eager step would;
//   - the dispatcher notes the tensors the step reads, so a replay after one is gone fails;
//   - host syncs (forbid_in_capture) throw CaptureError naming the op.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::detail {

class Capture {
 public:
  virtual ~Capture() = default;
  /// The place (backend and index) whose work is captured, and the capturing thread.
  Device place;
  std::thread::id thread;

  /// Host work each replay runs before its launch, in the order registered (step counts).
  void on_replay(std::function<void()> fn) { hooks.push_back(std::move(fn)); }
  /// A 0-d f32 tensor (tagged `d`, layers included) in device memory that the captured work
  /// reads; each replay writes value() into it before its launch (after the on_replay hooks).
  virtual Tensor replay_scalar(Device d, std::function<double()> value) = 0;
  /// The dispatcher: tensors an op of the step reads or writes.
  virtual void note_inputs(std::span<const Tensor> inputs) = 0;
  /// A random op drew the Philox counter `offset` of the device's generator.
  void note_draw(uint64_t offset) { draws.push_back(offset); }
  /// The fusion layer, before a launch: scalar parameter slots of the next kernel that hold a
  /// Philox counter offset drawn during the capture (slot index, offset).
  std::vector<std::pair<int, uint64_t>> next_philox_slots;

  std::vector<std::function<void()>> hooks;
  std::vector<uint64_t> draws;
};

/// The capture in progress in this process (null when none).
extern std::atomic<Capture*> g_capture;
inline Capture* active_capture() { return g_capture.load(std::memory_order_relaxed); }
/// The capture of `d`'s place made by the calling thread, or null.
inline Capture* capture_on(Device d) {
  Capture* c = active_capture();
  if (!c) [[likely]] return nullptr;
  return c->place.same_place(d) && c->thread == std::this_thread::get_id() ? c : nullptr;
}
/// Throws CaptureError "[op] msg".
[[noreturn]] void throw_capture(const char* op, const std::string& msg);
/// Throws CaptureError naming `op` (else the running op) when a capture of `d`'s place is in
/// progress on any thread: `what` (a host sync, a host copy) cannot be part of a graph.
void forbid_in_capture(Device d, const char* op, const char* what);

/// The Philox counter of `d`'s generator (the next offset a random op draws), and setting it:
/// a replay advances it by the draws of the captured step.
uint64_t philox_counter(Device d);
void set_philox_counter(Device d, uint64_t offset);

/// A recorded step of a backend (what capture() keeps).
class GraphExec {
 public:
  virtual ~GraphExec() = default;
  virtual void replay() = 0;
  virtual int64_t pool_bytes() const = 0;
};

}  // namespace ember::detail
