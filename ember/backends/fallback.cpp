// The host fallback for backends whose memory the host cannot read (backend.h, fallback.h).
// Every input storage is mirrored whole into host memory, so views keep their geometry and two
// inputs that share a storage share its mirror (copy's overlap check sees them alias); flex's
// kernel runs on the mirrors; a result that is a view of a mirror becomes the same view of the
// device storage, which is written back, and every other result is copied to a fresh device
// tensor. Synchronous: a fallback op is a sync point of its device.
#include "ember/backends/fallback.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/detail/capture.h"
#include "ember/error.h"

namespace ember::detail {
namespace {

std::atomic<int64_t> g_counts[kNumBackends][kNumOps];

bool fallback_disabled(Backend b) {
  static const bool cuda_off = [] {
    const char* e = std::getenv("EMBER_CUDA_FALLBACK");
    return e && std::string(e) == "error";
  }();
  return b == Backend::Cuda && cuda_off;
}

struct Mirror {
  Storage* device = nullptr;
  std::shared_ptr<Storage> host;
  bool written = false;
};

}  // namespace

bool host_fallback_applies(const OpCall& call, const char* why) {
  BackendImpl* flex = backend_for(Backend::Flex);
  if (!flex || !flex->supports(call)) return false;
  if (fallback_disabled(call.device.backend())) {
    if (op_def(call.op).decompose) return false;
    const std::string reason =
        why ? std::string(why)
            : std::string("no ") + backend_name(call.device.backend()) + " kernel for dtype " +
                  std::string(dtype_name(key_dtype(call)));
    throw_not_implemented(op_name(call.op),
                          reason + ", and EMBER_CUDA_FALLBACK=error turns off the host fallback");
  }
  return true;
}

TensorList run_decomposition(const OpCall& call) {
  return op_def(call.op).decompose(call.attrs, call.inputs);
}

void serve_decompositions(BackendImpl& b) {
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    if (d.decompose && !b.kernel(OpId(i)).fn && d.category != OpCategory::User)
      b.set_kernel(OpId(i), run_decomposition, kAllDTypes);
  }
}

bool runs_decomposition(const BackendImpl& b, OpId op) {
  return b.kernel(op).fn == run_decomposition;
}

TensorList run_host_fallback(const OpCall& call) {
  detail::forbid_in_capture(call.device, op_name(call.op),
                            "an op without a kernel on this device (it runs on the host, a sync)");
  BackendImpl* dev = backend_for(call.device.backend());
  BackendImpl* flex = backend_for(Backend::Flex);
  g_counts[int(call.device.backend())][size_t(call.op)].fetch_add(1, std::memory_order_relaxed);
  const Device host = Device::flex();
  std::vector<Mirror> mirrors;
  auto mirror_of = [&](Storage& s) -> Mirror& {
    for (Mirror& m : mirrors)
      if (m.device == &s) return m;
    ready(s);
    Mirror m{&s, flex->allocate(s.nbytes, host)};
    dev->copy_to_host(m.host->data, s, 0, s.nbytes);
    mirrors.push_back(std::move(m));
    return mirrors.back();
  };
  std::vector<Tensor> inputs;
  inputs.reserve(call.inputs.size());
  for (const Tensor& t : call.inputs) {
    if (!t.defined()) {
      inputs.emplace_back();
    } else if (is_constant(t)) {
      inputs.push_back(constant_tensor(t.impl()->constant, t.dtype(), host,
                                       t.impl()->wrapped_number));
    } else {
      auto impl = std::make_shared<TensorImpl>(*t.impl());
      impl->device = host;
      impl->autograd.reset();
      impl->storage = mirror_of(*t.impl()->storage).host;
      inputs.emplace_back(std::move(impl));
    }
  }
  Attrs attrs = call.attrs;
  if (attrs.device.backend() == call.device.backend()) attrs.device = host;
  const OpCall hc{call.op, attrs, inputs, call.meta, host};
  TensorList outs = flex->kernel(call.op).fn(hc);
  for (Tensor& h : outs) {
    if (!h.defined()) continue;
    if (is_constant(h)) {
      h = constant_tensor(h.impl()->constant, h.dtype(), call.device, h.impl()->wrapped_number);
      continue;
    }
    Mirror* m = nullptr;
    for (Mirror& x : mirrors)
      if (x.host == h.impl()->storage) m = &x;
    if (m) {  // a view of (or written into) an input: the same view of the device storage
      m->written = true;
      auto impl = std::make_shared<TensorImpl>(*h.impl());
      impl->device = call.device;
      for (const Tensor& t : call.inputs)
        if (t.defined() && t.impl()->storage.get() == m->device) impl->storage = t.impl()->storage;
      h = Tensor(std::move(impl));
      continue;
    }
    Tensor hc_out = h.is_contiguous() ? h : h.contiguous();
    Tensor d = empty_tensor(h.shape(), h.dtype(), call.device);
    dev->copy_from_host(*d.impl()->storage, 0, hc_out.raw_data(), hc_out.nbytes());
    h = std::move(d);
  }
  for (Mirror& m : mirrors)
    if (m.written) dev->copy_from_host(*m.device, 0, m.host->data, m.host->nbytes);
  return outs;
}

int64_t fallback_count(Backend b, OpId op) {
  return g_counts[int(b)][size_t(op)].load(std::memory_order_relaxed);
}

void reset_fallback_counts(Backend b) {
  for (auto& c : g_counts[int(b)]) c.store(0);
}

}  // namespace ember::detail
