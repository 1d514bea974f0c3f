// oneDNN plumbing: engine, streams, thread counts, descriptors, execution and the primitive cache.
#include "ember/backends/cpu/dnnl_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/flex/thread_pool.h"
#include "ember/error.h"

namespace ember::cpu::onednn {

void check(dnnl_status_t s, const char* op, const char* what) {
  if (s != dnnl_success)
    throw Error(std::string("[") + op + "] oneDNN failed in " + what + " (status " +
                std::to_string(int(s)) + ")");
}

dnnl_engine_t engine() {
  // Lives for the process: destroying it at exit would race with the cache's own destructor.
  static dnnl_engine_t e = [] {
    dnnl_engine_t h = nullptr;
    check(dnnl_engine_create(&h, dnnl_cpu, 0), "cpu", "dnnl_engine_create");
    return h;
  }();
  return e;
}

namespace {

using Stream = Handle<dnnl_stream_t, dnnl_stream_destroy>;

// oneDNN streams are not thread-safe: one per calling thread.
dnnl_stream_t stream() {
  thread_local Stream s = [] {
    Stream h;
    check(dnnl_stream_create(h.out(), engine(), dnnl_stream_default_flags), "cpu",
          "dnnl_stream_create");
    return h;
  }();
  return s.get();
}

#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
// Debian's oneDNN runs on GNU OpenMP. Its team size is a per-thread setting of the OpenMP
// runtime; the function is looked up in the process (libdnnl already loaded libgomp) rather
// than linked, so ember itself carries no OpenMP dependency.
using SetThreads = void (*)(int);
SetThreads omp_set_threads() {
  static SetThreads f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return f;
}
#endif

}  // namespace

void single_threaded() {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  thread_local bool t_done = false;
  if (!t_done) {
    if (SetThreads f = omp_set_threads()) f(1);
    t_done = true;
  }
#endif
}

int workers() { return flex::in_parallel_region() ? 1 : flex::num_threads(); }

dnnl_data_type_t data_type(DType d) {
  switch (d) {
    case DType::F32:
      return dnnl_f32;
    case DType::BF16:
      return dnnl_bf16;
    case DType::F16:
      return dnnl_f16;
    default:
      return dnnl_data_type_undef;
  }
}

void canonical_strides(std::span<const int64_t> dims, std::span<int64_t> s) {
  const int nd = int(dims.size());
  int64_t extent = 1;  // one past the farthest element the other dims reach
  for (int i = 0; i < nd; ++i)
    if (dims[size_t(i)] > 1) extent = std::max(extent, (dims[size_t(i)] - 1) * s[size_t(i)] + 1);
  // The last two dims form a matrix: make it row-major where it can be (oneDNN's GEMM wants its
  // output so), else column-major. Other size-1 dims step past the data.
  const size_t last = size_t(nd - 1), row = size_t(nd - 2);
  for (int i = nd - 1; i >= 0; --i) {
    const size_t me = size_t(i);
    if (dims[me] != 1) continue;
    if (me == last)
      s[me] = 1;
    else if (nd >= 2 && me == row)
      s[me] = s[last] == 1 ? std::max<int64_t>(dims[last], 1) : 1;
    else
      s[me] = extent;
  }
}

dnnl_memory_desc_t plain_md(std::span<const int64_t> dims, std::span<const int64_t> strides,
                            dnnl_data_type_t dt) {
  const int nd = int(dims.size());
  dnnl_dims_t d{}, s{};
  for (int i = 0; i < nd; ++i) d[i] = dims[size_t(i)], s[i] = strides[size_t(i)];
  canonical_strides(dims, std::span<int64_t>(s, size_t(nd)));
  dnnl_memory_desc_t md;
  check(dnnl_memory_desc_init_by_strides(&md, nd, d, dt, s), "cpu", "memory descriptor");
  return md;
}

dnnl_memory_desc_t plain_md(const Tensor& t) {
  return plain_md(t.shape(), t.strides(), data_type(t.dtype()));
}

dnnl_memory_desc_t any_md(std::span<const int64_t> dims, dnnl_data_type_t dt) {
  dnnl_dims_t d{};
  for (size_t i = 0; i < dims.size(); ++i) d[i] = dims[i];
  dnnl_memory_desc_t md;
  check(dnnl_memory_desc_init_by_tag(&md, int(dims.size()), d, dt, dnnl_format_tag_any), "cpu",
        "memory descriptor");
  return md;
}

void execute(const Primitive& p, std::span<const Arg> args, size_t scratch) {
  constexpr size_t kMax = 16;
  if (args.size() + 1 > kMax) throw Error("[cpu] too many oneDNN arguments");
  Memory mem[kMax];
  dnnl_exec_arg_t ea[kMax];
  size_t n = 0;
  for (; n < args.size(); ++n) {
    check(dnnl_memory_create(mem[n].out(), args[n].md, engine(), const_cast<void*>(args[n].data)),
          "cpu", "dnnl_memory_create");
    ea[n] = {args[n].id, mem[n].get()};
  }
  if (scratch) {
    thread_local std::vector<char> t_scratch;
    if (t_scratch.size() < scratch) t_scratch.resize(scratch);
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {int64_t(scratch)};
    check(dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_u8, dnnl_a), "cpu", "scratchpad");
    check(dnnl_memory_create(mem[n].out(), &md, engine(), t_scratch.data()), "cpu", "scratchpad");
    ea[n] = {DNNL_ARG_SCRATCHPAD, mem[n].get()};
    ++n;
  }
  single_threaded();
  dnnl_stream_t s = stream();
  check(dnnl_primitive_execute(p.get(), s, int(n), ea), "cpu", "dnnl_primitive_execute");
  check(dnnl_stream_wait(s), "cpu", "dnnl_stream_wait");
}

