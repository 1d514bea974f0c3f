// The remote backend: a client of an ember server. Its storages are handles the client picks
// (no round trip), its kernel table sends every op as one Call message (view ops only move
// geometry here, as on every backend), and messages are batched into WebSocket frames, so a
// stream of ops costs no per-op wait. Reads, syncs and ops whose output shapes depend on the data
// block for a reply; an op's error on the server comes back typed, with the server's message,
// and is thrown at the next sync or read (ember::detail::defer_error), like a CUDA kernel's.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "ember/backends/backend.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/remote/remote_backend.h"
#include "ember/backends/remote/transport.h"
#include "ember/error.h"

namespace ember::remote {
namespace {

// A frame is sent once its messages reach this: small enough that the server starts on a chain
// of ops while the caller still records it (about a hundred calls a frame), large enough that
// a frame's cost (a wakeup of the socket's thread, a write) is spread over many calls.
// EMBER_REMOTE_BATCH_KB overrides it (tuning).
const size_t kBatchBytes = [] {
  const char* v = std::getenv("EMBER_REMOTE_BATCH_KB");
  return (v && *v ? size_t(std::atol(v)) : size_t(16)) << 10;
}();
constexpr size_t kMaxQueued = size_t(64) << 20;    // then the caller waits for the socket

struct Reply {
  bool done = false, failed = false;
  ErrorKind kind = ErrorKind::Error;
  std::string msg;
  uint8_t* dst = nullptr;
  size_t n = 0;
  std::vector<TensorMeta> metas;
};

// A remote storage's free_ctx is its handle; its place's index names the connection.
void free_block(void* ctx, const Storage& s);
uint64_t handle_in(const Storage& s) { return uint64_t(reinterpret_cast<uintptr_t>(s.free_ctx)); }
constexpr size_t kDirectBytes = size_t(256) << 10;  // uploads from this size go without a copy

class Connection {
 public:
  Connection(int index, std::string url, const Url& u, const ConnectOptions& opts)
      : index_(index), url_(std::move(url)), opts_(opts) {
    ClientCallbacks cb;
    cb.on_frame = [this](std::span<const uint8_t> f) { on_frame(f); };
    cb.on_close = [this](const std::string& why) { on_close(why); };
    transport_ = connect_transport(u, opts, std::move(cb));
    std::unique_lock lock(mu_);
    Encoder(buf_).hello();
    flush_locked(lock);
    if (!cv_.wait_for(lock, timeout(), [&] { return greeted_ || dead_; }))
      dead_ = true, why_ = "no reply to the greeting within " + std::to_string(opts_.timeout_s) + " s";
    if (!greeted_) {
      lock.unlock();
      transport_->close();
      ember::detail::throw_device("Device::remote", "'" + url_ + "': " + why_);
    }
  }

  int index() const { return index_; }
  void set_device(Device d) { device_ = d; }
  const std::string& url() const { return url_; }
  bool alive() {
    std::lock_guard lock(mu_);
    return !dead_;
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      if (!dead_) dead_ = true, why_ = "closed by the client (remote::disconnect)";
    }
    cv_.notify_all();
    transport_->close();
  }

  std::shared_ptr<Storage> new_storage(size_t nbytes, Device place) {
    return adopt(next_handle_.fetch_add(1), nbytes, place);
  }
  std::shared_ptr<Storage> adopt(uint64_t handle, size_t nbytes, Device place) {
    auto s = std::make_shared<Storage>();
    s->nbytes = nbytes;
    s->place = place.without_layers();
    s->free_fn = free_block;
    s->free_ctx = reinterpret_cast<void*>(uintptr_t(handle));
    return s;
  }
  uint64_t reserve(uint64_t n) { return next_handle_.fetch_add(n); }

  void free(uint64_t handle) {
    std::unique_lock lock(mu_);
    if (dead_) return;
    Encoder(buf_).free(handle);
    if (buf_.size() > kBatchBytes) flush_locked(lock);
  }

