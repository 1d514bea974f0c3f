// masked_fill, masked_select and nonzero in ember ops: what a backend without kernels of its own
// for them runs (the cuda backend), built from selects, a scan and the gather/scatter-add ops.
// Only the count of a compaction is read on the host (the result's length depends on the data,
// as on every backend); nothing else waits for the device.
#include <cmath>

#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/ops/registry.h"
#include "ember/tensor_impl.h"

namespace ember {
namespace {

TensorList dec_masked_fill(const Attrs& a, std::span<const Tensor> in) {
  const Tensor &x = in[0], &mask = in[1];
  Tensor value;
  if (in.size() > 2) {
    // A float value tensor cannot fill an integer tensor with a NaN or infinity (checked now, as
    // the host kernel checks it: only this case reads the value).
    if (is_integral(x.dtype(), true) && is_floating(in[2].dtype()) &&
        !std::isfinite(in[2].item().to_double()))
      detail::throw_value("masked_fill", "cannot fill a " + std::string(dtype_name(x.dtype())) +
                                             " tensor with " +
                                             std::to_string(in[2].item().to_double()));
    value = in[2].to(x.dtype());
  } else {
    value = detail::constant_tensor(a.s[0], x.dtype(), x.device(), false);
  }
  Tensor y = where(mask, value, x);
  return {y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

// The positions of the true elements of a 1-d bool tensor, in order: each one's rank is an
// exclusive prefix sum, and one scatter-add puts every kept position at its rank (the others
// land in a spare slot past the end, which is cut off).
Tensor kept_positions(const Tensor& keep) {
  const int64_t n = keep.numel();
  const TensorOptions i64{DType::I64, keep.device()};
  const Tensor k = keep.to(DType::I64);
  const Tensor incl = cumsum(k, 0);
  const int64_t count = n ? incl.narrow(0, n - 1, 1).item<int64_t>() : 0;
  const Tensor slot = where(keep, incl - k, Scalar(count));
  return index_add(zeros({count + 1}, i64), 0, slot, arange(n, i64)).narrow(0, 0, count);
}

TensorList dec_masked_select(const Attrs&, std::span<const Tensor> in) {
  const Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), "masked_select");
  const Tensor x = broadcast_to(in[0], s).reshape({-1}), m = broadcast_to(in[1], s).reshape({-1});
  return {index_select(x, 0, kept_positions(m))};
}

// Each kept position's coordinates: per dim, the coordinate of every element (a range broadcast
// over the shape) picked at the kept positions; no integer division on the device.
TensorList dec_nonzero(const Attrs&, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const TensorOptions i64{DType::I64, x.device()};
  const Tensor keep = (x.dtype() == DType::Bool ? x : ne(x, Scalar(0))).reshape({-1});
  const Tensor pos = kept_positions(keep);
  const int64_t count = pos.numel(), nd = x.dim();
  if (count == 0 || nd == 0) return {zeros({count, nd}, i64)};
  TensorList coords;
  for (int64_t d = 0; d < nd; ++d) {
    Shape at(size_t(nd), 1);
    at[size_t(d)] = x.size(d);
    const Tensor c = broadcast_to(arange(x.size(d), i64).reshape(at), x.shape()).reshape({-1});
    coords.push_back(index_select(c, 0, pos));
  }
  return {stack(coords, 1)};
}

}  // namespace

namespace ops {
void register_index_decompositions() {
  op_def_mut(OpId::masked_fill).decompose = dec_masked_fill;
  op_def_mut(OpId::masked_select).decompose = dec_masked_select;
  op_def_mut(OpId::nonzero).decompose = dec_nonzero;
}
}  // namespace ops

}  // namespace ember
