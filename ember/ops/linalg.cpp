// Matrix products: API, inference, decompositions, registration.
// Attrs: none for mm, bmm, matmul, dot, outer; linear takes inputs {x, w, bias (may be
// undefined)}; einsum: str = the equation, inputs = the operands (see einsum.cpp).
// mm/bmm/matmul/linear/dot have flex kernels; matmul, linear and dot also lower to mm/bmm/mul/sum
// for backends that only provide the primitives, and outer always lowers to a broadcast mul.
#include "ember/ops/linalg.h"

#include "ember/backends/backend.h"
#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace ops {
void register_conv_ops();
void register_conv_grad_ops();
void register_einsum_op();
void register_quant_ops();
void register_linalg_decomp_ops();

/// torch.matmul's output shape for operands of these shapes (either may be 1-D).
Shape matmul_shape(const Shape& a, const Shape& b, const char* op) {
  const size_t da = a.size(), db = b.size();
  if (da == 0 || db == 0)
    detail::throw_shape(op, "both arguments need to be at least 1-D, found " +
                                std::to_string(da) + "-D and " + std::to_string(db) + "-D");
  const int64_t ka = a[da - 1], kb = db == 1 ? b[0] : b[db - 2];
  if (ka != kb)
    detail::throw_shape(op, "shapes " + shape_str(a) + " and " + shape_str(b) +
                                " cannot be multiplied: inner dims " + std::to_string(ka) +
                                " and " + std::to_string(kb) + " differ");
  Shape batch_a, batch_b;
  for (size_t d = 0; d + 2 < da; ++d) batch_a.push_back(a[d]);
  for (size_t d = 0; d + 2 < db; ++d) batch_b.push_back(b[d]);
  Shape out = broadcast_shapes(batch_a, batch_b, op);
  if (da >= 2) out.push_back(a[da - 2]);
  if (db >= 2) out.push_back(b[db - 1]);
  return out;
}
}  // namespace ops

namespace {

void require_same_dtype(const char* op, const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != b.dtype())
    detail::throw_dtype(op, std::string("expected ") + what + " to have the same dtype, found " +
                                std::string(dtype_name(a.dtype())) + " and " +
                                std::string(dtype_name(b.dtype())));
}

void require_rank(const char* op, const Tensor& t, int64_t rank, const char* what) {
  if (t.dim() != rank)
    detail::throw_shape(op, "expected " + std::string(what) + " to be " + std::to_string(rank) +
                                "-D, found shape " + shape_str(t.shape()));
}

// Operands of a product: defined, one dtype, and a dtype products support (not bool).
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  ops::require_defined(a, op, "the first operand");
  ops::require_defined(b, op, "the second operand");
  require_same_dtype(op, a, b, "both operands");
  ops::require_dtype(op, a.dtype(), kNumericDTypes | kComplexDTypes,
                     "a numeric dtype (bool is not supported)");
}

void inner_mismatch(const char* op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  detail::throw_shape(op, "shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                              " cannot be multiplied: inner dims " + std::to_string(ka) +
                              " and " + std::to_string(kb) + " differ");
}

void infer_matmul(OpId op, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (op == OpId::linear) {
    if (in.size() != 3) detail::throw_value(name, "expected inputs (x, weight, bias)");
    const Tensor &x = in[0], &w = in[1], &bias = in[2];
    check_operands(name, x, w);
    if (w.dim() != 1 && w.dim() != 2)
      detail::throw_shape(name,
                          "expected a 1-D or 2-D weight, found shape " + shape_str(w.shape()));
    if (x.dim() == 0) detail::throw_shape(name, "expected an input of at least 1-D, found 0-D");
    if (x.size(-1) != w.size(-1)) inner_mismatch(name, x, w, x.size(-1), w.size(-1));
    Shape s = x.shape();
    s.resize(s.size() - 1);
    if (w.dim() == 2) s.push_back(w.size(0));
    if (bias.defined()) {
      require_same_dtype(name, x, bias, "input and bias");
      if (broadcast_shapes(s, bias.shape(), name) != s)
        detail::throw_shape(name, "bias of shape " + shape_str(bias.shape()) +
                                      " does not broadcast to the output shape " + shape_str(s));
    }
    out.add(std::move(s), x.dtype());
    return;
  }
  if (in.size() != 2) detail::throw_value(name, "expected 2 inputs");
  const Tensor &a = in[0], &b = in[1];
  if (op == OpId::outer) {  // a broadcast mul: any dtypes, promoted
    ops::require_defined(a, name, "the first operand");
    ops::require_defined(b, name, "the second operand");
    require_rank(name, a, 1, "the first operand");
    require_rank(name, b, 1, "the second operand");
    out.add({a.size(0), b.size(0)}, result_type(a, b));
    return;
  }
  check_operands(name, a, b);
  switch (op) {
    case OpId::mm:
      require_rank(name, a, 2, "the first operand");
      require_rank(name, b, 2, "the second operand");
      if (a.size(1) != b.size(0)) inner_mismatch(name, a, b, a.size(1), b.size(0));
      out.add({a.size(0), b.size(1)}, a.dtype());
      return;
    case OpId::bmm:
      require_rank(name, a, 3, "the first operand");
      require_rank(name, b, 3, "the second operand");
      if (a.size(0) != b.size(0))
        detail::throw_shape(name, "batch sizes differ: shapes " + shape_str(a.shape()) + " and " +
                                      shape_str(b.shape()));
      if (a.size(2) != b.size(1)) inner_mismatch(name, a, b, a.size(2), b.size(1));
      out.add({a.size(0), a.size(1), b.size(2)}, a.dtype());
      return;
    case OpId::dot:
      require_rank(name, a, 1, "the first operand");
      require_rank(name, b, 1, "the second operand");
      if (a.size(0) != b.size(0))
        detail::throw_shape(name, "expected vectors of the same length, found shapes " +
                                      shape_str(a.shape()) + " and " + shape_str(b.shape()));
      out.add({}, a.dtype());
      return;
    default:  // matmul
      out.add(ops::matmul_shape(a.shape(), b.shape(), name), a.dtype());
      return;
  }
}

