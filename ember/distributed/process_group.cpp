// ProcessGroup's collectives: argument checks (errors name the collective, what was expected and
// what was found), staging (a contiguous, materialised buffer per tensor: lazy devices write
// pending tensors first), the transport call, and the Work that writes the result back.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/distributed/group.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/tensor_impl.h"

namespace ember::distributed {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// --- Work ---
struct Work::Impl {
  std::shared_ptr<ProcessGroup::Impl> group;
  const char* op = "";
  std::unique_ptr<detail::Request> req;  // null: nothing in flight (a world of one)
  std::function<void()> finish;          // writes the result back, once
  TensorList keep;                       // staging buffers the transport reads or writes
  steady_clock::time_point start = steady_clock::now();
  bool done = false, finished = false;

  void complete() {
    if (finished) return;
    if (req && !done) {
      try {
        detail::wait_for(*req, op, group->who(), start, group->timeout);
      } catch (const DistributedError& e) {
        group->fail(e.what());
        finished = true;
        throw;
      }
      done = true;
    }
    finished = true;
    NoGradGuard no_grad;  // collectives are not differentiated
    if (finish) finish();
    finish = nullptr;  // it holds the result's staging buffer
    keep.clear();
    req.reset();
  }
  // A handle dropped without wait() still completes (the transport must not write freed
  // staging buffers) and writes its result, like a blocking collective.
  ~Impl() {
    if (finished || group->failed()) return;  // after a failure nothing more arrives
    try {
      complete();
    } catch (...) {
    }
  }
};

void Work::wait() {
  if (impl_) impl_->complete();
}

bool Work::is_completed() {
  if (!impl_ || impl_->finished || impl_->done || !impl_->req) return true;
  try {
    impl_->done = impl_->req->test(impl_->op);
  } catch (const DistributedError& e) {
    impl_->group->fail(e.what());
    throw;
  }
  return impl_->done;
}

namespace detail {
void wait_for(Request& r, const char* op, const std::string& who, steady_clock::time_point start,
              milliseconds timeout) {
  const auto deadline = start + timeout;
  while (!r.test(op)) {
    if (steady_clock::now() > deadline) {
      r.abort();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", double(timeout.count()) / 1000.0);
      throw DistributedError(
          std::string("[") + op + "] " + who + ": timed out after " + secs +
          " s waiting for the other ranks (a rank died, hangs, or called a different "
          "collective); this group can no longer be used (the timeout is InitOptions::timeout "
          "or EMBER_DIST_TIMEOUT)");
    }
    // MPI moves data only inside MPI calls, so a wait keeps polling (yielding the core) for its
    // first 20 ms, like MPI_Wait's busy loop; a longer wait (a slow or dead peer) backs off to a
    // poll every 50 us, then every millisecond after a second.
    const auto waited = steady_clock::now() - start;
    if (waited < milliseconds(20)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(waited < milliseconds(1000) ? 50 : 1000));
  }
}
}  // namespace detail

// --- the group's state ---
std::string ProcessGroup::Impl::who() const {
  std::string s = "rank " + std::to_string(rank) + " of " + std::to_string(size());
  if (!world_ranks.empty() && world_ranks[size_t(rank)] != rank)
    s += " (world rank " + std::to_string(world_ranks[size_t(rank)]) + ")";
  return s;
}

void ProcessGroup::Impl::check_usable(const char* op) {
  std::lock_guard lock(mu);
  if (!failure.empty())
    throw DistributedError(std::string("[") + op + "] " + who() +
                           ": the group failed earlier and can no longer be used: " + failure);
}

bool ProcessGroup::Impl::failed() {
  std::lock_guard lock(mu);
  return !failure.empty();
}

void ProcessGroup::Impl::fail(const std::string& msg) {
  std::lock_guard lock(mu);
  if (failure.empty()) failure = msg;
}

detail::Comm* ProcessGroup::Impl::comm_for(Device d, const char* op) {
  const Backend b = d.backend();
  BackendImpl* impl = backend_for(b);
  if (b == Backend::Cuda) {
    {
      std::lock_guard lock(mu);
      if (!cuda && make_cuda) cuda = make_cuda();
    }
    if (cuda) return cuda.get();
    if (size() == 1) return nullptr;
    throw DeviceError(std::string("[") + op + "] CUDA tensors need the NCCL transport, which " +
                      "this build lacks (EMBER_CUDA with NCCL found at configure time)");
  }
  if (!impl || !impl->is_host())
    throw DeviceError(std::string("[") + op + "] expected a host (flex, cpu) or CUDA tensor, " +
                      "found one on " + d.str());
  if (host) return host.get();
  if (size() == 1) return nullptr;
  throw DeviceError(std::string("[") + op + "] host tensors need the MPI transport: launch with " +
                    "mpirun (a torchrun-style launch has NCCL for CUDA tensors only)");
}

namespace detail {
std::shared_ptr<ProcessGroup::Impl> make_group(std::shared_ptr<Comm> host, std::vector<int> ranks,
                                               int rank, milliseconds timeout, bool debug) {
  auto g = std::make_shared<ProcessGroup::Impl>();
  g->host = std::move(host);
  g->world_ranks = std::move(ranks);
  g->rank = rank;
  g->timeout = timeout;
  g->debug = debug;
  return g;
}
}  // namespace detail

// --- staging ---
namespace {

[[noreturn]] void bad(const char* op, const std::string& msg) {
  throw ValueError(std::string("[") + op + "] " + msg);
}

void check_tensor(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) bad(op, std::string("expected a defined tensor for `") + what + "`");
}

// A contiguous buffer holding t's elements in dtype d, written (a sync point on lazy devices),
// never a graph constant: what the transport reads.
Tensor stage(const Tensor& t, DType d) {
  Tensor c = (t.dtype() == d ? t : t.to(d)).contiguous();
  if (ember::detail::is_constant(c)) {
    Tensor s = ember::detail::empty_tensor(c.shape(), d, c.device());
    s.copy_(c);
    c = s;
  }
  ember::detail::ready(c);
  return c;
}
void* ptr(const Tensor& c) { return c.impl()->data(); }
// Fresh storage for the transport to write (not shared with any tensor a queue may read).
Tensor fresh(const Shape& s, DType d, Device dev) {
  Tensor t = ember::detail::empty_tensor(s, d, dev);
  ember::detail::ready(t);
  return t;
}

std::string describe(DType d, const Shape& s) {
  return std::string(dtype_name(d)) + " tensor of shape " + shape_str(s);
}

void check_reduce(const char* op, DType d, ReduceOp r) {
  if (is_complex(d) && (r == ReduceOp::Max || r == ReduceOp::Min))
    throw DTypeError(std::string("[") + op + "] max and min need real values, found a " +
                     std::string(dtype_name(d)) + " tensor");
  if (r == ReduceOp::Avg && !is_floating(d) && !is_complex(d))
    throw DTypeError(std::string("[") + op + "] ReduceOp::Avg needs a floating tensor, found " +
                     std::string(dtype_name(d)) + " (use Sum and divide)");
}
// The dtype the transport reduces: d itself, or f32 for what it cannot (MPI and f16/bf16).
DType reduce_dtype(detail::Comm& c, DType d, ReduceOp r) { return c.reduces(d, r) ? d : DType::F32; }

// Writes `res` (dtype and geometry aside) into `dst` in place, dividing for a non-native Avg.
void write_back(Tensor dst, Tensor res, bool divide, int n) {
  if (divide) res = div(res, scalar_tensor(double(n), res.dtype(), res.device()));
  dst.copy_(res.to(dst.dtype()));
}

enum class Code : int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, AllToAll };
const char* code_name(int64_t c) {
  static const char* names[] = {"?", "all_reduce", "broadcast", "all_gather", "reduce_scatter",
                                "all_to_all"};
  return c >= 1 && c <= 5 ? names[c] : "an unknown collective";
}

}  // namespace

