// User ops: the table of registered ops, the handle's calls, and the hooks of OpId::user_op in
// the registry (inference, VJP rule, decomposition) that forward to the op a call names.
#include "ember/kl/user_op.h"

#include <deque>
#include <memory>
#include <mutex>

#include "ember/backends/backend.h"
#include "ember/error.h"
#include "ember/kl/user_op_impl.h"

namespace ember {
namespace kl {
namespace detail {
namespace {

struct Table {
  std::mutex mu;
  std::deque<std::unique_ptr<UserOpEntry>> ops;  // index = id; entries never move or go
};
Table& table() {
  static Table t;
  return t;
}

// OpId::user_op's attributes: i[0] the user op's id, i[1] the number of scalar parameters,
// f[0 .. i[1]) their values. Outputs: what the op's own inference says (1 to 4).
void infer_user_op(OpId, const Attrs& a, std::span<const Tensor> inputs, MetaList& meta) {
  const UserOpEntry& e = user_op_entry(a.i[0]);
  const char* name = e.def.name.c_str();
  if (size_t(a.i[1]) != e.def.params.size())
    ember::detail::throw_value(name, "expected " + std::to_string(e.def.params.size()) +
                                         " scalar parameter(s), found " + std::to_string(a.i[1]));
  const std::vector<TensorMeta> outs = e.def.infer(inputs, user_op_params(a));
  if (outs.empty() || outs.size() > size_t(MetaList::kMaxOutputs))
    ember::detail::throw_value(name, "inference must give 1 to " +
                                         std::to_string(MetaList::kMaxOutputs) +
                                         " outputs, it gave " + std::to_string(outs.size()));
  for (const TensorMeta& m : outs) meta.add(m.shape, m.dtype);
}

TensorList vjp_user_op(const VjpCtx& c) {
  const UserOpEntry& e = user_op_entry(c.attrs.i[0]);
  const char* name = e.def.name.c_str();
  if (!e.def.vjp)
    ember::detail::throw_not_implemented(
        name, "no VJP was registered (UserOpDef::vjp), so it cannot be differentiated");
  TensorList g = e.def.vjp(c, user_op_params(c.attrs));
  if (g.size() != c.inputs.size())
    ember::detail::throw_value(name, "the VJP must give one gradient per input (" +
                                         std::to_string(c.inputs.size()) + "), it gave " +
                                         std::to_string(g.size()));
  return g;
}

// Devices without a host kernel (none today; CUDA later) run the fallback.
TensorList decompose_user_op(const Attrs& a, std::span<const Tensor> inputs) {
  UserOpEntry& e = user_op_entry(a.i[0]);
  if (!e.def.fallback)
    ember::detail::throw_not_implemented(
        e.def.name.c_str(),
        "this device has no kernel for it and it has no fallback (UserOpDef::fallback)");
  ++e.fallback_calls;
  return e.def.fallback(inputs, user_op_params(a));
}

}  // namespace

UserOpEntry& user_op_entry(int64_t id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (id < 0 || size_t(id) >= t.ops.size())
    ember::detail::throw_value("user_op", "no user op has id " + std::to_string(id));
  return *t.ops[size_t(id)];
}

TensorList run_user_fallback(UserOpEntry& e, const OpCall& c, const std::string& why) {
  const char* name = e.def.name.c_str();
  if (!e.def.fallback) ember::detail::throw_device(name, why);
  ++e.fallback_calls;
  TensorList outs = e.def.fallback(c.inputs, user_op_params(c.attrs));
  if (outs.size() != size_t(c.meta.n))
    ember::detail::throw_value(name, "the fallback gave " + std::to_string(outs.size()) +
                                         " outputs, inference says " + std::to_string(c.meta.n));
  for (int i = 0; i < c.meta.n; ++i)
    if (outs[size_t(i)].shape() != c.meta.m[i].shape ||
        outs[size_t(i)].dtype() != c.meta.m[i].dtype)
      ember::detail::throw_value(name, "the fallback's output " + std::to_string(i) + " is " +
                                           shape_str(outs[size_t(i)].shape()) + " " +
                                           std::string(dtype_name(outs[size_t(i)].dtype())) +
                                           ", inference says " + shape_str(c.meta.m[i].shape) +
                                           " " + std::string(dtype_name(c.meta.m[i].dtype)));
  return outs;
}

// Called once by ember::detail::init, after the backends are registered.
void register_user_op_family() {
  OpDef& d = op_def_mut(OpId::user_op);
  d.infer = infer_user_op;
  d.vjp = vjp_user_op;
  d.decompose = decompose_user_op;
  for (Backend b : {Backend::Flex, Backend::Cpu})
    if (BackendImpl* impl = backend_for(b))
      impl->set_kernel(OpId::user_op, user_op_kernel, kAllDTypes);
}

}  // namespace detail

UserOp register_op(UserOpDef def) {
  ember::detail::init();
  const std::string who = def.name.empty() ? std::string("register_op") : def.name;
  if (def.name.empty()) ember::detail::throw_value("register_op", "a user op needs a name");
  if (!def.infer) ember::detail::throw_value(who.c_str(), "a user op needs an inference function");
  if (!def.kernel) ember::detail::throw_value(who.c_str(), "a user op needs a kernel builder");
  if (def.params.size() > 4)
    ember::detail::throw_value(
        who.c_str(), "at most 4 scalar parameters, found " + std::to_string(def.params.size()));
  detail::Table& t = detail::table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const auto& e : t.ops)
    if (e->def.name == def.name)
      ember::detail::throw_value(who.c_str(), "a user op of this name is already registered");
  t.ops.push_back(std::make_unique<detail::UserOpEntry>(std::move(def)));
  return UserOp(int(t.ops.size() - 1));
}

UserOpStats user_op_stats(UserOp op) {
  const detail::UserOpEntry& e = detail::user_op_entry(op.id());
  return {e.kernels.load(), e.jit_calls.load(), e.fallback_calls.load()};
}

}  // namespace kl

TensorList UserOp::call(std::span<const Tensor> inputs, std::span<const double> params) const {
  if (!valid()) detail::throw_value("user_op", "called through an empty UserOp handle");
  if (params.size() > 4)
    detail::throw_value(name().c_str(),
                        "at most 4 scalar parameters, found " + std::to_string(params.size()));
  Attrs a;
  a.i[0] = id_;
  a.i[1] = int64_t(params.size());
  for (size_t k = 0; k < params.size(); ++k) a.f[k] = params[k];
  return dispatch(OpId::user_op, a, inputs);
}

Tensor UserOp::operator()(std::span<const Tensor> inputs, std::span<const double> params) const {
  TensorList outs = call(inputs, params);
  if (outs.size() != 1)
    detail::throw_value(name().c_str(), "has " + std::to_string(outs.size()) +
                                            " outputs: use UserOp::call() for all of them");
  return std::move(outs.front());
}

const std::string& UserOp::name() const {
  if (!valid()) detail::throw_value("user_op", "an empty UserOp handle has no name");
  return kl::detail::user_op_entry(id_).def.name;
}

UserOp find_user_op(std::string_view name) {
  detail::init();
  kl::detail::Table& t = kl::detail::table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (t.ops[i]->def.name == name) return UserOp(int(i));
  detail::throw_value("find_user_op", "no user op is registered as '" + std::string(name) + "'");
}

}  // namespace ember