  void upload(uint64_t handle, uint64_t storage_bytes, size_t off, const void* src, size_t n) {
    std::unique_lock lock(mu_);
    check_alive("copy");
    const auto* p = static_cast<const uint8_t*>(src);
    if (n >= kDirectBytes) {
      // The bytes go from the caller's memory to the socket (the chunks' heads first, after
      // what is batched); the caller's memory must stay until they are written, so this waits.
      std::vector<std::pair<std::vector<uint8_t>, std::span<const uint8_t>>> parts;
      parts.emplace_back(std::move(buf_), std::span<const uint8_t>());
      buf_ = {};
      for (size_t done = 0; done < n;) {
        const size_t len = std::min(kChunkBytes, n - done);
        std::vector<uint8_t> head;
        Encoder(head).upload_head(handle, storage_bytes, off + done, len);
        parts.emplace_back(std::move(head), std::span<const uint8_t>(p + done, len));
        done += len;
      }
      if (parts.front().first.empty()) parts.erase(parts.begin());
      lock.unlock();  // the socket's thread takes the lock for replies meanwhile
      if (!transport_->send_parts(std::move(parts))) {
        lock.lock();
        if (!dead_) dead_ = true, why_ = "a write failed during an upload";
        check_alive("copy");
      }
      return;
    }
    size_t done = 0;
    do {
      const size_t len = std::min(kChunkBytes, n - done);
      Encoder(buf_).upload(handle, storage_bytes, off + done, p + done, len);
      done += len;
      if (buf_.size() > kBatchBytes) flush_locked(lock);
    } while (done < n);
  }

  /// Encodes a call straight into the batch: `inputs` are the call's, `handles` the storage
  /// handle of each view input (0 for others).
  void call(const OpCall& c, const uint64_t* handles, std::span<const uint64_t> outs) {
    std::unique_lock lock(mu_);
    check_alive(op_name(c.op));
    encode_call(0, c, handles, outs);
    if (buf_.size() > kBatchBytes) flush_locked(lock);
  }

  std::vector<TensorMeta> call_wait(const OpCall& c, const uint64_t* handles, uint64_t first) {
    Reply r;
    std::unique_lock lock(mu_);
    check_alive(op_name(c.op));
    const uint64_t req = next_req_++;
    const uint64_t outs[] = {first};
    encode_call(req, c, handles, outs);
    wait(lock, req, r, op_name(c.op));
    return std::move(r.metas);
  }

  void download(void* dst, uint64_t handle, size_t off, size_t n) {
    Reply r;
    r.dst = static_cast<uint8_t*>(dst);
    r.n = n;
    std::unique_lock lock(mu_);
    check_alive("copy");
    const uint64_t req = next_req_++;
    Encoder(buf_).download(req, handle, off, n);
    wait(lock, req, r, "copy");
  }

  void sync() {
    Reply r;
    std::unique_lock lock(mu_);
    check_alive("synchronize");
    const uint64_t req = next_req_++;
    Encoder(buf_).sync(req);
    wait(lock, req, r, "synchronize");
  }