// --- decompositions (for backends with only mm/bmm and elementwise kernels) ---

TensorList decompose_matmul(const Attrs&, std::span<const Tensor> in) {
  const Tensor &a = in[0], &b = in[1];
  const int64_t da = a.dim(), db = b.dim();
  Shape out = ops::matmul_shape(a.shape(), b.shape(), "matmul");
  if (da == 1 && db == 1) return {dot(a, b)};
  if (da <= 2 && db <= 2) {
    Tensor a2 = da == 1 ? a.unsqueeze(0) : a, b2 = db == 1 ? b.unsqueeze(1) : b;
    return {mm(a2, b2).reshape(out)};
  }
  // Sizes are spelled out (no -1): a dim of size 0 would leave -1 ambiguous.
  const int64_t k = a.size(-1);
  if (db <= 2) {  // fold a's batch into its rows: one mm, as torch does
    Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    const int64_t rows = numel_of(std::span<const int64_t>(a.shape().data(), size_t(da - 1)));
    return {mm(a.reshape({rows, k}), b2).reshape(out)};
  }
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a, b3 = db == 1 ? b.unsqueeze(1) : b;
  Shape batch(std::span<const int64_t>(out.data(), out.size() - (da >= 2) - (db >= 2)));
  const int64_t nb = numel_of(batch), n = a3.size(-2), m = b3.size(-1);
  Shape sa = batch, sb = batch;
  sa.push_back(n);
  sa.push_back(k);
  sb.push_back(k);
  sb.push_back(m);
  Tensor r = bmm(a3.expand(sa).reshape({nb, n, k}), b3.expand(sb).reshape({nb, k, m}));
  return {r.reshape(out)};
}

TensorList decompose_linear(const Attrs&, std::span<const Tensor> in) {
  const Tensor &x = in[0], &w = in[1], &bias = in[2];
  Tensor y = matmul(x, w.dim() == 2 ? w.t() : w);
  return {bias.defined() ? y + bias : y};
}

TensorList decompose_outer(const Attrs&, std::span<const Tensor> in) {
  return {in[0].unsqueeze(1) * in[1].unsqueeze(0)};
}

TensorList decompose_dot(const Attrs&, std::span<const Tensor> in) {
  return {sum(in[0] * in[1], {}, false, in[0].dtype())};
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) { return dispatch1(OpId::mm, {}, {a, b}); }
Tensor bmm(const Tensor& a, const Tensor& b) { return dispatch1(OpId::bmm, {}, {a, b}); }
Tensor matmul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::matmul, {}, {a, b}); }
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return dispatch1(OpId::linear, {}, {x, w, bias});
}
Tensor outer(const Tensor& a, const Tensor& b) { return dispatch1(OpId::outer, {}, {a, b}); }
Tensor dot(const Tensor& a, const Tensor& b) { return dispatch1(OpId::dot, {}, {a, b}); }

namespace ops {
void register_linalg_ops() {
  for (OpId op : {OpId::mm, OpId::bmm, OpId::matmul, OpId::linear, OpId::outer, OpId::dot})
    op_def_mut(op).infer = infer_matmul;
  op_def_mut(OpId::matmul).decompose = decompose_matmul;
  op_def_mut(OpId::linear).decompose = decompose_linear;
  op_def_mut(OpId::outer).decompose = decompose_outer;
  op_def_mut(OpId::dot).decompose = decompose_dot;
  register_einsum_op();
  register_quant_ops();
  register_linalg_decomp_ops();
  register_conv_ops();
  register_conv_grad_ops();
}
}  // namespace ops

}  // namespace ember
