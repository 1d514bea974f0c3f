#pragma once
// oneDNN plumbing for the cpu backend's matmul, convolution and pooling (private; only the
// backend's dnnl_*.cpp files include it). It uses oneDNN's C API, whose header is light, so the
// files that include it compile quickly. Here: owned handles, the engine and a stream per
// thread, oneDNN kept single-threaded with calls split over ember's pool, memory descriptors
// from tensors, and the bounded LRU cache of primitives.
#include <oneapi/dnnl/dnnl.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>

#include "ember/backends/backend.h"
#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::cpu::onednn {

/// Throws ember::Error naming `op` when a oneDNN call did not succeed.
void check(dnnl_status_t s, const char* op, const char* what);

/// An owned oneDNN handle (primitive, descriptor, attribute, post-ops, memory).
template <class T, dnnl_status_t (*Destroy)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(std::exchange(o.h_, nullptr));
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset(T h = nullptr) {
    if (h_) Destroy(h_);
    h_ = h;
  }
  T get() const { return h_; }
  T* out() {
    reset();
    return &h_;
  }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};
using Primitive = Handle<dnnl_primitive_t, dnnl_primitive_destroy>;
using PrimitiveDesc = Handle<dnnl_primitive_desc_t, dnnl_primitive_desc_destroy>;
using Attr = Handle<dnnl_primitive_attr_t, dnnl_primitive_attr_destroy>;
using PostOps = Handle<dnnl_post_ops_t, dnnl_post_ops_destroy>;
using Memory = Handle<dnnl_memory_t, dnnl_memory_destroy>;

/// The CPU engine (created once).
dnnl_engine_t engine();
/// Makes oneDNN single-threaded on this thread. Its OpenMP team would spin-wait next to ember's
/// pool and take its cores between calls (10x slower layer stacks, measured); calls split their
/// work over ember's pool instead, so ember's threads are the only ones.
void single_threaded();
/// Threads a call may split its work over: ember's pool, or 1 inside a parallel region.
int workers();
/// Runs task(i) for each of n pieces of one call on ember's pool.
template <class F>
void for_each_piece(int64_t n, const F& task) {
  if (n <= 1) {
    if (n == 1) task(int64_t(0));
    return;
  }
  flex::parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) task(i);
  });
}

/// Gives size-1 dims the strides oneDNN's layout checks expect (ember leaves them arbitrary).
void canonical_strides(std::span<const int64_t> dims, std::span<int64_t> strides);
/// A plain (strided) descriptor with these dims and strides (size-1 dims made canonical, so
/// oneDNN sees a row- or column-major matrix where there is one), or of `t`'s.
dnnl_memory_desc_t plain_md(std::span<const int64_t> dims, std::span<const int64_t> strides,
                            dnnl_data_type_t dt);
dnnl_memory_desc_t plain_md(const Tensor& t);
/// A descriptor that lets the primitive choose the layout.
dnnl_memory_desc_t any_md(std::span<const int64_t> dims, dnnl_data_type_t dt);
/// The oneDNN data type of an ember dtype, or dnnl_data_type_undef when oneDNN has none.
dnnl_data_type_t data_type(DType d);

/// One argument of an execution: a oneDNN argument id, the layout and the data.
struct Arg {
  int id;
  const dnnl_memory_desc_t* md;
  const void* data;
};
/// Runs `p` on this thread's stream and waits for it; `scratch` bytes of scratchpad (primitives
/// made with new_attr() want theirs from the caller) come from a per-thread buffer.
void execute(const Primitive& p, std::initializer_list<Arg> args, size_t scratch = 0);
void execute(const Primitive& p, std::span<const Arg> args, size_t scratch = 0);

/// The result of a call: `placed` (the caller's output, OpCall::out or a planner's; it must be a
/// contiguous f32 tensor of `shape`, else ValueError naming `op`), or fresh storage on `device`.
Tensor output_tensor(const Tensor& placed, const Shape& shape, Device device, const char* op);
/// The output a kernel's call placed, or an undefined tensor.
inline Tensor placed_output(const OpCall& c) { return c.out.empty() ? Tensor() : c.out[0]; }

