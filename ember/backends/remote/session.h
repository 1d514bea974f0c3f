#pragma once
// One client's session on an ember server (private; transport-independent): the client's
// storages by handle, its memory, and the messages it sends, run in order on the serving device.
// A session sees only the handles its own client named, so clients cannot reach each other's
// tensors.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "ember/backends/deferred_errors.h"
#include "ember/backends/remote/protocol.h"
#include "ember/tensor_impl.h"

namespace ember::flex {
class StorageMeter;
}

namespace ember::remote {

/// What a server allows one client.
struct Limits {
  size_t max_message_bytes = size_t(256) << 20;  // one WebSocket message
  size_t max_tensor_bytes = size_t(1) << 30;     // one storage
  // All of one client's storages: its tensors and, on a host device (flex, cpu), every
  // temporary its ops allocate while they run.
  size_t max_session_bytes = size_t(8) << 30;
};

/// Counters the server's /metrics endpoint prints (shared by every session).
struct Stats {
  std::atomic<uint64_t> ops{0}, op_errors{0}, bytes_in{0}, bytes_out{0}, frames_in{0};
  std::atomic<uint64_t> sessions_opened{0}, sessions_refused{0}, protocol_errors{0};
  std::atomic<int64_t> sessions_active{0}, bytes_held{0};
  static constexpr int kBuckets = 12;  // op latency: 10us * 4^k, k < kBuckets, then +Inf
  std::atomic<uint64_t> latency[kBuckets + 1] = {};
  std::atomic<uint64_t> latency_sum_ns{0};
  void observe_ns(uint64_t ns);
  static double bucket_le_s(int k);
};

class Session {
 public:
  /// Receives reply frames; a session hands one over whenever its buffer passes a few MiB. A
  /// frame is `frame` then `tail` (bytes of a storage sent where they lie; often empty), as one
  /// WebSocket message; both are valid during the call only.
  using Send = void (*)(void* ctx, std::vector<uint8_t>& frame, std::span<const uint8_t> tail);
  Session(Device device, const Limits& limits, Stats* stats);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// Runs the messages of one frame in order, sending replies through `send`; throws
  /// ProtocolError on a malformed message (the transport then closes the session).
  void on_frame(std::span<const uint8_t> frame, Send send, void* ctx);
  /// Bytes of storage the session's handles hold.
  size_t bytes_held() const { return held_; }
  /// Bytes of host storage the session's work holds now (tensors and temporaries; 0 on a
  /// device that is not the host's).
  size_t bytes_metered() const;
  size_t handle_count() const { return handles_.size(); }

 private:
  struct Entry {
    std::shared_ptr<Storage> storage;
    size_t bytes = 0;
    Tensor view;  // the last dense view of the storage a call named (reused while it matches)
  };
  void hello(const Message& m, Encoder& out);
  void upload(const Message& m);
  void call(Message& m, Encoder& out);
  void download(const Message& m, Send send, void* ctx);
  Tensor input(const TensorRef& r);
  void check_outputs(OpId op, const Attrs& a, std::span<const Tensor> in) const;
  void bind(uint64_t handle, Tensor t);
  void account(size_t add, size_t remove);
  void release(uint64_t handle);
  void flush(Send send, void* ctx);

  Device device_;
  Limits limits_;
  Stats* stats_;
  bool host_;  // the device is the host's: its allocations are metered (meter_)
  bool greeted_ = false;
  size_t held_ = 0;
  std::unordered_map<uint64_t, Entry> handles_;
  flex::StorageMeter* meter_;
  // The errors this session's queued kernels report (a lazy device): its own, never another
  // client's.
  ember::detail::DeferredErrors errors_;
  Message msg_;                // decoded into, message by message
  std::vector<uint8_t> out_;   // replies not yet sent
  std::vector<Tensor> in_;     // the inputs of the call that runs
  std::array<Tensor, 4> constants_;  // the last scalars calls named, as graph constants
  size_t next_constant_ = 0;
  std::chrono::steady_clock::time_point clock_;  // the end of the last call (op latency)
};

}  // namespace ember::remote
