// The parts of the backend interface every backend shares: synchronous defaults for the
// asynchronous members, kernel selection, and errors that kernels report after the fact.
#include "ember/backends/backend.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>

#include "ember/backends/deferred_errors.h"

namespace ember {

void BackendImpl::copy_device(Storage& dst, size_t dst_off, const Storage& src, size_t src_off,
                              size_t n, Stream* stream) {
  if (!n) return;
  if (is_host()) {
    std::memmove(static_cast<char*>(dst.data) + dst_off,
                 static_cast<const char*>(src.data) + src_off, n);
    return;
  }
  std::vector<char> host(n);  // a backend without its own device copy stages through the host
  copy_to_host(host.data(), src, src_off, n);
  copy_from_host(dst, dst_off, host.data(), n);
}

std::shared_ptr<Event> BackendImpl::record_event(Stream*) {
  auto e = std::make_shared<Event>();
  e->host_ms = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  return e;
}

DType key_dtype(const OpCall& call) {
  for (const Tensor& t : call.inputs)
    if (t.defined()) return t.dtype();
  return call.meta.n ? call.meta.m[0].dtype : DType::F32;
}

bool BackendImpl::supports(const OpCall& call) const {
  const KernelEntry& k = kernel(call.op);
  return k.fn && (k.dtypes & mask_of(key_dtype(call)));
}

namespace detail {
namespace {
std::mutex g_err_mu;
std::exception_ptr g_errors[kNumBackends][16];
thread_local DeferredErrors* t_errors = nullptr;  // a DeferredErrors::Scope's
}  // namespace

DeferredErrors::Scope::Scope(DeferredErrors& e) : prev_(t_errors) { t_errors = &e; }
DeferredErrors::Scope::~Scope() { t_errors = prev_; }

void defer_error(Device d, std::exception_ptr e) {
  std::lock_guard lock(g_err_mu);
  std::exception_ptr& slot = t_errors ? t_errors->slot(d) : g_errors[int(d.backend())][d.index() & 15];
  if (!slot) slot = std::move(e);  // the first error wins: later ones often follow from it
}

void raise_deferred_errors(Device d) {
  std::exception_ptr e;
  {
    std::lock_guard lock(g_err_mu);
    std::swap(e, t_errors ? t_errors->slot(d) : g_errors[int(d.backend())][d.index() & 15]);
  }
  if (e) std::rethrow_exception(e);
}
}  // namespace detail

}  // namespace ember
