#pragma once
// The remote protocol (private): what a client and an ember server say to each other over one
// WebSocket, in binary frames. A frame is a sequence of messages; a message is a type byte, a
// 32-bit payload length and the payload, little-endian throughout. The client names every
// tensor storage by a 64-bit handle it picks itself, so a call needs no reply and a stream of
// ops is pipelined; only downloads, syncs and calls whose output shapes depend on the data wait
// for the server. docs/remote.md describes the messages.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/ops/registry.h"

namespace ember::remote {

/// Bumped whenever a message changes; the server refuses another version in Hello.
inline constexpr uint16_t kProtocolVersion = 2;
/// Uploads and downloads travel in chunks of at most this many bytes (one WebSocket message
/// each).
inline constexpr size_t kChunkBytes = size_t(4) << 20;
/// The most inputs or outputs one call may name.
inline constexpr size_t kMaxCallTensors = 256;

/// A message that does not decode (truncated, an unknown type, an out-of-range field): the
/// server closes the session that sent it.
class ProtocolError : public ValueError {
  using ValueError::ValueError;
};

enum class MsgType : uint8_t {
  Hello = 1,     // c->s: version, op count, op-table hash
  HelloOk,       // s->c: version, the serving device's name
  Upload,        // c->s: handle, storage bytes, offset, bytes (one chunk)
  Call,          // c->s: req (0 = no reply), op, attrs, inputs, output handles
  Free,          // c->s: handle
  Download,      // c->s: req, handle, offset, bytes
  Data,          // s->c: req, offset, last, bytes (one chunk)
  Sync,          // c->s: req
  SyncDone,      // s->c: req
  Error,         // s->c: req (0: an op that wanted no reply), error kind, message
  Outputs,       // s->c: req, the output metas of a call that asked for them
};
inline constexpr uint8_t kMaxMsgType = uint8_t(MsgType::Outputs);

/// ember's exception classes, as an Error message carries them.
enum class ErrorKind : uint8_t { Error, Shape, DType, Device, Index, Value, NotImplemented, OutOfMemory };
ErrorKind error_kind_of(const std::exception& e);
/// Throws the exception class of `k` with message `msg`.
[[noreturn]] void throw_error(ErrorKind k, const std::string& msg);

/// One input of a call: a view of a storage the client named, a graph constant (a Scalar), or
/// an undefined tensor.
struct TensorRef {
  enum Kind : uint8_t { Undefined = 0, View = 1, Constant = 2 } kind = Undefined;
  uint64_t handle = 0;
  DType dtype = DType::F32;
  Shape shape, strides;
  int64_t offset = 0;
  Scalar constant;
  bool wrapped = false;
  bool dense = false;  // decoded: the view had contiguous strides from offset 0
};

/// One decoded message; which fields are set depends on `type`.
struct Message {
  MsgType type = MsgType::Hello;
  uint64_t req = 0, handle = 0, nbytes = 0, offset = 0, hash = 0;
  uint16_t version = 0, op_count = 0;
  bool last = false;
  std::span<const uint8_t> bytes;  // Upload, Data: points into the frame
  std::string text;                // HelloOk: device; Error: message
  ErrorKind error = ErrorKind::Error;
  // Call
  OpId op{};
  Attrs attrs;
  bool attrs_on_device = false;  // attrs.device was the call's (remote) device
  std::vector<TensorRef> inputs;
  std::vector<uint64_t> outs;  // output handles; with a req, outs[0] is the first of a range
  // Outputs
  std::vector<TensorMeta> metas;
  /// Back to an empty message, keeping the lists' capacity (one Message decodes a frame).
  void reset();
};

/// Appends messages to a frame.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& buf) : buf_(buf) {}
  void hello();
  void hello_ok(const std::string& device);
  void upload(uint64_t handle, uint64_t storage_bytes, uint64_t offset, const void* p, size_t n);
  void call(uint64_t req, OpId op, const Attrs& a, bool attrs_on_device,
            std::span<const TensorRef> inputs, std::span<const uint64_t> outs);
  /// A Call written straight into the frame: call_begin, one input_* per input, call_end with
  /// call_begin's result.
  size_t call_begin(uint64_t req, OpId op, const Attrs& a, bool attrs_on_device, size_t n_inputs);
  void input_undefined();
  void input_constant(DType dt, const Scalar& v, bool wrapped);
  void input_view(uint64_t handle, DType dt, std::span<const int64_t> shape,
                  std::span<const int64_t> strides, int64_t offset);
  void call_end(size_t at, std::span<const uint64_t> outs);
  /// An Upload or Data message but for its `n` bytes, which end the message: the caller sends
  /// them after the frame (one WebSocket message of two buffers, no copy).
  void upload_head(uint64_t handle, uint64_t storage_bytes, uint64_t offset, size_t n);
  void data_head(uint64_t req, uint64_t offset, size_t n, bool last);
  void free(uint64_t handle);
  void download(uint64_t req, uint64_t handle, uint64_t offset, uint64_t n);
  void data(uint64_t req, uint64_t offset, const void* p, size_t n, bool last);
  void sync(uint64_t req);
  void sync_done(uint64_t req);
  void error(uint64_t req, ErrorKind k, const std::string& msg);
  void outputs(uint64_t req, std::span<const TensorMeta> metas);

 private:
  size_t begin(MsgType t);
  void end(size_t at);
  std::vector<uint8_t>& buf_;
};

/// Reads the messages of one frame in order; throws ProtocolError on malformed input.
class Decoder {
 public:
  explicit Decoder(std::span<const uint8_t> frame) : frame_(frame) {}
  /// The next message into `m`; false at the end of the frame.
  bool next(Message& m);

 private:
  std::span<const uint8_t> frame_;
  size_t pos_ = 0;
};

/// A hash of the op registry (names in order): client and server must agree on op ids.
uint64_t op_table_hash();

}  // namespace ember::remote
