// Tensor's method forms (declared by ember/tensor_methods.h inside class Tensor), the in-place
// writes behind them, compound assignment and the device shorthands.
#include <string>

#include "ember/ember.h"
#include "ember/error.h"

namespace ember {
namespace {
// torch.can_cast: no float -> integer, no non-bool -> bool.
bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && !is_floating(to) && !is_complex(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}
}  // namespace

Tensor& Tensor::assign_(const Tensor& r, const char* op) {
  if (!can_cast(r.dtype(), dtype()))
    detail::throw_dtype(op, "result type " + std::string(dtype_name(r.dtype())) +
                                " can't be cast to the desired output type " +
                                std::string(dtype_name(dtype())));
  if (r.shape() != shape())
    detail::throw_shape(op, "output with shape " + shape_str(shape()) +
                                " doesn't match the broadcast shape " + shape_str(r.shape()));
  return copy_(r);
}

#define EMBER_METHOD_DEFAULT(...)
#define EMBER_METHOD(ret, name, params, call) \
  ret Tensor::name params const { return call; }
#define EMBER_INPLACE(name, params, call) \
  Tensor& Tensor::name params { return assign_(call, #name); }
#include "ember/tensor_methods.h"
#undef EMBER_METHOD
#undef EMBER_INPLACE

#define EMBER_X(sym, op)                                                                     \
  Tensor& Tensor::operator sym(const Tensor& o) {                \
    return assign_(ember::op(*this, o), #op "_");                \
  }                                                              \
  Tensor& Tensor::operator sym(Scalar o) { return assign_(ember::op(*this, o), #op "_"); }
EMBER_X(+=, add)
EMBER_X(-=, sub)
EMBER_X(*=, mul)
EMBER_X(/=, div)
EMBER_X(%=, remainder)
EMBER_X(&=, bitwise_and)
EMBER_X(|=, bitwise_or)
EMBER_X(^=, bitwise_xor)
EMBER_X(<<=, bitwise_left_shift)
EMBER_X(>>=, bitwise_right_shift)
#undef EMBER_X

Tensor Tensor::to(Device d, DType t) const {
  // Convert where there is less data to move: after the move when the dtype grows.
  return itemsize() <= ember::itemsize(t) ? to(d).to(t) : to(t).to(d);
}
Tensor Tensor::to(const TensorOptions& o) const {
  Tensor r = *this;
  if (o.dtype) r = r.to(*o.dtype);
  if (o.device) r = r.to(*o.device);
  return r;
}
Tensor Tensor::cuda(int index) const { return to(Device::cuda(index)); }
Tensor Tensor::cpu() const {
  const Backend b = device().backend();
  return b == Backend::Flex || b == Backend::Cpu ? *this : to(Device(kCPU));
}

namespace detail {
std::vector<std::string> tensor_method_names() {
  std::vector<std::string> names;
#define EMBER_METHOD_DEFAULT(...)
#define EMBER_METHOD(ret, name, params, call) names.push_back(#name);
#define EMBER_INPLACE(name, params, call) names.push_back(#name);
#include "ember/tensor_methods.h"
#undef EMBER_METHOD
#undef EMBER_INPLACE
#undef EMBER_METHOD_DEFAULT
  return names;
}
}  // namespace detail

}  // namespace ember