 private:
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(int64_t(opts_.timeout_s * 1000));
  }
  void encode_call(uint64_t req, const OpCall& c, const uint64_t* handles,
                   std::span<const uint64_t> outs) {
    Encoder e(buf_);
    const size_t at = e.call_begin(req, c.op, c.attrs, c.attrs.device.backend() == Backend::Remote,
                                   c.inputs.size());
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const Tensor& t = c.inputs[i];
      if (!t.defined()) {
        e.input_undefined();
        continue;
      }
      const TensorImpl& impl = *t.impl();
      if (impl.is_constant) e.input_constant(impl.dtype, impl.constant, impl.wrapped_number);
      else e.input_view(handles[i], impl.dtype, impl.shape, impl.strides, impl.offset);
    }
    e.call_end(at, outs);
  }
  void check_alive(const char* op) {
    if (dead_) ember::detail::throw_device(op, "the connection to '" + url_ + "' is lost: " + why_);
  }
  void flush_locked(std::unique_lock<std::mutex>& lock) {
    if (buf_.empty()) return;
    transport_->send(std::move(buf_));
    buf_ = {};
    // A producer far ahead of the socket waits for it (memory stays bounded).
    while (transport_->queued_bytes() > kMaxQueued && !dead_) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      lock.lock();
    }
  }
  // Sends what is batched and waits for request `req`'s reply; the caller then reads `r`.
  void wait(std::unique_lock<std::mutex>& lock, uint64_t req, Reply& r, const char* op) {
    waiting_[req] = &r;
    flush_locked(lock);
    const bool ok = cv_.wait_for(lock, timeout(), [&] { return r.done || dead_; });
    waiting_.erase(req);
    if (!r.done) {
      if (!ok && !dead_) {
        dead_ = true;
        why_ = "no reply within " + std::to_string(opts_.timeout_s) + " s";
        lock.unlock();
        transport_->close();
        lock.lock();
      }
      check_alive(op);
    }
    if (r.failed) {
      lock.unlock();
      ember::detail::raise_deferred_errors(device_);
      throw_error(r.kind, r.msg);
    }
  }

  // On the transport's thread.
  void on_frame(std::span<const uint8_t> frame) {
    std::exception_ptr async;
    {
      std::lock_guard lock(mu_);
      try {
        Decoder dec(frame);
        Message m;
        while (dec.next(m)) {
          if (m.type == MsgType::HelloOk) {
            greeted_ = true;
            server_device_ = m.text;
            continue;
          }
          if (m.type == MsgType::Error && (m.req == 0 || !waiting_.count(m.req))) {
            if (!greeted_) {
              dead_ = true, why_ = "the server refused the session: " + m.text;
            } else if (!async) {
              try {
                throw_error(m.error, m.text);
              } catch (...) {
                async = std::current_exception();
              }
            }
            continue;
          }
          auto it = waiting_.find(m.req);
          if (it == waiting_.end()) continue;  // a reply to a request that timed out
          Reply& r = *it->second;
          switch (m.type) {
            case MsgType::Data:
              if (m.offset > r.n || m.bytes.size() > r.n - m.offset)
                throw ProtocolError("[remote] a reply of more bytes than were asked for");
              if (!m.bytes.empty()) std::memcpy(r.dst + m.offset, m.bytes.data(), m.bytes.size());
              r.done = m.last;
              break;
            case MsgType::Error:
              r.failed = r.done = true;
              r.kind = m.error;
              r.msg = m.text;
              break;
            case MsgType::Outputs:
              r.metas = std::move(m.metas);
              r.done = true;
              break;
            case MsgType::SyncDone: r.done = true; break;
            default: throw ProtocolError("[remote] a message a server does not send");
          }
        }
      } catch (const std::exception& e) {
        dead_ = true;
        why_ = e.what();
      }
      // Under the lock: a waiter that sees its reply must also see the errors sent before it.
      if (async) ember::detail::defer_error(device_, async);
    }
    cv_.notify_all();
  }
  void on_close(const std::string& why) {
    {
      std::lock_guard lock(mu_);
      if (!dead_) dead_ = true, why_ = why;
    }
    cv_.notify_all();
  }

  const int index_;
  Device device_;  // Device::remote sets it (Backend::Remote, index_) once connected
  const std::string url_;
  const ConnectOptions opts_;
  std::unique_ptr<ClientTransport> transport_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint8_t> buf_;  // messages not yet sent
  std::atomic<uint64_t> next_handle_{1};
  uint64_t next_req_ = 1;
  bool greeted_ = false, dead_ = false;
  std::string why_, server_device_;
  std::unordered_map<uint64_t, Reply*> waiting_;
};


