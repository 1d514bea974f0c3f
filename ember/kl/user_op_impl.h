#pragma once
// Private to ember/kl/user_op*.cpp: the table of registered user ops and the pieces the
// registry's hooks (inference, VJP, decomposition, the host kernel) share.
#include <atomic>
#include <span>

#include "ember/kl/user_op.h"

namespace ember::kl::detail {

struct UserOpEntry {
  explicit UserOpEntry(UserOpDef d) : def(std::move(d)) {}
  const UserOpDef def;
  std::atomic<int64_t> kernels{0}, jit_calls{0}, fallback_calls{0};
};

/// The op a call names (Attrs::i[0]); throws ValueError when no user op has that id.
UserOpEntry& user_op_entry(int64_t id);
/// The scalar parameters of a call (Attrs::f[0 .. i[1])).
inline std::span<const double> user_op_params(const Attrs& a) {
  return {a.f.data(), size_t(a.i[1])};
}
/// Runs the op's fallback for `c` (its outputs checked against the inferred ones), or throws
/// `why` as a DeviceError when there is none.
TensorList run_user_fallback(UserOpEntry& e, const OpCall& c, const std::string& why);

/// The host kernel of OpId::user_op (flex and cpu): builds, compiles and runs the op's kernel.
TensorList user_op_kernel(const OpCall& c);

}  // namespace ember::kl::detail