/// Attributes with a caller-provided scratchpad (no allocation inside oneDNN per call).
Attr new_attr();
/// The scratchpad bytes `pd` needs.
size_t scratch_size(const PrimitiveDesc& pd);
/// Creates the primitive described by `pd`; false (and nothing created) when oneDNN has no
/// implementation or only its reference one (flex's kernels beat oneDNN's reference loops).
bool make_primitive(PrimitiveDesc& pd, Primitive& p);
/// True when oneDNN picked its reference implementation for `pd`.
bool is_reference(const PrimitiveDesc& pd);
/// The layout the primitive chose for one of its arguments (dnnl_query_src_md, ...).
dnnl_memory_desc_t query_md(const PrimitiveDesc& pd, dnnl_query_t what, int index = 0);
/// A reorder between two layouts of the same tensor (null when they are equal, unless asked).
Primitive make_reorder(const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
                       bool even_if_equal = false);

/// Appends `act` as an eltwise post-op.
void append_activation(dnnl_post_ops_t po, const Epilogue& ep);

// --- the primitive cache ---

/// A cache key: a short list of integers (op kind, dtypes, dims, strides, attributes, post-ops;
/// every primitive runs single-threaded, so no thread count). Filled without allocating; a key that
/// does not fit is marked and never cached.
struct Key {
  static constexpr int kCap = 192;
  int64_t v[kCap];
  int n = 0;
  bool overflow = false;
  void add(int64_t x) {
    if (n < kCap)
      v[n++] = x;
    else
      overflow = true;
  }
  void add(std::span<const int64_t> xs) {
    add(int64_t(xs.size()));
    for (int64_t x : xs) add(x);
  }
  void add_float(float f);
  /// The epilogue's scalars and flags (its tensors' layouts are the caller's to add).
  void add_epilogue(const Epilogue& ep);
  uint64_t hash() const;
  bool operator==(const Key& o) const;
};

/// What a cache entry holds: op-specific (primitives, chosen layouts), or nothing when oneDNN
/// cannot serve the call (the entry then records that, so the next identical call decides at once).
struct Entry {
  virtual ~Entry() = default;
  bool ok = false;
};
using EntryPtr = std::shared_ptr<const Entry>;
using BuildFn = EntryPtr (*)(const void* ctx);

/// The entry for `key`, built by build(ctx) on a miss (outside the cache's lock) and kept in a
/// bounded LRU list. Returns null for a key that overflowed (the caller builds and drops).
EntryPtr lookup(const Key& key, BuildFn build, const void* ctx);
template <class F>
EntryPtr lookup(const Key& key, const F& build) {
  return lookup(
      key, [](const void* c) { return (*static_cast<const F*>(c))(); }, &build);
}

/// The weights at `data` (inside `w`'s storage, in plain layout `from`) in the primitive's
/// layout `to`, made by `reorder`: for a frozen storage (Storage::frozen), a copy kept between
/// calls until a write bumps the storage's version or the weights are freed (dnnl_weights.cpp);
/// null otherwise, and the caller reorders into scratch of its own.
std::shared_ptr<const void> packed_weights(const Tensor& w, const void* data,
                                           const dnnl_memory_desc_t& from,
                                           const dnnl_memory_desc_t& to, const Primitive& reorder);

void note_primitive_created();
/// Counts an operand copied because oneDNN cannot read its layout (dnnl_stats().operand_copies).
void note_operand_copy();
/// Counts a call oneDNN ran (dnnl_stats().served).
void note_served();
/// Counts a convolution's input or output reordered (dnnl_stats().activation_reorders).
void note_activation_reorder();
// The cache's capacity: EMBER_DNNL_CACHE_CAPACITY entries, default 1024 (set_dnnl_cache_capacity).

}  // namespace ember::cpu::onednn
