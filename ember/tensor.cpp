#include "ember/tensor.h"

#include <atomic>
#include <cstring>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>

#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/detail/capture.h"
#include "ember/detail/text.h"
#include "ember/detail/file.h"
#include "ember/tensor_impl.h"
#include "ember/error.h"
#include "ember/ember.h"
#include "ember/store/mapped.h"

namespace ember {

void TensorImpl::refresh() {
  numel = numel_of(shape);
  contiguous = true;
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) {
      contiguous = false;
      break;
    }
    expect *= shape[i];
  }
}

namespace {
const TensorImpl& need(const std::shared_ptr<TensorImpl>& p, const char* what) {
  if (!p) detail::throw_value(what, "the tensor is undefined");
  return *p;
}
}  // namespace

const Shape& Tensor::shape() const { return need(impl_, "shape").shape; }
const Shape& Tensor::strides() const { return need(impl_, "strides").strides; }
int64_t Tensor::size(int64_t d) const {
  const auto& s = shape();
  return s[size_t(wrap_dim(d, int64_t(s.size()), "size"))];
}
int64_t Tensor::stride(int64_t d) const {
  const auto& s = strides();
  return s[size_t(wrap_dim(d, int64_t(s.size()), "stride"))];
}
int64_t Tensor::dim() const { return int64_t(shape().size()); }
int64_t Tensor::numel() const { return need(impl_, "numel").numel; }
int64_t Tensor::offset() const { return need(impl_, "offset").offset; }
DType Tensor::dtype() const { return need(impl_, "dtype").dtype; }
Device Tensor::device() const { return need(impl_, "device").device; }
bool Tensor::is_contiguous() const { return need(impl_, "is_contiguous").contiguous; }
bool Tensor::is_alias_of(const Tensor& o) const {
  return impl_ && o.impl_ && impl_->storage == o.impl_->storage;
}
uint64_t Tensor::version() const { return need(impl_, "version").storage->version.load(); }

void* Tensor::raw_data() const {
  const TensorImpl& i = need(impl_, "data_ptr");
  BackendImpl* b = backend_for(i.device.backend());
  if (!b || !b->is_host())
    detail::throw_device("data_ptr", "expected a tensor in host memory, found one on " +
                                         i.device.str() + " (copy it with .to(Device::flex()))");
  detail::ready(*i.storage);  // a pending tensor is written first (a sync point)
  store::detail::check_storage(*i.storage, "data_ptr");
  return i.data();
}

void Tensor::check_dtype(DType want, const char* op) const {
  if (dtype() != want)
    detail::throw_dtype(op, "expected dtype " + std::string(dtype_name(want)) + ", found " +
                                std::string(dtype_name(dtype())));
}

namespace {
Scalar scalar_at(const void* p, DType d) {
  switch (d) {
#define EMBER_X(e, T, n) \
  case DType::e: {       \
    T v;                 \
    std::memcpy(&v, p, sizeof v); \
    return Scalar(v);    \
  }
    EMBER_DTYPES(EMBER_X)
#undef EMBER_X
    case DType::C64: {
      float v[2];
      std::memcpy(v, p, sizeof v);
      return Scalar(detail::ComplexParts<float>{v[0], v[1]});
    }
    case DType::C128: {
      double v[2];
      std::memcpy(v, p, sizeof v);
      return Scalar(detail::ComplexParts<double>{v[0], v[1]});
    }
  }
  return {};
}
void store_scalar(void* p, DType d, Scalar s) {
  switch (d) {
#define EMBER_X(e, T, n)  \
  case DType::e: {        \
    T v = s.to<T>();      \
    std::memcpy(p, &v, sizeof v); \
    return;               \
  }
    EMBER_DTYPES(EMBER_X)
#undef EMBER_X
    case DType::C64: {
      const float v[2] = {float(s.to_double()), float(s.imag())};
      std::memcpy(p, v, sizeof v);
      return;
    }
    case DType::C128: {
      const double v[2] = {s.to_double(), s.imag()};
      std::memcpy(p, v, sizeof v);
      return;
    }
  }
}
std::string scalar_str(Scalar s) {
  if (s.is_complex())
    return ember::detail::format_g(s.to_double(), 17) + (s.imag() < 0 ? "" : "+") +
           ember::detail::format_g(s.imag(), 17) + "j";
  if (s.is_floating()) return ember::detail::format_g(s.to_double(), 17);
  return s.is_bool() ? (s.to_bool() ? "true" : "false") : std::to_string(s.to_int());
}
}  // namespace

