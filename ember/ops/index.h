#pragma once
// Indexing: views (slice, select, narrow) and gathers/scatters. Indices are int64 (int32 accepted
// where torch accepts it) and are bounds-checked: out of range throws IndexError.
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember {

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// out = x; out[index[i][j]][j] = src[i][j] (dim 0 shown).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// reduce: "sum", "prod", "mean", "amax", "amin".
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 Scalar alpha = 1);
/// out = x; out[indices...] = values (or += with accumulate). Undefined entries mean ":".
Tensor index_put(const Tensor& x, const TensorList& indices, const Tensor& values,
                 bool accumulate = false);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// [n, ndim] int64 coordinates of the non-zero elements.
Tensor nonzero(const Tensor& x);
/// Elements of x (as if flattened) at `index`.
Tensor take(const Tensor& x, const Tensor& index);
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

}  // namespace ember