ProcessGroup::ProcessGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size(); }
Transport ProcessGroup::host_transport() const {
  return impl_->host ? impl_->host->transport() : Transport::Local;
}
milliseconds ProcessGroup::timeout() const { return impl_->timeout; }

namespace {

Work make_work(const std::shared_ptr<ProcessGroup::Impl>& g, const char* op,
               std::unique_ptr<detail::Request> req, TensorList keep, std::function<void()> fin) {
  auto w = std::make_shared<Work::Impl>();
  w->group = g;
  w->op = op;
  w->req = std::move(req);
  w->keep = std::move(keep);
  w->finish = std::move(fin);
  return Work(std::move(w));
}

// Debug mode: every rank's (collective, dtype, shape, root) are gathered and compared before the
// collective runs, so a mismatch is an error naming both ranks instead of a hang or garbage.
void debug_check(const std::shared_ptr<ProcessGroup::Impl>& g, detail::Comm* c, const char* op,
                 Code code, const Tensor& t, int64_t reduce, int64_t root) {
  if (!g->debug || !c || g->size() == 1) return;
  constexpr int kMaxDims = 8, K = 3 + kMaxDims + 2;  // code, dtype, rank, dims, op, root
  std::vector<int64_t> sig(K, -1);
  sig[0] = int64_t(code);
  sig[1] = int64_t(t.dtype());
  sig[2] = t.dim();
  for (int i = 0; i < std::min<int>(int(t.dim()), kMaxDims); ++i) sig[size_t(3 + i)] = t.size(i);
  sig[K - 2] = reduce;
  sig[K - 1] = root;
  const Device dev = t.device().without_layers();
  Tensor in = stage(tensor(sig, {K}, DType::I64, Device::flex()).to(dev), DType::I64);
  Tensor out = fresh({g->size() * K}, DType::I64, dev);
  auto req = c->all_gather(ptr(in), ptr(out), K, DType::I64);
  Work w = make_work(g, op, std::move(req), {in, out}, nullptr);
  w.wait();
  std::vector<int64_t> all = out.to_vector<int64_t>();
  bool same = true;
  for (int r = 0; r < g->size(); ++r)
    same = same && std::equal(sig.begin(), sig.end(), all.begin() + r * K);
  if (same) return;
  static const char* ops[] = {"sum", "avg", "max", "min"};
  std::string msg = std::string("[") + op + "] debug check (EMBER_DIST_DEBUG) found ranks that " +
                    "disagree:";
  for (int r = 0; r < g->size(); ++r) {
    const int64_t* s = all.data() + r * K;
    Shape shape;
    for (int i = 0; i < std::min<int>(int(s[2]), kMaxDims); ++i) shape.push_back(s[3 + i]);
    msg += std::string(r ? ";" : "") + " rank " + std::to_string(r) + " called " +
           code_name(s[0]);
    if (s[K - 2] >= 0 && s[K - 2] < 4) msg += std::string(" (") + ops[s[K - 2]] + ")";
    if (s[K - 1] >= 0) msg += " (root " + std::to_string(s[K - 1]) + ")";
    msg += " with a " + describe(DType(s[1]), shape);
  }
  g->fail(msg);
  throw DistributedError(msg);
}

void check_root(const char* op, int root, int size, const char* what = "root") {
  if (root < 0 || root >= size)
    throw IndexError(std::string("[") + op + "] " + what + " " + std::to_string(root) +
                     " is not a rank of a group of size " + std::to_string(size));
}

// dim-0 chunking: `big` must be `parts` copies of `small` stacked along dim 0 (a 0-d small: [parts]).
void check_chunks(const char* op, const Tensor& small, const Tensor& big, int parts,
                  const char* small_name, const char* big_name) {
  Shape want = small.shape();
  if (want.empty()) want = {int64_t(parts)};
  else want[0] *= parts;
  if (big.shape() != want)
    throw ShapeError(std::string("[") + op + "] expected `" + big_name + "` of shape " +
                     shape_str(want) + " (" + std::to_string(parts) + " times `" + small_name +
                     "` " + shape_str(small.shape()) + " along dim 0), found " +
                     shape_str(big.shape()));
  if (big.dtype() != small.dtype())
    throw DTypeError(std::string("[") + op + "] `" + big_name + "` and `" + small_name +
                     "` must have one dtype, found " + std::string(dtype_name(big.dtype())) + " and " +
                     std::string(dtype_name(small.dtype())));
  if (!big.device().same_place(small.device()))
    throw DeviceError(std::string("[") + op + "] `" + big_name + "` is on " + big.device().str() +
                      " and `" + small_name + "` on " + small.device().str());
}

}  // namespace