void Tensor::copy_elements_to(void* dst, DType dst_dtype, int64_t expect, const char* op) const {
  const TensorImpl& i = need(impl_, op);
  const bool item = std::string_view(op) == "item";
  if (item && i.numel != 1)
    detail::throw_value(op, "expected a tensor with one element, found shape " +
                                shape_str(i.shape) + " (" + std::to_string(i.numel) +
                                " elements)");
  if (item && dst_dtype != i.dtype) {
    // item<T>() is checked like libtorch's: a value T cannot hold is an error, not a wrap.
    alignas(8) unsigned char raw[16];
    copy_elements_to(raw, i.dtype, 1, op);
    Scalar v = scalar_at(raw, i.dtype);
    if (!v.fits(dst_dtype))
      detail::throw_dtype(op, "the value " + scalar_str(v) + " (" +
                                  std::string(dtype_name(i.dtype)) + ") does not fit in " +
                                  std::string(dtype_name(dst_dtype)));
    store_scalar(dst, dst_dtype, v);
    return;
  }
  if (expect != i.numel) detail::throw_shape(op, "element count changed while copying");
  if (i.numel == 0) return;
  Tensor src = (dtype() == dst_dtype ? *this : cast(*this, dst_dtype)).contiguous();
  const TensorImpl& s = *src.impl_;
  detail::ready(*s.storage);  // a sync point: queued work that writes it runs now
  store::detail::check_storage(*s.storage, op);
  const uint64_t faults = detail::map_faults();
  BackendImpl* b = backend_for(s.device.backend());
  b->copy_to_host(dst, *s.storage, size_t(s.offset) * ember::itemsize(dst_dtype),
                  size_t(s.numel) * ember::itemsize(dst_dtype));
  if (detail::map_faults() != faults) [[unlikely]] store::detail::check_storage(*s.storage, op);
}

Scalar Tensor::item() const {
  switch (dtype()) {
    case DType::Bool: return item<bool>();
    case DType::U8: case DType::I8: case DType::I16: case DType::I32: case DType::I64:
      return item<int64_t>();
    case DType::C64: case DType::C128: {
      double v[2];
      copy_elements_to(v, DType::C128, 1, "item");
      return Scalar(detail::ComplexParts<double>{v[0], v[1]});
    }
    default: return item<double>();
  }
}

TensorData Tensor::data() const {
  TensorData d;
  d.shape = shape();
  d.dtype = dtype();
  d.bytes.resize(nbytes());
  copy_elements_to(d.bytes.data(), d.dtype, numel(), "data");
  return d;
}