void execute(const Primitive& p, std::initializer_list<Arg> args, size_t scratch) {
  execute(p, std::span<const Arg>(args.begin(), args.size()), scratch);
}

Tensor output_tensor(const Tensor& placed, const Shape& shape, Device device, const char* op) {
  if (!placed.defined()) return ember::detail::empty_tensor(shape, DType::F32, device);
  if (placed.shape() != shape || placed.dtype() != DType::F32 || !placed.is_contiguous())
    ember::detail::throw_value(
        op, "a placed output must be contiguous with shape " + shape_str(shape) + " and dtype " +
                std::string(dtype_name(DType::F32)) + ", got " + shape_str(placed.shape()) + " " +
                std::string(dtype_name(placed.dtype())) +
                (placed.is_contiguous() ? "" : " (not contiguous)"));
  return placed;
}

Attr new_attr() {
  Attr a;
  check(dnnl_primitive_attr_create(a.out()), "cpu", "attributes");
  check(dnnl_primitive_attr_set_scratchpad_mode(a.get(), dnnl_scratchpad_mode_user), "cpu",
        "scratchpad mode");
  return a;
}

size_t scratch_size(const PrimitiveDesc& pd) {
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(pd.get(), dnnl_query_scratchpad_md, 0);
  return md ? dnnl_memory_desc_get_size(md) : 0;
}

bool is_reference(const PrimitiveDesc& pd) {
  const char* impl = nullptr;
  if (dnnl_primitive_desc_query(pd.get(), dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
      !impl)
    return true;
  return std::strncmp(impl, "ref", 3) == 0;
}

bool make_primitive(PrimitiveDesc& pd, Primitive& p) {
  if (!pd || is_reference(pd)) return false;
  if (dnnl_primitive_create(p.out(), pd.get()) != dnnl_success) return false;
  note_primitive_created();
  return true;
}

dnnl_memory_desc_t query_md(const PrimitiveDesc& pd, dnnl_query_t what, int index) {
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd.get(), what, index);
  if (!md) throw Error("[cpu] oneDNN has no such memory descriptor");
  return *md;
}

Primitive make_reorder(const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
                       bool even_if_equal) {
  Primitive p;
  if (!even_if_equal && dnnl_memory_desc_equal(&from, &to)) return p;
  single_threaded();
  PrimitiveDesc pd;
  check(dnnl_reorder_primitive_desc_create(pd.out(), &from, engine(), &to, engine(), nullptr),
        "cpu", "reorder");
  check(dnnl_primitive_create(p.out(), pd.get()), "cpu", "reorder");
  note_primitive_created();
  return p;
}

void append_activation(dnnl_post_ops_t po, const Epilogue& ep) {
  dnnl_alg_kind_t alg = dnnl_eltwise_relu;
  float alpha = 0.f, beta = 0.f;
  switch (ep.act) {
    case Activation::None:
      return;
    case Activation::Relu:
      break;
    case Activation::LeakyRelu:
      alpha = ep.alpha;
      break;
    case Activation::Elu:
      alg = dnnl_eltwise_elu, alpha = ep.alpha;
      break;
    case Activation::GeluErf:
      alg = dnnl_eltwise_gelu_erf;
      break;
    case Activation::GeluTanh:
      alg = dnnl_eltwise_gelu_tanh;
      break;
    case Activation::Silu:
      alg = dnnl_eltwise_swish, alpha = 1.f;
      break;
    case Activation::Sigmoid:
      alg = dnnl_eltwise_logistic;
      break;
    case Activation::Tanh:
      alg = dnnl_eltwise_tanh;
      break;
    case Activation::Mish:
      alg = dnnl_eltwise_mish;
      break;
    case Activation::Hardswish:
      alg = dnnl_eltwise_hardswish;
      break;
    case Activation::Softplus:
      alg = dnnl_eltwise_soft_relu;
      break;
    case Activation::Clamp:
      alg = dnnl_eltwise_clip_v2, alpha = ep.alpha, beta = ep.beta;
      break;
    case Activation::Square:
      alg = dnnl_eltwise_square;
      break;
    case Activation::Abs:
      alg = dnnl_eltwise_abs;
      break;
    case Activation::Exp:
      alg = dnnl_eltwise_exp;
      break;
  }
  check(dnnl_post_ops_append_eltwise(po, 1.f, alg, alpha, beta), "cpu", "eltwise post-op");
}

