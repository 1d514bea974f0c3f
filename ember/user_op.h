#pragma once
// Ops registered at run time: a handle that calls one like any ember op. Registration (name,
// inference, a kernel written in the kernel language, an optional VJP) is in ember/kl/user_op.h,
// which this header does not include: calling a user op needs nothing of the kernel language.
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "ember/tensor.h"

namespace ember {

/// A registered user op. Calls go through the op registry (OpId::user_op), so they pass the
/// device's layers like every op: autodiff records them, a fusing layer runs them as one opaque
/// op. Handles are cheap values; a default-constructed one is invalid.
class UserOp {
 public:
  UserOp() = default;
  /// Runs the op on `inputs` with its scalar parameters (as many as it was registered with,
  /// at most 4); every output.
  TensorList call(std::span<const Tensor> inputs, std::span<const double> params = {}) const;
  TensorList call(std::initializer_list<Tensor> inputs,
                  std::initializer_list<double> params = {}) const {
    return call(std::span<const Tensor>(inputs.begin(), inputs.size()),
                std::span<const double>(params.begin(), params.size()));
  }
  /// call() for ops with exactly one output.
  Tensor operator()(std::span<const Tensor> inputs, std::span<const double> params = {}) const;
  Tensor operator()(std::initializer_list<Tensor> inputs,
                    std::initializer_list<double> params = {}) const {
    return (*this)(std::span<const Tensor>(inputs.begin(), inputs.size()),
                   std::span<const double>(params.begin(), params.size()));
  }

  bool valid() const { return id_ >= 0; }
  /// The name it was registered under.
  const std::string& name() const;
  /// Its index among user ops (the value of Attrs::i[0] in its calls).
  int id() const { return id_; }

  explicit UserOp(int id) : id_(id) {}

 private:
  int id_ = -1;
};

/// The user op registered as `name`; throws ValueError when there is none.
UserOp find_user_op(std::string_view name);

}  // namespace ember
