#pragma once
// How the dispatcher takes ops on complex operands (private; ember/ops/complex_route.cpp).
// Complex numbers are pairs of reals: an op on complex tensors runs as ember ops on their real
// and imaginary parts (view_as_real), so every layer sees real ops, autodiff gives PyTorch's
// conjugate Wirtinger gradients and the lazy cpu device fuses the parts' arithmetic. Only data
// movement (views, copies, cat, stack, gathers) touches complex elements in kernels.
#include <span>

#include "ember/ops/registry.h"

namespace ember::detail {

/// Whether a call touches a complex dtype: an input, or the dtype it asks for.
inline bool touches_complex(const Attrs& a, std::span<const Tensor> in) {
  if (a.has_dtype && is_complex(a.dtype)) [[unlikely]]
    return true;
  for (const Tensor& t : in)
    if (t.defined() && is_complex(t.dtype())) [[unlikely]]
      return true;
  return false;
}
/// Whether a call's inputs or outputs are complex (layers that must not queue or trace them).
bool call_is_complex(const OpCall& c);

/// Before inference: throws DTypeError "[op] not supported for dtype complex64 ..." for an op
/// that has no complex form, and refuses devices that do not run complex (cuda).
void check_complex_op(OpId op, const Attrs& a, std::span<const Tensor> in, Device dev);
/// After inference: runs the op on the parts and returns true, or returns false for the ops
/// whose kernels take complex elements themselves (dispatch then goes on as usual).
bool route_complex(OpId op, const Attrs& a, std::span<const Tensor> in, const MetaList& meta,
                   Device dev, TensorList& out);

}  // namespace ember::detail