// --- the cache ---

void Key::add_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  add(int64_t(bits));
}

void Key::add_epilogue(const Epilogue& ep) {
  add_float(ep.scale);
  add(int64_t(ep.act));
  add_float(ep.alpha);
  add_float(ep.beta);
  add(ep.residual.defined() ? 1 + int64_t(ep.residual_first) : 0);
}

uint64_t Key::hash() const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(n);
  for (int i = 0; i < n; ++i) {
    h ^= uint64_t(v[i]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h;
}

bool Key::operator==(const Key& o) const { return n == o.n && std::equal(v, v + n, o.v); }

namespace {

int64_t default_capacity() {
  if (const char* e = std::getenv("EMBER_DNNL_CACHE_CAPACITY")) {
    const long long n = std::atoll(e);
    if (n >= 0) return n;
  }
  return 1024;
}

class Cache {
 public:
  EntryPtr lookup(const Key& key, BuildFn build, const void* ctx) {
    if (key.overflow) return build(ctx);
    const uint64_t h = key.hash();
    {
      std::lock_guard lock(mu_);
      auto it = index_.find(h);
      if (it != index_.end() && same(it->second->key, key)) {
        lru_.splice(lru_.begin(), lru_, it->second);  // most recently used first
        ++hits_;
        return it->second->entry;
      }
    }
    EntryPtr e = build(ctx);  // outside the lock: building may take milliseconds
    std::lock_guard lock(mu_);
    ++misses_;
    if (capacity_ == 0) return e;
    auto it = index_.find(h);
    if (it != index_.end()) lru_.erase(it->second);  // a rebuild, or a hash collision
    lru_.push_front({h, std::vector<int64_t>(key.v, key.v + key.n), e});
    index_[h] = lru_.begin();
    trim();
    return e;
  }
  DnnlStats stats() {
    std::lock_guard lock(mu_);
    return {created_.load(), hits_,          misses_,        evictions_,      int64_t(lru_.size()),
            capacity_,       copies_.load(), served_.load(), reorders_.load()};
  }
  void set_capacity(int64_t n) {
    std::lock_guard lock(mu_);
    capacity_ = std::max<int64_t>(0, n);
    trim();
  }
  std::atomic<int64_t> created_{0}, copies_{0}, served_{0}, reorders_{0};

 private:
  struct Node {
    uint64_t hash;
    std::vector<int64_t> key;
    EntryPtr entry;
  };
  static bool same(const std::vector<int64_t>& a, const Key& k) {
    return int(a.size()) == k.n && std::equal(a.begin(), a.end(), k.v);
  }
  void trim() {
    while (int64_t(lru_.size()) > capacity_) {
      index_.erase(lru_.back().hash);
      lru_.pop_back();
      ++evictions_;
    }
  }
  std::mutex mu_;
  std::list<Node> lru_;
  std::unordered_map<uint64_t, std::list<Node>::iterator> index_;
  int64_t capacity_ = default_capacity();
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

EntryPtr lookup(const Key& key, BuildFn build, const void* ctx) {
  single_threaded();  // implementations are chosen for the thread count they will run with
  return cache().lookup(key, build, ctx);
}
void note_primitive_created() { cache().created_.fetch_add(1, std::memory_order_relaxed); }
void note_operand_copy() { cache().copies_.fetch_add(1, std::memory_order_relaxed); }
void note_served() { cache().served_.fetch_add(1, std::memory_order_relaxed); }
void note_activation_reorder() { cache().reorders_.fetch_add(1, std::memory_order_relaxed); }

}  // namespace ember::cpu::onednn

namespace ember::cpu {
bool dnnl_available() { return true; }
DnnlStats dnnl_stats() { return onednn::cache().stats(); }
void set_dnnl_cache_capacity(int64_t n) { onednn::cache().set_capacity(n); }
int dnnl_threads() { return onednn::workers(); }
}  // namespace ember::cpu