// Connections are never destroyed (storages may outlive every user of them, until exit). Ops
// find theirs without a lock (the dispatch path); connecting takes the lock only to pick a slot.
// Deferred errors and random generators are kept per device index mod 16: connections 16 apart
// share them (one process's own connections; reconnects take fresh indices).
constexpr int kMaxConnections = 256;
struct Registry {
  std::mutex mu;
  std::atomic<Connection*> conns[kMaxConnections] = {};
  std::atomic<int> count{0};
  std::unordered_map<std::string, int> by_key;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void free_block(void* ctx, const Storage& s) {
  Connection* c = registry().conns[s.place.index()].load(std::memory_order_acquire);
  if (c) c->free(uint64_t(reinterpret_cast<uintptr_t>(ctx)));
}

Connection& conn_of(Device d, const char* op) {
  Registry& r = registry();
  Connection* c = d.backend() == Backend::Remote && d.index() >= 0 && d.index() < kMaxConnections
                      ? r.conns[d.index()].load(std::memory_order_acquire)
                      : nullptr;
  if (!c) ember::detail::throw_device(op, "no remote connection behind " + d.str());
  return *c;
}

uint64_t handle_of(const Storage& s, Connection& c, const char* op) {
  if (s.free_fn != free_block || s.place.index() != c.index())
    ember::detail::throw_device(op, "a tensor of another remote connection (move it with .to(device))");
  return handle_in(s);
}

bool is_inline(const Storage& s) { return s.data == s.inline_bytes; }

// The storage handle of each view input, in `handles` (0 for the others). A view of a graph
// constant's inline bytes (an expanded scalar) is uploaded to a fresh storage that `keep` holds
// until the call is sent.
void handles_of(const OpCall& c, Connection& conn, uint64_t* handles,
                std::vector<std::shared_ptr<Storage>>& keep) {
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    handles[i] = 0;
    const Tensor& t = c.inputs[i];
    if (!t.defined() || t.impl()->is_constant) continue;
    const Storage& s = *t.impl()->storage;
    if (is_inline(s)) {
      auto up = conn.new_storage(s.nbytes, c.device);
      handles[i] = handle_in(*up);
      conn.upload(handles[i], s.nbytes, 0, s.inline_bytes, s.nbytes);
      keep.push_back(std::move(up));
    } else {
      handles[i] = handle_of(s, conn, op_name(c.op));
    }
  }
}

// The per-op path: no heap allocation but the outputs' (a call's handles sit on the stack).
struct CallHandles {
  explicit CallHandles(size_t n) : heap(n > kInline ? n : 0) {
    data = n > kInline ? heap.data() : local;
  }
  static constexpr size_t kInline = 8;
  uint64_t local[kInline];
  std::vector<uint64_t> heap;
  uint64_t* data;
};

TensorList k_remote(const OpCall& c) {
  if (c.op == OpId::contiguous && c.inputs[0].is_contiguous()) return {c.inputs[0]};
  Connection& conn = conn_of(c.device, op_name(c.op));
  std::vector<std::shared_ptr<Storage>> keep;
  CallHandles in(c.inputs.size());
  handles_of(c, conn, in.data, keep);
  // In place: copy_(dst, src) writes dst's storage and returns dst itself.
  if (c.op == OpId::copy && c.inputs.size() == 2) {
    conn.call(c, in.data, {});
    return {c.inputs[0]};
  }
  bool wait = c.meta.variadic;
  for (int i = 0; i < c.meta.n; ++i)
    for (int64_t d : c.meta.m[i].shape)
      if (d < 0) wait = true;
  TensorList outs;
  if (!wait) {
    uint64_t handles[MetaList::kMaxOutputs];
    for (int i = 0; i < c.meta.n; ++i) {
      outs.push_back(ember::detail::empty_tensor(c.meta.m[i].shape, c.meta.m[i].dtype, c.device));
      handles[i] = handle_in(*outs.back().impl()->storage);
    }
    conn.call(c, in.data, std::span<const uint64_t>(handles, size_t(c.meta.n)));
    return outs;
  }
  // Output shapes the data decides (nonzero, split's pieces): one round trip for the metas.
  const uint64_t first = conn.reserve(kMaxCallTensors);
  std::vector<TensorMeta> metas = conn.call_wait(c, in.data, first);
  for (size_t i = 0; i < metas.size(); ++i) {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = metas[i].shape;
    impl->strides = contiguous_strides(metas[i].shape);
    impl->dtype = metas[i].dtype;
    impl->device = c.device;
    impl->refresh();
    impl->storage = conn.adopt(first + i, size_t(impl->numel) * itemsize(impl->dtype), c.device);
    outs.emplace_back(std::move(impl));
  }
  return outs;
}

