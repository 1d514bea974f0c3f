#include "ember/ops/common.h"

#include <algorithm>

#include "ember/backends/backend.h"

namespace ember::ops {

void require_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined())
    detail::throw_value(op, std::string("expected a defined tensor for ") + what +
                                ", found an undefined one");
}

void require_dtype(const char* op, DType d, uint16_t allowed, const char* expected) {
  if (!(allowed & mask_of(d)))
    detail::throw_dtype(op, std::string("expected ") + expected + ", found " +
                                std::string(dtype_name(d)));
}

Shape reduce_dims(std::span<const int64_t> dims, int64_t ndim, const char* op) {
  Shape out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;  // reducing a 0-d tensor over dim 0/-1 is the identity
    if (std::find(out.begin(), out.end(), w) != out.end())
      detail::throw_value(op, "dim " + std::to_string(d) + " appears more than once in " +
                                  shape_str(dims));
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& shape, const Shape& dims, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool r = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (!r) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

}  // namespace ember::ops
