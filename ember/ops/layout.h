#pragma once
// Shape ops. Views share storage; `contiguous` copies only when needed.
#include <string>

#include "ember/tensor.h"

namespace ember {

/// A view when the strides allow it, else a copy. One dim may be -1.
Tensor reshape(const Tensor& x, const Shape& shape);
/// Always a view; throws ShapeError when the strides do not allow one.
Tensor view(const Tensor& x, const Shape& shape);
/// Merges dims start_dim..end_dim into one (a reshape).
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
/// Splits dim into `sizes` (one may be -1); always a view.
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
/// View with the dims reordered.
Tensor permute(const Tensor& x, const Shape& dims);
/// View with two dims swapped.
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
/// View with dims src moved to positions dst, the others keeping their order.
Tensor movedim(const Tensor& x, const Shape& src, const Shape& dst);
/// Removes all size-1 dims (or only those listed).
Tensor squeeze(const Tensor& x, const Shape& dims = {});
/// View with a size-1 dim inserted at dim.
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// Broadcast view; -1 keeps a dim.
Tensor expand(const Tensor& x, const Shape& shape);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// x itself when already contiguous, else a contiguous copy.
Tensor contiguous(const Tensor& x);
/// A fresh contiguous copy.
Tensor clone(const Tensor& x);
/// Concatenation along dim; dtypes promote, 1-d empty tensors are skipped (as torch does).
Tensor cat(const TensorList& xs, int64_t dim = 0);
/// Equal-shape tensors joined along a new dim.
Tensor stack(const TensorList& xs, int64_t dim = 0);
/// Views: pieces of `size` along dim (the last may be smaller).
TensorList split(const Tensor& x, int64_t size, int64_t dim = 0);
/// Views: pieces of the given sizes (summing to the dim's size) along dim.
TensorList split(const Tensor& x, const Shape& sizes, int64_t dim = 0);
/// Views: at most `chunks` pieces of ceil(size / chunks) along dim.
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// Views: x.select(dim, i) for every i.
TensorList unbind(const Tensor& x, int64_t dim = 0);
/// x tiled `repeats[i]` times along each dim (repeats may add leading dims).
Tensor repeat(const Tensor& x, const Shape& repeats);
/// repeat, with reps padded by leading 1s when x has more dims.
Tensor tile(const Tensor& x, const Shape& reps);
/// Each element (slice along dim; of the flattened x without dim) repeated `repeats` times.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = {});
/// repeat_interleave with per-slice counts (0-d or one per slice, int64/int32). The output's
/// length is the repeats' sum, which is read on the host (a sync point) unless `output_size`
/// gives it; then the repeats are checked at the device's next sync, as torch does.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = {},
                         std::optional<int64_t> output_size = {});
/// A copy of x reversed along dims.
Tensor flip(const Tensor& x, const Shape& dims);
/// A copy of x shifted circularly by shifts[i] along dims[i] (no dims: the flattened x).
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims = {});
/// Lower triangle of the last two dims (j <= i + diagonal), the rest zero.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
/// Upper triangle of the last two dims (j >= i + diagonal), the rest zero.
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// View of the diagonal of dims d0, d1 (offset > 0 above it), appended as the last dim.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1);
/// pad: (left, right) pairs from the last dim backwards, like torch.nn.functional.pad.
/// mode: "constant", "reflect", "replicate", "circular"; negative pads crop.
Tensor pad(const Tensor& x, const Shape& pad, const std::string& mode = "constant",
           double value = 0.0);
/// Broadcast views of 0-d/1-d tensors over the grid of all their sizes; indexing: "ij" or "xy".
TensorList meshgrid(const TensorList& xs, const std::string& indexing = "ij");

}  // namespace ember
