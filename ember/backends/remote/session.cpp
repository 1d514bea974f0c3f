// A client's session on an ember server (session.h). Calls are dispatched on the serving device
// like any local op: inference runs again here, so a call the client's inference let through but
// this server's refuses fails with the same typed error. An op's error goes back in an Error
// message (with the request id of a call that waits for it, else 0, which the client reports at
// its next sync); its outputs stay unbound, so later calls that read them fail too.
#include "ember/backends/remote/session.h"

#include <chrono>
#include <cstring>
#include <new>

#include "ember/backends/backend.h"
#include "ember/backends/flex/allocator.h"
#include "ember/ops/arity.h"
#include "ember/ops/layout.h"

namespace ember::remote {
namespace {

constexpr size_t kFlushBytes = size_t(4) << 20;

[[noreturn]] void fail(const std::string& msg) { throw ValueError("[remote] " + msg); }

// A bool view's bytes come from the client (an upload, or another dtype's view of the same
// storage): each must be 0 or 1 before a kernel reads it as a bool. Read as bytes (the same
// geometry, dtype u8), the largest says.
void check_bool_bytes(const Tensor& t) {
  if (t.numel() == 0) return;
  auto bytes = std::make_shared<TensorImpl>(*t.impl());
  bytes->dtype = DType::U8;
  const int64_t top = Tensor(std::move(bytes)).max().item<int64_t>();
  if (top > 1) fail("a bool view holds the byte " + std::to_string(top) + ", not 0 or 1");
}

}  // namespace

void Stats::observe_ns(uint64_t ns) {
  int k = 0;
  for (double le = 1e4; k < kBuckets && double(ns) > le; le *= 4) ++k;
  latency[k].fetch_add(1, std::memory_order_relaxed);
  latency_sum_ns.fetch_add(ns, std::memory_order_relaxed);
}
double Stats::bucket_le_s(int k) {
  double le = 1e-5;
  for (int i = 0; i < k; ++i) le *= 4;
  return le;
}

Session::Session(Device device, const Limits& limits, Stats* stats)
    : device_(device),
      limits_(limits),
      stats_(stats),
      host_(backend_for(device.backend()) && backend_for(device.backend())->is_host()),
      meter_(flex::StorageMeter::create(limits.max_session_bytes, limits.max_tensor_bytes)) {
  handles_.reserve(256);
}

Session::~Session() {
  {
    // The work this client queued runs now, on its own thread and with its own error slots: a
    // kernel error it raises has no client left to go to, and must not reach another one's.
    detail::DeferredErrors::Scope errors(errors_);
    flex::StorageMeter::Scope meter(host_ ? meter_ : nullptr);
    try {
      ember::flush(device_);
    } catch (...) {
    }
    in_.clear();
    handles_.clear();
    try {
      detail::raise_deferred_errors(device_);
    } catch (...) {
    }
  }
  meter_->release();
  if (stats_) stats_->bytes_held.fetch_sub(int64_t(held_));
}

size_t Session::bytes_metered() const { return host_ ? meter_->bytes() : 0; }

void Session::flush(Send send, void* ctx) {
  if (!out_.empty()) send(ctx, out_, {});
  out_.clear();
}

void Session::account(size_t add, size_t remove) {
  if (add > remove && held_ + add - remove > limits_.max_session_bytes)
    throw OutOfMemory("[remote] this session would hold " + std::to_string(held_ + add - remove) +
                      " bytes, over the server's limit of " +
                      std::to_string(limits_.max_session_bytes) + " bytes per client");
  held_ = held_ + add - remove;
  if (stats_) stats_->bytes_held.fetch_add(int64_t(add) - int64_t(remove));
}

void Session::release(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return;  // an output of a failed call, or never used
  account(0, it->second.bytes);
  handles_.erase(it);
}

void Session::on_frame(std::span<const uint8_t> frame, Send send, void* ctx) {
  if (stats_) {
    stats_->frames_in.fetch_add(1, std::memory_order_relaxed);
    stats_->bytes_in.fetch_add(frame.size(), std::memory_order_relaxed);
  }
  detail::DeferredErrors::Scope errors(errors_);
  flex::StorageMeter::Scope meter(host_ ? meter_ : nullptr);
  out_.clear();
  Encoder out(out_);
  Decoder dec(frame);
  Message& m = msg_;
  if (stats_) clock_ = std::chrono::steady_clock::now();
  while (dec.next(m)) {
    if (!greeted_ && m.type != MsgType::Hello)
      throw ProtocolError("[remote] the first message must be Hello");
    switch (m.type) {
      case MsgType::Hello: hello(m, out); break;
      case MsgType::Upload:
        try {
          upload(m);
        } catch (const std::exception& e) {
          out.error(0, error_kind_of(e), e.what());
        }
        break;
      case MsgType::Call: call(m, out); break;
      case MsgType::Free: release(m.handle); break;
      case MsgType::Download: download(m, send, ctx); break;
      case MsgType::Sync:
        try {
          synchronize(device_);
          out.sync_done(m.req);
        } catch (const std::exception& e) {
          out.error(m.req, error_kind_of(e), e.what());
        }
        break;
      default:
        throw ProtocolError("[remote] message type " + std::to_string(int(m.type)) +
                            " is not one a client sends");
    }
    if (out_.size() > kFlushBytes) flush(send, ctx);
  }
  flush(send, ctx);
}

void Session::hello(const Message& m, Encoder& out) {
  if (greeted_) throw ProtocolError("[remote] a second Hello");
  if (m.version != kProtocolVersion)
    throw ProtocolError("[remote] the client speaks protocol version " + std::to_string(m.version) +
                        ", this server " + std::to_string(kProtocolVersion));
  if (m.op_count != kNumOps || m.hash != op_table_hash())
    throw ProtocolError("[remote] the client's op registry (" + std::to_string(m.op_count) +
                        " ops) differs from this server's (" + std::to_string(kNumOps) +
                        " ops): build both from the same ember");
  greeted_ = true;
  out.hello_ok(device_.str());
}

void Session::upload(const Message& m) {
  auto it = handles_.find(m.handle);
  if (it == handles_.end()) {
    if (m.nbytes > limits_.max_tensor_bytes)
      throw OutOfMemory("[remote] a tensor of " + std::to_string(m.nbytes) +
                        " bytes is over the server's limit of " +
                        std::to_string(limits_.max_tensor_bytes));
    account(m.nbytes, 0);
    Entry e{backend_for(device_.backend())->allocate(size_t(m.nbytes), device_), size_t(m.nbytes), {}};
    it = handles_.emplace(m.handle, std::move(e)).first;
  }
  Storage& s = *it->second.storage;
  if (m.offset > s.nbytes || m.bytes.size() > s.nbytes - m.offset)
    fail("an upload of " + std::to_string(m.bytes.size()) + " bytes at offset " +
         std::to_string(m.offset) + " into a storage of " + std::to_string(s.nbytes));
  if (m.bytes.empty()) return;
  detail::ready(s);
  backend_for(device_.backend())->copy_from_host(s, size_t(m.offset), m.bytes.data(), m.bytes.size());
}

Tensor Session::input(const TensorRef& r) {
  switch (r.kind) {
    case TensorRef::Undefined: return Tensor();
    case TensorRef::Constant: {
      // A chain repeats its scalars: the last few constants serve again.
      for (const Tensor& k : constants_) {
        const TensorImpl* c = k.defined() ? k.impl() : nullptr;
        if (c && c->dtype == r.dtype && c->wrapped_number == r.wrapped && c->constant == r.constant)
          return k;
      }
      Tensor k = detail::constant_tensor(r.constant, r.dtype, device_, r.wrapped);
      constants_[next_constant_++ % constants_.size()] = k;
      return k;
    }
    case TensorRef::View: break;
  }
  auto it = handles_.find(r.handle);
  if (it == handles_.end())
    fail("tensor handle " + std::to_string(r.handle) +
         " is unknown to this session (its op failed, or it was freed)");
  Entry& e = it->second;
  // The same dense view as the last call's (a chain reading the previous result): that tensor,
  // checked when it was made, serves again (a bool one's bytes are checked again: an upload may
  // have changed them).
  if (r.dense && e.view.defined() && e.view.dtype() == r.dtype && e.view.shape() == r.shape) {
    if (r.dtype == DType::Bool && host_) check_bool_bytes(e.view);
    return e.view;
  }
  check_shape(r.shape, "remote");
  // The view must stay inside its storage: a client's strides are not trusted.
  const int64_t item = int64_t(itemsize(r.dtype));
  int64_t lo = r.offset, hi = r.offset;
  bool empty = false;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    if (r.shape[d] == 0) empty = true;
    int64_t reach;
    if (__builtin_mul_overflow(r.shape[d] > 0 ? r.shape[d] - 1 : 0, r.strides[d], &reach) ||
        __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
      fail("a view whose strides overflow");
  }
  const Storage& s = *e.storage;
  int64_t end;
  if (!empty && (lo < 0 || __builtin_mul_overflow(hi + 1, item, &end) || end > int64_t(s.nbytes)))
    fail("a view of shape " + shape_str(r.shape) + " that reaches past its storage of " +
         std::to_string(s.nbytes) + " bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = r.shape;
  impl->strides = r.strides;
  impl->offset = r.offset;
  impl->dtype = r.dtype;
  impl->device = device_;
  impl->storage = e.storage;
  impl->refresh();
  Tensor t(std::move(impl));
  if (r.dtype == DType::Bool && host_) check_bool_bytes(t);
  if (r.dense) e.view = t;
  return t;
}

void Session::bind(uint64_t handle, Tensor t) {
  if (!t.defined()) return;
  // The client sees every output as a fresh contiguous storage from offset 0.
  if (detail::is_constant(t) || !t.is_contiguous() || t.offset() != 0) t = clone(t);
  const size_t n = t.impl()->storage->nbytes;
  if (n > limits_.max_tensor_bytes)
    throw OutOfMemory("[remote] a result of " + std::to_string(n) +
                      " bytes is over the server's limit of " +
                      std::to_string(limits_.max_tensor_bytes) + " bytes per tensor");
  release(handle);
  account(n, 0);
  std::shared_ptr<Storage> storage = t.impl()->storage;
  handles_.try_emplace(handle, Entry{std::move(storage), n, std::move(t)});
}

// The results' sizes, from the op's inference, against the limits before anything is allocated
// (a client could ask for a huge `full`).
void Session::check_outputs(OpId op, const Attrs& a, std::span<const Tensor> in) const {
  const OpDef& def = op_def(op);
  if (!def.infer) return;  // dispatch names the missing rule
  detail::check_arity(op, in.size());  // as dispatch does, before the rule indexes the inputs
  MetaList meta;
  def.infer(op, a, in, meta);
  size_t total = 0;
  for (int i = 0; i < meta.n; ++i) {
    check_shape(meta.m[i].shape, def.name, /*unknown_ok=*/true);
    int64_t n = 1;
    for (int64_t d : meta.m[i].shape) n *= d < 0 ? 1 : d;  // check_shape bounds the product
    const size_t bytes = size_t(n) * itemsize(meta.m[i].dtype);
    if (bytes > limits_.max_tensor_bytes)
      throw OutOfMemory(std::string("[") + def.name + "] a result of " + std::to_string(bytes) +
                        " bytes is over the server's limit of " +
                        std::to_string(limits_.max_tensor_bytes) + " bytes per tensor");
    total += bytes;
  }
  if (held_ + total > limits_.max_session_bytes)
    throw OutOfMemory(std::string("[") + def.name + "] this session would hold " +
                      std::to_string(held_ + total) + " bytes, over the server's limit of " +
                      std::to_string(limits_.max_session_bytes) + " bytes per client");
}

void Session::call(Message& m, Encoder& out) {
  try {
    if (op_def(m.op).category == OpCategory::User)
      throw NotImplementedError(std::string("[") + op_name(m.op) +
                                "] user ops run on a remote device through the host fallback");
    struct Clear {  // the inputs go when the call ends, however it ends
      std::vector<Tensor>& v;
      ~Clear() { v.clear(); }
    } clear{in_};
    for (const TensorRef& r : m.inputs) in_.push_back(input(r));
    const std::span<const Tensor> in(in_.data(), in_.size());
    Attrs& a = m.attrs;
    a.device = m.attrs_on_device ? device_ : Device();
    // On a host device the meter refuses an oversized storage before its memory is taken
    // (results and temporaries alike); elsewhere the results are checked from inference first.
    if (!host_) check_outputs(m.op, a, in);
    TensorList outs = dispatch(m.op, a, in);
    if (m.req) {  // the client waits for the output metas: handles outs[0], outs[0] + 1, ...
      if (m.outs.size() != 1 || outs.size() > kMaxCallTensors)
        fail(std::string("a waiting call of ") + op_name(m.op) + " with " +
             std::to_string(outs.size()) + " outputs");
      std::vector<TensorMeta> metas;
      for (size_t i = 0; i < outs.size(); ++i) {
        bind(m.outs[0] + i, outs[i]);
        metas.push_back({outs[i].defined() ? outs[i].shape() : Shape{},
                         outs[i].defined() ? outs[i].dtype() : DType::F32});
      }
      out.outputs(m.req, metas);
    } else if (!m.outs.empty()) {  // no outputs named: the client keeps its inputs' aliases
      if (outs.size() != m.outs.size())
        fail(std::string(op_name(m.op)) + " made " + std::to_string(outs.size()) +
             " outputs, the client expects " + std::to_string(m.outs.size()));
      for (size_t i = 0; i < outs.size(); ++i) bind(m.outs[i], outs[i]);
    }
  } catch (const std::bad_alloc&) {
    if (stats_) stats_->op_errors.fetch_add(1);
    out.error(m.req, ErrorKind::OutOfMemory,
              std::string("[") + op_name(m.op) + "] out of memory on the server");
  } catch (const std::exception& e) {
    if (stats_) stats_->op_errors.fetch_add(1);
    out.error(m.req, error_kind_of(e), e.what());
  }
  if (stats_) {
    // One clock read a call: an op's latency runs from the end of the message before it (its
    // decoding is counted in).
    const auto now = std::chrono::steady_clock::now();
    stats_->ops.fetch_add(1, std::memory_order_relaxed);
    stats_->observe_ns(
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(now - clock_).count()));
    clock_ = now;
  }
}

void Session::download(const Message& m, Send send, void* ctx) {
  Encoder out(out_);
  auto it = handles_.find(m.handle);
  if (it == handles_.end()) {
    out.error(m.req, ErrorKind::Value,
              "[remote] read of tensor handle " + std::to_string(m.handle) +
                  ", unknown to this session (its op failed, or it was freed)");
    return;
  }
  Storage& s = *it->second.storage;
  if (m.offset > s.nbytes || m.nbytes > s.nbytes - m.offset) {
    out.error(m.req, ErrorKind::Value, "[remote] a read past the end of a storage");
    return;
  }
  BackendImpl* b = backend_for(device_.backend());
  std::vector<uint8_t> chunk;
  uint64_t done = 0;
  do {
    const size_t n = size_t(std::min<uint64_t>(kChunkBytes, m.nbytes - done));
    std::span<const uint8_t> bytes;
    try {
      if (done == 0) detail::ready(s);
      if (host_) {  // the storage's bytes go out where they lie
        bytes = {static_cast<const uint8_t*>(s.data) + m.offset + done, n};
      } else {
        chunk.resize(n);
        if (n) b->copy_to_host(chunk.data(), s, size_t(m.offset + done), n);
        bytes = chunk;
      }
    } catch (const std::exception& e) {
      out.error(m.req, error_kind_of(e), e.what());
      return;
    }
    out.data_head(m.req, done, n, done + n == m.nbytes);
    send(ctx, out_, bytes);  // throws when the connection is gone
    out_.clear();
    done += n;
  } while (done < m.nbytes);
}

}  // namespace ember::remote
