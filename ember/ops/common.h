#pragma once
// Helpers shared by the op families' inference and API code (private).
#include <string>

#include "ember/error.h"
#include "ember/ops/registry.h"

namespace ember::ops {

/// Throws ValueError "[op] expected a defined tensor for `what`" when t is undefined.
void require_defined(const Tensor& t, const char* op, const char* what = "input");
/// Throws DTypeError unless dtype bit is in `allowed` (a DTypeMask), naming what was expected.
void require_dtype(const char* op, DType d, uint16_t allowed, const char* expected);
/// Wraps each dim in `dims` and returns a sorted unique list; empty means all dims.
Shape reduce_dims(std::span<const int64_t> dims, int64_t ndim, const char* op);
/// Output shape of reducing `shape` over `dims` (already wrapped).
Shape reduced_shape(const Shape& shape, const Shape& dims, bool keepdim);
/// Float result dtype for an input of dtype d: d if floating, else the default dtype.
inline DType float_result(DType d) {
  return is_floating(d) || is_complex(d) ? d : default_dtype();
}

}  // namespace ember::ops
