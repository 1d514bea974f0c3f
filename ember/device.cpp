#include "ember/device.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <ostream>
#include <vector>

#include "ember/backends/backend.h"
#include "ember/error.h"
#ifndef EMBER_FLEX_ONLY
#include "ember/fusion/layer.h"
#endif
#ifdef EMBER_REMOTE
#include "ember/backends/remote/remote_backend.h"
#endif

namespace ember {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Flex: return "flex";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Remote: return "remote";
  }
  return "?";
}

namespace {
// Interned layer stacks: a Device stores a 16-bit id so it stays trivially copyable. Stacks are
// never freed or changed once published, so reading one needs no lock (the dispatch hot path).
constexpr size_t kMaxStacks = 4096;
struct LayerStacks {
  std::mutex mu;  // serialises interning only
  std::deque<std::vector<std::shared_ptr<Layer>>> owners{{}};
  std::deque<std::vector<Layer*>> raw{{}};
  std::atomic<const std::vector<Layer*>*> published[kMaxStacks] = {};
  uint16_t intern(std::vector<std::shared_ptr<Layer>> stack) {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < owners.size(); ++i)
      if (owners[i] == stack) return uint16_t(i);
    if (owners.size() >= kMaxStacks)
      detail::throw_value("Device", "too many distinct layer stacks (" + std::to_string(kMaxStacks) + ")");
    std::vector<Layer*> r;
    for (auto& l : stack) r.push_back(l.get());
    owners.push_back(std::move(stack));
    raw.push_back(std::move(r));
    published[raw.size() - 1].store(&raw.back(), std::memory_order_release);
    return uint16_t(owners.size() - 1);
  }
  std::vector<std::shared_ptr<Layer>> get(uint16_t id) {
    std::lock_guard lock(mu);
    return owners[id];
  }
};
LayerStacks& stacks() {
  static LayerStacks s;
  return s;
}
Device g_default_device;
}  // namespace

Device Device::flex() { return Device(Backend::Flex, 0, 0); }

namespace {
// The layers of a lazy device (cpu, cuda): ops queue and run fused at a sync point.
// EMBER_FUSION=0 makes them eager.
uint16_t lazy_stack() {
#ifdef EMBER_FLEX_ONLY  // the WebAssembly build: flex alone, no fusion layer (cmake/wasm.cmake)
  return 0;
#else
  static const uint16_t stack = [] {
    const char* env = std::getenv("EMBER_FUSION");
    if (env && std::string(env) == "0") return uint16_t(0);
    return stacks().intern({fusion::fusion_layer()});
  }();
  return stack;
#endif
}
}  // namespace

Device Device::cpu() {
  detail::init();
  if (!backend_for(Backend::Cpu)) detail::throw_device("Device::cpu", "the cpu backend was not built");
  return Device(Backend::Cpu, 0, lazy_stack());
}

Device Device::cuda(int index) {
  detail::init();
  if (!backend_for(Backend::Cuda))
    detail::throw_device("Device::cuda", "cuda:" + std::to_string(index) +
                                             " requested, but this build of ember has no CUDA "
                                             "backend (configure with EMBER_CUDA=ON on a machine "
                                             "with the CUDA toolkit)");
  backend_for(Backend::Cuda)->check_device(index, "Device::cuda");
  return Device(Backend::Cuda, int16_t(index), lazy_stack());  // lazy, as the cpu
}

Device::Device(DeviceType type, int index) {
  if (type == DeviceType::Cuda) {
    *this = cuda(index < 0 ? 0 : index);  // libtorch's -1: the current device
  } else if (type == DeviceType::Cpu) {
    if (index != 0 && index != -1)
      detail::throw_value("Device", "kCPU has index 0 only, found " + std::to_string(index));
    const Device d = default_device();
    *this = d.is_cpu() ? d : flex();
  } else {
    detail::throw_value("Device", "a remote device needs its URL: use Device::remote(url)");
  }
}

Device Device::remote(const std::string& url) {
  detail::init();
#ifdef EMBER_REMOTE
  const int index = remote::detail::open(url);  // connects, or reuses the url's connection
  const Device d(Backend::Remote, int16_t(index), 0);
  remote::detail::opened(index, d);
  return d;
#else
  detail::throw_device("Device::remote", "'" + url +
                                             "' requested, but this build of ember has no "
                                             "remote backend (configure with EMBER_REMOTE=ON, "
                                             "with Boost.Beast and OpenSSL installed)");
#endif
}

