// cat, stack, flip, roll and repeat on CUDA: one strided copy (copy_ops.cpp's kernel) per piece
// of the views that flex/layout_pieces.h works out for every backend.
#include <algorithm>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/fallback.h"
#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/layout_pieces.h"
#include "ember/backends/flex/loops.h"
#include "ember/shape.h"

namespace ember::cuda {
namespace {

void copy_all(const std::vector<flex::Piece>& pieces, const char* op) {
  for (const flex::Piece& p : pieces) copy_into(p.dst, p.src, op);
}

TensorList k_cat(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  copy_all(flex::cat_pieces(out, c.inputs, wrap_dim(c.attrs.i[0], out.dim(), "cat")), "cat");
  return {out};
}

TensorList k_stack(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  copy_all(flex::stack_pieces(out, c.inputs, wrap_dim(c.attrs.i[0], out.dim(), "stack")),
           "stack");
  return {out};
}

TensorList k_flip(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  copy_into(out, flex::flipped_view(c.inputs[0], c.attrs.ints), "flip");
  return {out};
}

TensorList k_roll(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  Tensor x = c.inputs[0];
  if (c.attrs.ints2.empty() && !x.is_contiguous()) x = x.contiguous();
  copy_all(flex::roll_pieces(x, out, c.attrs.ints2, c.attrs.ints), "roll");
  return {out};
}

TensorList k_repeat(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  // The copy kernel walks at most 8 dims.
  std::optional<flex::Piece> p = flex::repeat_piece(out, c.inputs[0], c.attrs.ints, 8);
  if (!p) return detail::run_host_fallback(c);
  copy_into(p->dst, p->src, "repeat");
  return {out};
}

}  // namespace

void register_layout_kernels(BackendImpl& b) {
  b.set_kernel(OpId::cat, k_cat, kAllDTypes);
  b.set_kernel(OpId::stack, k_stack, kAllDTypes);
  b.set_kernel(OpId::flip, k_flip, kAllDTypes);
  b.set_kernel(OpId::roll, k_roll, kAllDTypes);
  b.set_kernel(OpId::repeat, k_repeat, kAllDTypes);
}

}  // namespace ember::cuda
