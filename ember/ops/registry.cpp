#include "ember/ops/registry.h"

#include <mutex>

#include "ember/backends/backend.h"
#include "ember/error.h"
#include "ember/ops/profile_hook.h"

namespace ember {

const char* category_name(OpCategory c) {
  static const char* names[] = {"creation", "random", "unary", "binary", "ternary", "reduce",
                                "scan", "matmul", "index", "layout", "conv", "pool", "composite"};
  return names[int(c)];
}

namespace {
OpDef g_defs[kNumOps] = {
#define EMBER_X(n, cat) OpDef{#n, OpCategory::cat},
    EMBER_OPS(EMBER_X)
#undef EMBER_X
};
static_assert(sizeof(g_defs) / sizeof(g_defs[0]) == kNumOps);

std::unique_ptr<BackendImpl> g_backends[kNumBackends];

// Set while a decomposition runs below the layers, so its sub-ops are not recorded twice.
thread_local int t_bypass_layers = 0;
struct BypassGuard {
  BypassGuard() { ++t_bypass_layers; }
  ~BypassGuard() { --t_bypass_layers; }
};
}  // namespace

const OpDef& op_def(OpId op) { return g_defs[size_t(op)]; }
OpDef& op_def_mut(OpId op) { return g_defs[size_t(op)]; }

void set_infer_for_category(OpCategory category, InferFn fn) {
  for (auto& d : g_defs)
    if (d.category == category) d.infer = fn;
}

OpId op_from_name(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (name == g_defs[i].name) return OpId(i);
  detail::throw_value("op_from_name", "unknown op '" + std::string(name) + "'");
}

BackendImpl* backend_for(Backend b) { return g_backends[int(b)].get(); }
void register_backend(Backend b, std::unique_ptr<BackendImpl> impl) {
  g_backends[int(b)] = std::move(impl);
}

TensorList Layer::Next::operator()(const OpCall& call) const {
  if (rest_.empty()) return run_on_backend(call);
  return rest_.front()->call(call, Next(rest_.subspan(1)));
}

TensorList run_on_backend(const OpCall& call) {
  BackendImpl* b = backend_for(call.device.backend());
  if (!b)
    detail::throw_device(op_name(call.op), std::string("backend '") +
                                               backend_name(call.device.backend()) +
                                               "' is not built into this binary");
  const KernelEntry& k = b->kernel(call.op);
  DType key = call.meta.n ? call.meta.m[0].dtype : DType::F32;
  for (const Tensor& t : call.inputs)
    if (t.defined()) {
      key = t.dtype();
      break;
    }
  // Ops a kernel or decomposition runs internally are part of this op: no layer sees them.
  BypassGuard guard;
  if (k.fn && (k.dtypes & mask_of(key))) {
    if (profile::detail::g_enabled) [[unlikely]] return profile::detail::timed_kernel(k.fn, call);
    return k.fn(call);
  }
  const OpDef& def = op_def(call.op);
  if (def.decompose) return def.decompose(call.attrs, call.inputs);
  detail::throw_not_implemented(
      def.name, std::string("no kernel on backend '") + backend_name(call.device.backend()) +
                    "' for dtype " + std::string(dtype_name(key)) + " and no decomposition");
}

TensorList dispatch(OpId op, const Attrs& attrs, std::span<const Tensor> inputs) {
  detail::init();
  const OpDef& def = op_def(op);
  Device dev = attrs.device;
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
      dev = t.device();
    } else if (!t.device().same_place(dev)) {
      detail::throw_device(def.name, "expected all tensors on one device, found " + dev.str() +
                                         " and " + t.device().str() +
                                         " (move one with .to(device))");
    } else if (!dev.has_layers() && t.device().has_layers()) {
      dev = t.device();  // the op runs through the layers any of its inputs asks for
    }
  }
  if (!def.infer) detail::throw_not_implemented(def.name, "the op has no inference rule yet");
  MetaList meta;
  def.infer(op, attrs, inputs, meta);
  // Every result shape, views included, is checked here under the op's name: no tensor ever
  // gets a shape whose sizes or strides overflow (see check_shape).
  for (int i = 0; i < meta.n; ++i) check_shape(meta.m[i].shape, def.name, /*unknown_ok=*/true);
  OpCall call{op, attrs, inputs, meta, dev};
  if (t_bypass_layers == 0 && dev.has_layers()) return Layer::Next(dev.layers())(call);
  return run_on_backend(call);
}

Tensor dispatch1(OpId op, const Attrs& attrs, std::span<const Tensor> inputs) {
  TensorList out = dispatch(op, attrs, inputs);
  return std::move(out.front());
}

}  // namespace ember