Device Device::with_layer(std::shared_ptr<Layer> layer, bool outermost) const {
  if (!layer) detail::throw_value("Device::with_layer", "expected a layer, found null");
  auto s = stacks().get(stack_);
  if (outermost) {  // below the leading layers (mixed precision), unless it leads itself
    auto at = s.begin();
    if (!layer->leads())
      while (at != s.end() && (*at)->leads()) ++at;
    s.insert(at, std::move(layer));
  } else {  // innermost, but above a deferring layer: those run what every other layer passed on
    auto at = s.end();
    while (at != s.begin() && (*(at - 1))->defers()) --at;
    s.insert(at, std::move(layer));
  }
  return Device(backend_, index_, stacks().intern(std::move(s)));
}

Device Device::replace_layer(const Layer* old, std::shared_ptr<Layer> with) const {
  auto s = stacks().get(stack_);
  for (auto& l : s)
    if (l.get() == old) l = with;
  return Device(backend_, index_, stacks().intern(std::move(s)));
}

Device Device::without_layers() const { return Device(backend_, index_, 0); }

Device Device::with_layers_of(Device o) const {
  if (o.stack_ == stack_ || o.stack_ == 0) return *this;
  if (stack_ == 0) return Device(backend_, index_, o.stack_);
  // Merged stacks are interned once; a thread keeps the few it meets (the dispatch hot path).
  thread_local std::vector<std::pair<uint32_t, uint16_t>> seen;
  const uint32_t key = uint32_t(stack_) << 16 | o.stack_;
  for (const auto& [k, s] : seen)
    if (k == key) return Device(backend_, index_, s);
  auto mine = stacks().get(stack_), theirs = stacks().get(o.stack_);
  std::vector<std::shared_ptr<Layer>> merged;
  for (auto* from : {&theirs, &mine})
    for (auto& l : *from)
      if (!l->defers() && std::find(merged.begin(), merged.end(), l) == merged.end())
        merged.push_back(l);
  // One leading layer (mixed precision) per stack: this device's own wins.
  std::stable_partition(merged.begin(), merged.end(), [](const auto& l) { return l->leads(); });
  if (merged.size() > 1 && merged[0]->leads() && merged[1]->leads()) {
    auto own = std::find_if(mine.begin(), mine.end(), [](const auto& l) { return l->leads(); });
    if (own != mine.end()) merged[0] = *own;
    merged.erase(std::remove_if(merged.begin() + 1, merged.end(),
                                [](const auto& l) { return l->leads(); }),
                 merged.end());
  }
  for (auto* from : {&mine, &theirs})
    for (auto& l : *from)
      if (l->defers() && std::find(merged.begin(), merged.end(), l) == merged.end())
        merged.push_back(l);
  const uint16_t s = stacks().intern(std::move(merged));
  if (seen.size() < 64) seen.emplace_back(key, s);
  return Device(backend_, index_, s);
}

Device Device::eager() const {
  auto s = stacks().get(stack_);
  std::erase_if(s, [](const std::shared_ptr<Layer>& l) { return l->defers(); });
  return Device(backend_, index_, stacks().intern(std::move(s)));
}

bool Device::is_lazy() const {
  for (Layer* l : layers())
    if (l->defers()) return true;
  return false;
}

int device_count(Backend b) {
  detail::init();
  BackendImpl* impl = backend_for(b);
  return impl ? impl->device_count() : 0;
}

void synchronize(Device d) {
  for (Layer* l : d.layers()) l->sync(d);
  if (BackendImpl* b = backend_for(d.backend())) b->synchronize(d);
  detail::raise_deferred_errors(d);
}

void flush(Device d) {
  for (Layer* l : d.layers()) l->sync(d);
}

std::span<Layer* const> Device::layers() const {
  if (stack_ == 0) return {};
  const std::vector<Layer*>* r = stacks().published[stack_].load(std::memory_order_acquire);
  return {r->data(), r->size()};
}

std::string Device::str() const {
  // A lazy device prints as its backend; the eager form of a backend that is lazy by default
  // says so.
  std::string s = backend_name(backend_);
  if (backend_ == Backend::Cuda || backend_ == Backend::Remote) s += ":" + std::to_string(index_);
  for (Layer* l : layers())
    if (!l->defers()) s += std::string("+") + l->name();
  if (backend_ == Backend::Cpu && !is_lazy() && Device::cpu().is_lazy()) s += "(eager)";
  return s;
}

std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

Device default_device() { return g_default_device; }
void set_default_device(Device d) { g_default_device = d; }

}  // namespace ember