class RemoteBackend final : public BackendImpl {
 public:
  Backend kind() const override { return Backend::Remote; }
  bool is_host() const override { return false; }
  int device_count() const override {
    return registry().count.load();
  }
  void check_device(int index, const char* op) const override {
    if (index < 0 || index >= device_count())
      ember::detail::throw_device(op, "remote:" + std::to_string(index) + " is not a connection");
  }
  std::shared_ptr<Storage> allocate(size_t nbytes, Device place) override {
    Connection& c = conn_of(place, "empty");
    auto s = c.new_storage(nbytes, place);
    // An empty tensor is never written (nothing is uploaded or computed into it): the server
    // learns of its storage here.
    if (nbytes == 0) c.upload(handle_in(*s), 0, 0, nullptr, 0);
    return s;
  }
  void copy_from_host(Storage& dst, size_t off, const void* src, size_t n) override {
    if (is_inline(dst)) {
      if (n) std::memcpy(dst.inline_bytes + off, src, n);
      return;
    }
    Connection& c = conn_of(dst.place, "copy");
    c.upload(handle_of(dst, c, "copy"), dst.nbytes, off, src, n);
  }
  void copy_to_host(void* dst, const Storage& src, size_t off, size_t n) override {
    if (is_inline(src)) {
      if (n) std::memcpy(dst, src.inline_bytes + off, n);
      return;
    }
    Connection& c = conn_of(src.place, "copy");
    c.download(dst, handle_of(src, c, "copy"), off, n);
    ember::detail::raise_deferred_errors(src.place);  // a read is a sync point
  }
  void synchronize(Device d) override { conn_of(d, "synchronize").sync(); }
};

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}

}  // namespace

std::unique_ptr<BackendImpl> make_remote_backend() {
  auto b = std::make_unique<RemoteBackend>();
  for (int i = 0; i < kNumOps; ++i)
    if (op_def(OpId(i)).category != OpCategory::User) b->set_kernel(OpId(i), k_remote, kAllDTypes);
  flex::register_flex_views(*b);  // geometry only: valid for remote storage
  // Ops that return views of their inputs run their decompositions (view ops) here, so the
  // results share the inputs' storage as on every device.
  for (OpId op : {OpId::split, OpId::chunk, OpId::unbind, OpId::meshgrid}) b->set_kernel(op, nullptr, 0);
  return b;
}

namespace {
ConnectOptions env_options() {
  ConnectOptions o;
  if (const char* t = std::getenv("EMBER_REMOTE_TOKEN")) o.token = t;
  if (const char* ca = std::getenv("EMBER_REMOTE_CA")) o.ca_file = ca;
  if (const char* c = std::getenv("EMBER_REMOTE_CERT")) o.cert_file = c;
  if (const char* k = std::getenv("EMBER_REMOTE_KEY")) o.key_file = k;
  o.timeout_s = env_double("EMBER_REMOTE_TIMEOUT", o.timeout_s);
  return o;
}
thread_local const ConnectOptions* t_options = nullptr;  // remote::connect's, for Device::remote
}  // namespace

int detail::open(const std::string& url) {
  const ConnectOptions opts = t_options ? *t_options : env_options();
  const Url u = parse_url(url, "Device::remote");
  std::string key = url;
  for (const std::string* f : {&opts.token, &opts.ca_file, &opts.ca_pem, &opts.cert_pem,
                               &opts.cert_file, &opts.key_file})
    key += '\n' + *f;
  Registry& r = registry();
  int index;
  {
    std::lock_guard lock(r.mu);
    auto it = r.by_key.find(key);
    if (it != r.by_key.end() && r.conns[it->second].load()->alive()) return it->second;
    if (r.count.load() >= kMaxConnections)
      ember::detail::throw_device("Device::remote", "at most " + std::to_string(kMaxConnections) +
                                                        " remote connections per process");
    index = r.count.fetch_add(1);
  }
  auto* c = new Connection(index, url, u, opts);  // blocks; throws DeviceError (slot unused)
  std::lock_guard lock(r.mu);
  r.conns[index].store(c, std::memory_order_release);
  r.by_key[key] = index;
  return index;
}

void detail::opened(int index, Device d) { registry().conns[index].load()->set_device(d); }

Device connect(const std::string& url, const ConnectOptions& opts) {
  struct Scope {
    explicit Scope(const ConnectOptions* o) { t_options = o; }
    ~Scope() { t_options = nullptr; }
  } scope(&opts);
  return Device::remote(url);
}

void disconnect(Device d) { conn_of(d, "remote::disconnect").close(); }

bool connected(Device d) { return conn_of(d, "remote::connected").alive(); }

}  // namespace ember::remote