// stdio, not iostreams: the WebAssembly build links no iostreams (docs/web.md).
void Tensor::print() const {
  const std::string s = str() + "\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

Tensor Tensor::to(Device d) const {
  const TensorImpl& i = need(impl_, "to");
  if (i.device == d) return *this;
  if (i.device.same_place(d)) return detail::retag(*this, d);
  if (!backend_for(d.backend()))
    detail::throw_device("to", std::string("backend '") + backend_name(d.backend()) +
                                   "' is not built into this binary");
  // Different places: a contiguous copy moves; the host side is read or written in place.
  Tensor src = contiguous();
  Tensor out = detail::empty_tensor(i.shape, i.dtype, d);
  if (i.numel == 0) return out;
  detail::ready(*src.impl_->storage);
  store::detail::check_storage(*src.impl_->storage, "to");
  const uint64_t faults = detail::map_faults();
  BackendImpl* from = backend_for(src.device().backend());
  BackendImpl* to_b = backend_for(d.backend());
  Storage& from_s = *src.impl_->storage;
  Storage& to_s = *out.impl_->storage;
  const size_t off = size_t(src.offset()) * itemsize(), n = nbytes();
  if (from == to_b) {  // two devices of one backend (cuda:0 -> cuda:1)
    from->copy_device(to_s, 0, from_s, off, n, nullptr);
  } else if (to_b->is_host()) {
    from->copy_to_host(to_s.data, from_s, off, n);
  } else if (from->is_host()) {
    to_b->copy_from_host(to_s, 0, static_cast<const char*>(from_s.data) + off, n);
  } else {
    std::vector<uint8_t> host(n);
    from->copy_to_host(host.data(), from_s, off, n);
    to_b->copy_from_host(to_s, 0, host.data(), n);
  }
  if (detail::map_faults() != faults) [[unlikely]] store::detail::check_storage(from_s, "to");
  return out;
}

Tensor Tensor::to(DType t) const { return dtype() == t ? *this : cast(*this, t); }
Tensor Tensor::contiguous() const { return ember::contiguous(*this); }
Tensor Tensor::clone() const { return ember::clone(*this); }
Tensor Tensor::detach() const {
  const TensorImpl& i = need(impl_, "detach");
  auto impl = std::make_shared<TensorImpl>(i);
  impl->autograd.reset();
  return Tensor(std::move(impl));
}

Tensor Tensor::reshape(const Shape& s) const { return ember::reshape(*this, s); }
Tensor Tensor::view(const Shape& s) const { return ember::view(*this, s); }
Tensor Tensor::flatten(int64_t a, int64_t b) const { return ember::flatten(*this, a, b); }
Tensor Tensor::permute(const Shape& d) const { return ember::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ember::transpose(*this, a, b); }
Tensor Tensor::t() const {
  if (dim() > 2)
    detail::throw_shape("t", "expected a tensor of at most 2 dims, found " +
                                 std::to_string(dim()));
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::squeeze() const { return ember::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return ember::squeeze(*this, {d}); }
Tensor Tensor::unsqueeze(int64_t d) const { return ember::unsqueeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return ember::expand(*this, s); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> a, std::optional<int64_t> b,
                     int64_t step) const {
  return ember::slice(*this, dim, a, b, step);
}
Tensor Tensor::select(int64_t dim, int64_t i) const { return ember::select(*this, dim, i); }
Tensor Tensor::narrow(int64_t dim, int64_t s, int64_t l) const {
  return ember::narrow(*this, dim, s, l);
}
Tensor Tensor::diagonal(int64_t o, int64_t a, int64_t b) const {
  return ember::diagonal(*this, o, a, b);
}

Tensor& Tensor::copy_(const Tensor& src) {
  Attrs a;
  dispatch(OpId::copy, a, {*this, src});
  impl_->storage->version.fetch_add(1);
  return *this;
}
Tensor& Tensor::fill_(Scalar v) {
  if (!v.fits(dtype()))  // checked like full's value, and named after what the user called
    detail::throw_dtype("fill_", "the value " + scalar_str(v) + " does not fit in " +
                                     std::string(dtype_name(dtype())));
  return copy_(scalar_tensor(v, dtype(), device()));
}
Tensor& Tensor::uniform_(double lo, double hi) {
  return copy_(uniform(lo, hi, shape(), {dtype(), device()}));
}
Tensor& Tensor::normal_(double mean, double sd) {
  return copy_(normal(mean, sd, shape(), {dtype(), device()}));
}

// --- host data in ---
Device resolve_device(std::optional<Device> d) { return d ? *d : default_device(); }

namespace detail {
namespace {
// Live TensorImpls are counted per thread, each count on a cache line of its own: one global
// counter, bumped by every thread that makes or drops a tensor (a remote client and its server
// session, loader workers), bounced between cores on every op. live_tensors() adds them up; a
// thread's count outlives the thread (a tensor made there may die elsewhere), so the counts are
// never freed.
struct alignas(64) ThreadCount {
  std::atomic<int64_t> n{0};
};
struct CountRegistry {
  std::mutex m;
  std::deque<ThreadCount> counts;  // stable addresses
};
CountRegistry& count_registry() {
  static CountRegistry* r = new CountRegistry;  // outlives every thread's last tensor
  return *r;
}
thread_local ThreadCount* t_count = nullptr;  // trivially destructible: valid during thread exit
ThreadCount& my_count() {
  ThreadCount* c = t_count;
  if (!c) [[unlikely]] {
    CountRegistry& r = count_registry();
    std::lock_guard<std::mutex> lock(r.m);
    c = t_count = &r.counts.emplace_back();
  }
  return *c;
}
alignas(64) std::atomic<int64_t> g_live_bytes{0};
alignas(64) std::atomic<int64_t> g_peak_bytes{0};
}  // namespace
LiveCount::LiveCount() { my_count().n.fetch_add(1, std::memory_order_relaxed); }
LiveCount::LiveCount(const LiveCount&) { my_count().n.fetch_add(1, std::memory_order_relaxed); }
LiveCount::~LiveCount() { my_count().n.fetch_sub(1, std::memory_order_relaxed); }
void track_storage_bytes(int64_t delta) {
  int64_t now = g_live_bytes.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now)) {
  }
}
int64_t live_tensors() {
  CountRegistry& r = count_registry();
  std::lock_guard<std::mutex> lock(r.m);
  int64_t n = 0;
  for (const ThreadCount& c : r.counts) n += c.n.load(std::memory_order_relaxed);
  return n;
}
int64_t live_storage_bytes() { return g_live_bytes.load(); }
int64_t peak_storage_bytes() { return g_peak_bytes.load(); }
void reset_peak_storage_bytes() { g_peak_bytes.store(g_live_bytes.load()); }

void check_value_count(size_t n, const Shape& shape) {
  check_shape(shape, "tensor");  // negative sizes could multiply to the right count
  if (int64_t(n) != numel_of(shape))
    throw_shape("tensor", std::to_string(n) + " values given for shape " + shape_str(shape) +
                              " which holds " + std::to_string(numel_of(shape)));
}

void check_row_length(size_t got, size_t want) {
  if (got != want)
    throw_shape("tensor", "nested lists must be rectangular: a row of " + std::to_string(got) +
                              " entries beside one of " + std::to_string(want));
}

Tensor empty_tensor(const Shape& shape, DType dtype, Device device) {
  init();
  check_shape(shape, "empty");  // ops check their results' shapes earlier, under their own name
  BackendImpl* b = backend_for(device.backend());
  if (!b)
    throw_device("empty", std::string("backend '") + backend_name(device.backend()) +
                              "' is not built into this binary");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->device = device;
  impl->numel = numel_of(shape);
  impl->contiguous = true;
  impl->storage = b->allocate(size_t(impl->numel) * itemsize(dtype), device);
  return Tensor(std::move(impl));
}

Tensor constant_tensor(Scalar v, DType dtype, Device device, bool wrapped) {
  init();
  auto impl = std::make_shared<TensorImpl>();
  impl->strides = {};
  impl->dtype = dtype;
  impl->device = device.without_layers();
  impl->wrapped_number = wrapped;
  impl->is_constant = true;
  auto st = std::make_shared<Storage>();
  st->nbytes = itemsize(dtype);
  st->place = impl->device;
  st->data = st->inline_bytes;
  switch (dtype) {
#define EMBER_X(e, T, n)                              \
  case DType::e: {                                    \
    const T x = v.to<T>();                            \
    std::memcpy(st->inline_bytes, &x, sizeof(T));     \
    impl->constant = Scalar(x); /* as the dtype holds it */ \
    break;                                            \
  }
    EMBER_DTYPES(EMBER_X)
#undef EMBER_X
    case DType::C64:
    case DType::C128:
      store_scalar(st->inline_bytes, dtype, v);
      impl->constant = scalar_at(st->inline_bytes, dtype);
      break;
  }
  impl->storage = std::move(st);
  return Tensor(std::move(impl));
}

void deferred_check(const Tensor& ok, const char* op, const std::string& msg) {
  // The check reads its result on the host when the queue runs: not inside a graph.
  if (capture_on(ok.device())) [[unlikely]]
    throw_capture(op, "checks its inputs on the host (" + msg +
                          "), which a captured step cannot; run it outside ember::capture");
  const Tensor all_ok = all(ok);
  auto check = [all_ok, op = std::string(op), msg] {
    if (!all_ok.item<bool>()) throw ValueError("[" + op + "] " + msg);
  };
  Storage& st = *all_ok.impl()->storage;
  if (PendingWrite* p = st.pending.load(std::memory_order_acquire)) p->on_ready(st, check);
  else check();
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl& b = *base.impl();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = b.dtype;
  impl->device = b.device;
  impl->storage = b.storage;
  impl->is_view = true;
  impl->refresh();
  return Tensor(std::move(impl));
}

Tensor retag(const Tensor& t, Device d) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->device = d;
  impl->autograd.reset();
  return Tensor(std::move(impl));
}
}  // namespace detail

Tensor from_blob_copy(const void* data, DType src_dtype, const Shape& shape, DType dtype,
                      Device device) {
  Tensor host = detail::empty_tensor(shape, src_dtype, device.without_layers());
  if (host.numel() > 0) {
    BackendImpl* b = backend_for(device.backend());
    b->copy_from_host(*host.impl()->storage, 0, data, host.nbytes());
  }
  Tensor out = src_dtype == dtype ? host : cast(host, dtype);
  return out.device() == device ? out : detail::retag(out, device);
}

Tensor scalar_tensor(Scalar v, std::optional<DType> dtype, std::optional<Device> device) {
  return full({}, v, {dtype.value_or(v.dtype()), device});
}

}  // namespace ember
