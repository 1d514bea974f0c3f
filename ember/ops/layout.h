#pragma once
// Shape ops. Views share storage; `contiguous` copies only when needed.
#include <string>

#include "ember/tensor.h"

namespace ember {

/// A view when the strides allow it, else a copy. One dim may be -1.
Tensor reshape(const Tensor& x, const Shape& shape);
/// Always a view; throws ShapeError when the strides do not allow one.
Tensor view(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor movedim(const Tensor& x, const Shape& src, const Shape& dst);
/// Removes all size-1 dims (or only those listed).
Tensor squeeze(const Tensor& x, const Shape& dims = {});
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// Broadcast view; -1 keeps a dim.
Tensor expand(const Tensor& x, const Shape& shape);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Tensor contiguous(const Tensor& x);
/// A fresh contiguous copy.
Tensor clone(const Tensor& x);
Tensor cat(const TensorList& xs, int64_t dim = 0);
Tensor stack(const TensorList& xs, int64_t dim = 0);
/// Pieces of `size` along dim (the last may be smaller).
TensorList split(const Tensor& x, int64_t size, int64_t dim = 0);
TensorList split(const Tensor& x, const Shape& sizes, int64_t dim = 0);
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
TensorList unbind(const Tensor& x, int64_t dim = 0);
Tensor repeat(const Tensor& x, const Shape& repeats);
Tensor tile(const Tensor& x, const Shape& reps);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = {});
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = {});
Tensor flip(const Tensor& x, const Shape& dims);
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims = {});
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1);
/// pad: (left, right) pairs from the last dim backwards, like torch.nn.functional.pad.
/// mode: "constant", "reflect", "replicate", "circular".
Tensor pad(const Tensor& x, const Shape& pad, const std::string& mode = "constant",
           double value = 0.0);
/// indexing: "ij" or "xy".
TensorList meshgrid(const TensorList& xs, const std::string& indexing = "ij");

}  // namespace ember
