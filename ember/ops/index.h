#pragma once
// Indexing: views (slice, select, narrow) and gathers/scatters. Indices are int64 (int32 accepted
// where torch accepts it) and are bounds-checked: out of range throws IndexError.
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember {

/// View of x[start:stop:step] along dim (bounds clamp like Python slicing; step > 0).
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1);
/// View of x[index] along dim, which is removed; a negative index counts from the end.
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/// View of `length` elements along dim from `start`.
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/// The slices of x along dim listed in a 0-d/1-d index (int64 or int32).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// out[i][j] = x[index[i][j]][j] (dim 0 shown); out has index's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// out = x; out[index[i][j]][j] = src[i][j] (dim 0 shown).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/// scatter with +=: repeated indices accumulate.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// reduce: "sum", "prod", "mean", "amax", "amin".
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
/// out = x; out.select(dim, index[i]) += alpha * src.select(dim, i).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 Scalar alpha = 1);
/// out = x; out[indices...] = values (or += with accumulate), as torch's advanced indexing: index
/// tensors (int64/int32) broadcast together, bool masks select their non-zero positions, and
/// undefined entries mean ":".
Tensor index_put(const Tensor& x, const TensorList& indices, const Tensor& values,
                 bool accumulate = false);
/// x with `value` where the bool mask (broadcast against x) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// masked_fill with a 0-d tensor value.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
/// 1-d tensor of the elements of x (broadcast with the bool mask) where the mask is true.
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// [n, ndim] int64 coordinates of the non-zero elements.
Tensor nonzero(const Tensor& x);
/// Elements of x (as if flattened) at `index`.
Tensor take(const Tensor& x, const Tensor& index);
/// int64 tensor of x's shape + [num_classes] with a 1 at each class index (-1: max + 1).
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

}  // namespace ember