Work ProcessGroup::all_reduce(Tensor& t, ReduceOp op) {
  const char* name = "all_reduce";
  check_tensor(name, t, "t");
  impl_->check_usable(name);
  check_reduce(name, t.dtype(), op);
  detail::Comm* c = impl_->comm_for(t.device(), name);
  if (!c) return make_work(impl_, name, nullptr, {}, nullptr);  // a world of one: t is the result
  const DType d = reduce_dtype(*c, t.dtype(), op);
  debug_check(impl_, c, name, Code::AllReduce, t, int64_t(op), -1);
  Tensor in = stage(t, d);
  Tensor out = fresh(in.shape(), d, in.device());
  const bool divide = op == ReduceOp::Avg && !c->has_avg();
  auto req = c->all_reduce(ptr(in), ptr(out), size_t(in.numel()), d,
                           divide ? ReduceOp::Sum : op);
  const int n = size();
  return make_work(impl_, name, std::move(req), {in, out},
                   [t, out, divide, n] { write_back(t, out, divide, n); });
}

Work ProcessGroup::broadcast(Tensor& t, int root) {
  const char* name = "broadcast";
  check_tensor(name, t, "t");
  check_root(name, root, size());
  impl_->check_usable(name);
  detail::Comm* c = impl_->comm_for(t.device(), name);
  if (!c) return make_work(impl_, name, nullptr, {}, nullptr);
  debug_check(impl_, c, name, Code::Broadcast, t, -1, root);
  Tensor buf = stage(t, t.dtype());
  // The transport writes the buffer: a contiguous t would share it with queued readers of t.
  if (buf.is_alias_of(t)) buf = stage(t.clone(), t.dtype());
  auto req = c->broadcast(ptr(buf), size_t(buf.numel()), buf.dtype(), root);
  const bool write = rank() != root;
  return make_work(impl_, name, std::move(req), {buf}, [t, buf, write] {
    if (write) write_back(t, buf, false, 1);
  });
}

