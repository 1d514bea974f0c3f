// The views that cat, stack, flip, roll and repeat copy between, worked out once for every
// backend: each op is then one strided copy per piece (flex's copy_into on the host, the cuda
// copy kernel on a GPU), so only the copying differs between backends.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ember/tensor.h"

namespace ember::flex {

// One copy: src's elements into dst's (same shape).
struct Piece {
  Tensor dst, src;
};

// t narrowed to [start, start + len) along dim, as a view.
Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len);

// cat: each non-empty input into its slice of out along dim (the legacy empty 1-d input skipped).
std::vector<Piece> cat_pieces(const Tensor& out, std::span<const Tensor> inputs, int64_t dim);
// stack: input i into out.select(dim, i).
std::vector<Piece> stack_pieces(const Tensor& out, std::span<const Tensor> inputs, int64_t dim);
// flip: a view of x with the flipped dims' strides negated.
Tensor flipped_view(const Tensor& x, const Shape& dims);
// roll of x into out by shifts along dims (dims empty: the flattened tensor); along k shifted
// dims the output is 2^k blocks, each a plain copy of one input block. x must be contiguous
// when dims is empty.
std::vector<Piece> roll_pieces(const Tensor& x, const Tensor& out, const Shape& dims,
                               const Shape& shifts);
// repeat: out viewed as [r0, s0, r1, s1, ...] (size-1 entries left out) takes x broadcast over
// the r's, one copy whatever the number of dims; nullopt when that needs more than max_dims.
std::optional<Piece> repeat_piece(const Tensor& out, const Tensor& x, const Shape& reps,
                                  size_t max_dims);

}  // namespace ember::flex
