#include "ember/ops/registry.h"

#include "ember/ops/complex_route.h"

#include <mutex>

#include "ember/amp/autocast.h"
#include "ember/backends/backend.h"
#include "ember/backends/fallback.h"
#include "ember/detail/capture.h"
#include "ember/detail/file.h"
#include "ember/error.h"
#include "ember/ops/arity.h"
#include "ember/ops/profile_hook.h"
#include "ember/store/mapped.h"

namespace ember {

const char* category_name(OpCategory c) {
  static const char* names[] = {"creation", "random", "unary", "binary", "ternary", "reduce",
                                "scan", "matmul", "index", "layout", "conv", "pool", "composite", "linalg",
                                "user"};
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
// Set while a layer expands a decomposition itself: dispatch starts at that layer.
thread_local const Layer* t_floor = nullptr;
// The op a backend kernel runs (outermost), for allocators' out-of-memory messages.
thread_local const char* t_current_op = nullptr;
struct CurrentOp {
  const char* prev;
  explicit CurrentOp(const char* op) : prev(t_current_op) {
    if (!prev) t_current_op = op;
  }
  ~CurrentOp() { t_current_op = prev; }
};
}  // namespace

const char* detail::current_op() { return t_current_op; }

bool Attrs::operator==(const Attrs& o) const {
  return ints == o.ints && ints2 == o.ints2 && ints3 == o.ints3 && ints4 == o.ints4 && i == o.i &&
         __builtin_memcmp(f.data(), o.f.data(), sizeof f) == 0 && b == o.b && s == o.s &&
         dtype == o.dtype && has_dtype == o.has_dtype && mode == o.mode && device == o.device &&
         seed == o.seed && offset == o.offset;
}

size_t Attrs::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  };
  for (const IntVec* v : {&ints, &ints2, &ints3, &ints4}) {
    mix(v->size());
    for (int64_t x : *v) mix(uint64_t(x));
  }
  for (int64_t x : i) mix(uint64_t(x));
  for (double x : f) {
    uint64_t u;
    __builtin_memcpy(&u, &x, sizeof u);
    mix(u);
  }
  mix(uint64_t(b[0]) | uint64_t(b[1]) << 1 | uint64_t(b[2]) << 2 | uint64_t(b[3]) << 3);
  for (const Scalar& x : s) mix(x.bits());
  mix(uint64_t(dtype) | uint64_t(has_dtype) << 8 | uint64_t(mode) << 16);
  mix(uint64_t(device.backend()) | uint64_t(uint16_t(device.index())) << 8);
  mix(seed);
  mix(offset);
  return size_t(h);
}

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

LayerFloor::LayerFloor(const Layer* layer) : prev_(t_floor) { t_floor = layer; }
LayerFloor::~LayerFloor() { t_floor = prev_; }

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
  // Ops a kernel or decomposition runs internally are part of this op: no layer sees them.
  BypassGuard guard;
  CurrentOp current(op_def(call.op).name);
  // A fault on a mapped page of a cut file while this op ran: refuse what it read (it is zeros).
  const uint64_t faults = detail::map_faults();
  TensorList outs;
  if (b->supports(call)) {
    const Kernel fn = b->kernel(call.op).fn;
    if (profile::detail::g_enabled) [[unlikely]] outs = profile::detail::timed_kernel(fn, call);
    else outs = fn(call);
  } else if (!b->is_host() && detail::host_fallback_applies(call)) {
    outs = detail::run_host_fallback(call);  // no device kernel yet: flex's, on host copies
  } else {
    const OpDef& def = op_def(call.op);
    if (!def.decompose)
      detail::throw_not_implemented(
          def.name, std::string("no kernel on backend '") + backend_name(call.device.backend()) +
                        "' for dtype " + std::string(dtype_name(key_dtype(call))) +
                        " and no decomposition");
    outs = def.decompose(call.attrs, call.inputs);
  }
  if (detail::map_faults() != faults) [[unlikely]]
    store::detail::check_inputs(call.inputs, op_def(call.op).name);
  // Placed outputs: a kernel (or decomposition) that made its own results is copied into them.
  for (size_t i = 0; i < call.out.size() && i < outs.size(); ++i)
    if (outs[i].impl() != call.out[i].impl()) {
      Attrs none;
      Tensor pair[] = {call.out[i], outs[i]};
      MetaList meta;
      meta.add(call.out[i].shape(), call.out[i].dtype());
      OpCall copy{OpId::copy, none, pair, meta, call.device.without_layers(), call.stream};
      b->kernel(OpId::copy).fn(copy);
      outs[i] = call.out[i];
    }
  return outs;
}

TensorList dispatch(OpId op, const Attrs& attrs, std::span<const Tensor> inputs) {
  detail::init();
  // Before anything reads inputs[k]: inference rules, layers and kernels trust the count.
  detail::check_arity(op, inputs.size());
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
    } else {
      dev = dev.with_layers_of(t.device());  // through every layer any input asks for
    }
  }
  // Complex operands: ops without a complex form are refused by name before inference (and
  // mixed precision leaves complex alone, as torch's autocast does).
  const bool cplx = detail::touches_complex(attrs, inputs);
  if (cplx) [[unlikely]]
    detail::check_complex_op(op, attrs, inputs, dev);
  // A leading layer (mixed precision) may cast the inputs first: inference then sees them cast.
  if (t_bypass_layers == 0 && !t_floor && dev.has_layers() && !cplx) {
    Layer* lead = dev.layers().front();
    TensorList cast;
    if (lead->leads() && amp::detail::autocast(*lead, op, attrs, inputs, cast)) return cast;
  }
  if (!def.infer) detail::throw_not_implemented(def.name, "the op has no inference rule yet");
  // Tensors over a mapping of a file that was cut (see ember/detail/file.h) are refused.
  if (detail::map_faults()) [[unlikely]]
    store::detail::check_inputs(inputs, def.name);
  MetaList meta;
  def.infer(op, attrs, inputs, meta);
  // Every result shape, views included, is checked here under the op's name: no tensor ever
  // gets a shape whose sizes or strides overflow (see check_shape).
  for (int i = 0; i < meta.n; ++i) check_shape(meta.m[i].shape, def.name, /*unknown_ok=*/true);
  if (cplx) [[unlikely]] {
    TensorList parts;
    if (detail::route_complex(op, attrs, inputs, meta, dev, parts)) return parts;
  }
  OpCall call{op, attrs, inputs, meta, dev};
  // Inside ember::capture: the tensors the step reads, so a replay after one is gone fails.
  if (detail::active_capture()) [[unlikely]]
    if (detail::Capture* c = detail::capture_on(dev)) c->note_inputs(inputs);
  if (t_bypass_layers == 0 && dev.has_layers()) {
    std::span<Layer* const> layers = dev.layers();
    if (t_floor)
      for (size_t i = 0; i < layers.size(); ++i)
        if (layers[i] == t_floor) return Layer::Next(layers.subspan(i))(call);
    return Layer::Next(layers)(call);
  }
  return run_on_backend(call);
}

Tensor dispatch1(OpId op, const Attrs& attrs, std::span<const Tensor> inputs) {
  TensorList out = dispatch(op, attrs, inputs);
  return std::move(out.front());
}

}  // namespace ember