Work ProcessGroup::all_gather(Tensor& out, const Tensor& in) {
  const char* name = "all_gather";
  check_tensor(name, in, "in");
  check_tensor(name, out, "out");
  check_chunks(name, in, out, size(), "in", "out");
  impl_->check_usable(name);
  detail::Comm* c = impl_->comm_for(in.device(), name);
  if (!c) {
    out.copy_(in.reshape(out.shape()));
    return make_work(impl_, name, nullptr, {}, nullptr);
  }
  debug_check(impl_, c, name, Code::AllGather, in, -1, -1);
  Tensor src = stage(in, in.dtype());
  Tensor dst = fresh(out.shape(), out.dtype(), out.device());
  auto req = c->all_gather(ptr(src), ptr(dst), size_t(src.numel()), src.dtype());
  return make_work(impl_, name, std::move(req), {src, dst},
                   [out, dst] { write_back(out, dst, false, 1); });
}

Work ProcessGroup::reduce_scatter(Tensor& out, const Tensor& in, ReduceOp op) {
  const char* name = "reduce_scatter";
  check_tensor(name, in, "in");
  check_tensor(name, out, "out");
  check_chunks(name, out, in, size(), "out", "in");
  impl_->check_usable(name);
  check_reduce(name, in.dtype(), op);
  detail::Comm* c = impl_->comm_for(in.device(), name);
  if (!c) {
    out.copy_(in);
    return make_work(impl_, name, nullptr, {}, nullptr);
  }
  const DType d = reduce_dtype(*c, in.dtype(), op);
  debug_check(impl_, c, name, Code::ReduceScatter, in, int64_t(op), -1);
  Tensor src = stage(in, d);
  Tensor dst = fresh(out.shape(), d, out.device());
  const bool divide = op == ReduceOp::Avg && !c->has_avg();
  auto req = c->reduce_scatter(ptr(src), ptr(dst), size_t(dst.numel()), d,
                               divide ? ReduceOp::Sum : op);
  const int n = size();
  return make_work(impl_, name, std::move(req), {src, dst},
                   [out, dst, divide, n] { write_back(out, dst, divide, n); });
}

