// Pooling: API, inference, registration (kernels only; no decompositions).
// Attrs: max_pool1d/2d: ints kernel, ints2 stride (empty = kernel), ints3 padding, ints4
// dilation, b[0] ceil_mode, b[1] return indices (a second, int64 output: positions in each
// flattened input plane). avg_pool1d/2d: ints/ints2/ints3 as above, b[0] ceil_mode,
// b[1] count_include_pad. adaptive_*: ints output size (1 or one per spatial dim);
// adaptive_max_pool2d always returns (values, indices).
#include "ember/backends/backend.h"
#include "ember/ops/nn.h"
#include "ember/ops/nn_common.h"

namespace ember {
namespace {

int spatial_dims(OpId op) {
  switch (op) {
    case OpId::max_pool1d: case OpId::avg_pool1d: case OpId::adaptive_avg_pool1d: return 1;
    default: return 2;
  }
}

// [N, C, *spatial] or unbatched [C, *spatial]; only the batch may be empty.
void check_pool_input(const char* name, const Tensor& x, int nd) {
  ops::require_defined(x, name);
  if (x.dim() != nd + 1 && x.dim() != nd + 2)
    detail::throw_shape(name, "expected a " + std::to_string(nd + 1) + "-D or " +
                                  std::to_string(nd + 2) + "-D input, found shape " +
                                  shape_str(x.shape()));
  for (int64_t d = x.dim() == nd + 2 ? 1 : 0; d < x.dim(); ++d)
    if (x.size(d) == 0)
      detail::throw_shape(name, "expected non-zero sizes except for the batch dim, found shape " +
                                    shape_str(x.shape()));
  ops::require_float(name, x.dtype());
}

Shape with_spatial(const Tensor& x, int64_t oh, int64_t ow, int nd) {
  Shape s = x.shape();
  s[s.size() - 1] = ow;
  if (nd == 2) s[s.size() - 2] = oh;
  return s;
}

void infer_pool(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  const int nd = spatial_dims(op);
  const Tensor& x = in[0];
  check_pool_input(name, x, nd);
  const int64_t h = nd == 2 ? x.size(-2) : 1, w = x.size(-1);
  switch (op) {
    case OpId::adaptive_avg_pool1d: case OpId::adaptive_avg_pool2d:
    case OpId::adaptive_max_pool2d: {
      if (a.ints.empty()) detail::throw_value(name, "output_size must be given");
      Shape os = ops::spatial_arg(name, "output_size", a.ints, nd, {});
      for (int64_t s : os)
        if (s < 0)
          detail::throw_value(name, "output_size must be non-negative, found " + shape_str(os));
      Shape s = with_spatial(x, nd == 2 ? os[0] : 1, os.back(), nd);
      out.add(s, x.dtype());
      if (op == OpId::adaptive_max_pool2d) out.add(s, DType::I64);
      return;
    }
    default: {
      const bool is_max = op == OpId::max_pool1d || op == OpId::max_pool2d;
      ops::PoolParams p = ops::pool_params(name, a, nd, is_max);
      int64_t oh = ops::pool_out_size(name, h, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
      int64_t ow = ops::pool_out_size(name, w, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
      if (oh < 1 || ow < 1)
        detail::throw_shape(name, "input of shape " + shape_str(x.shape()) +
                                      " is too small for the window: the output would be " +
                                      std::to_string(oh) + "x" + std::to_string(ow));
      Shape s = with_spatial(x, oh, ow, nd);
      out.add(s, x.dtype());
      if (is_max && a.b[1]) out.add(s, DType::I64);
      return;
    }
  }
}

Attrs pool_attrs(const PoolOptions& o, bool flag) {
  Attrs a;
  a.ints = o.kernel_size;
  a.ints2 = o.stride;
  a.ints3 = o.padding;
  a.ints4 = o.dilation;
  a.b[0] = o.ceil_mode;
  a.b[1] = flag;
  return a;
}

std::tuple<Tensor, Tensor> pair(TensorList r) { return {std::move(r[0]), std::move(r[1])}; }

}  // namespace


Tensor max_pool1d(const Tensor& x, const PoolOptions& o) {
  return dispatch1(OpId::max_pool1d, pool_attrs(o, false), {x});
}
Tensor max_pool2d(const Tensor& x, const PoolOptions& o) {
  return dispatch1(OpId::max_pool2d, pool_attrs(o, false), {x});
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const PoolOptions& o) {
  return pair(dispatch(OpId::max_pool1d, pool_attrs(o, true), {x}));
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const PoolOptions& o) {
  return pair(dispatch(OpId::max_pool2d, pool_attrs(o, true), {x}));
}
Tensor avg_pool1d(const Tensor& x, const PoolOptions& o) {
  return dispatch1(OpId::avg_pool1d, pool_attrs(o, o.count_include_pad), {x});
}
Tensor avg_pool2d(const Tensor& x, const PoolOptions& o) {
  return dispatch1(OpId::avg_pool2d, pool_attrs(o, o.count_include_pad), {x});
}
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  Attrs a;
  a.ints = {output_size};
  return dispatch1(OpId::adaptive_avg_pool1d, a, {x});
}
Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size) {
  Attrs a;
  a.ints = output_size;
  return dispatch1(OpId::adaptive_avg_pool2d, a, {x});
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, const Shape& output_size) {
  Attrs a;
  a.ints = output_size;
  return pair(dispatch(OpId::adaptive_max_pool2d, a, {x}));
}


namespace ops {
void register_pool_ops() {
  for (OpId op : {OpId::max_pool1d, OpId::max_pool2d, OpId::avg_pool1d, OpId::avg_pool2d,
                  OpId::adaptive_avg_pool1d, OpId::adaptive_avg_pool2d,
                  OpId::adaptive_max_pool2d})
    op_def_mut(op).infer = infer_pool;
}
}  // namespace ops

}  // namespace ember