Work ProcessGroup::all_to_all(Tensor& out, const Tensor& in) {
  const char* name = "all_to_all";
  check_tensor(name, in, "in");
  check_tensor(name, out, "out");
  if (in.dim() == 0 || in.size(0) % size() != 0)
    throw ShapeError("[all_to_all] expected `in` with a dim 0 divisible by the group size " +
                     std::to_string(size()) + ", found shape " + shape_str(in.shape()));
  if (out.shape() != in.shape() || out.dtype() != in.dtype())
    throw ShapeError("[all_to_all] expected `out` like `in` (a " + describe(in.dtype(), in.shape()) +
                     "), found a " + describe(out.dtype(), out.shape()));
  impl_->check_usable(name);
  detail::Comm* c = impl_->comm_for(in.device(), name);
  if (!c) {
    out.copy_(in);
    return make_work(impl_, name, nullptr, {}, nullptr);
  }
  debug_check(impl_, c, name, Code::AllToAll, in, -1, -1);
  Tensor src = stage(in, in.dtype());
  Tensor dst = fresh(out.shape(), out.dtype(), out.device());
  auto req = c->all_to_all(ptr(src), ptr(dst), size_t(src.numel() / size()), src.dtype());
  return make_work(impl_, name, std::move(req), {src, dst},
                   [out, dst] { write_back(out, dst, false, 1); });
}

Work ProcessGroup::barrier() {
  impl_->check_usable("barrier");
  detail::Comm* c = impl_->host ? impl_->host.get() : nullptr;
  if (!c && size() > 1) c = impl_->comm_for(Device::cuda(0), "barrier");
  if (!c) return make_work(impl_, "barrier", nullptr, {}, nullptr);
  return make_work(impl_, "barrier", c->barrier(), {}, nullptr);
}

Work ProcessGroup::send(const Tensor& t, int dst, int tag) {
  check_tensor("send", t, "t");
  check_root("send", dst, size(), "dst");
  if (dst == rank()) bad("send", "dst " + std::to_string(dst) + " is this rank");
  impl_->check_usable("send");
  detail::Comm* c = impl_->comm_for(t.device(), "send");
  Tensor src = stage(t, t.dtype());
  return make_work(impl_, "send", c->send(ptr(src), size_t(src.numel()), src.dtype(), dst, tag),
                   {src}, nullptr);
}

Work ProcessGroup::recv(Tensor& t, int src, int tag) {
  check_tensor("recv", t, "t");
  check_root("recv", src, size(), "src");
  if (src == rank()) bad("recv", "src " + std::to_string(src) + " is this rank");
  impl_->check_usable("recv");
  detail::Comm* c = impl_->comm_for(t.device(), "recv");
  Tensor dst = fresh(t.shape(), t.dtype(), t.device());
  return make_work(impl_, "recv", c->recv(ptr(dst), size_t(dst.numel()), dst.dtype(), src, tag),
                   {dst}, [t, dst] { write_back(t, dst, false, 1); });
}

}  // namespace ember::distributed
