// Complex tensors: view_as_real / view_as_complex (the two ops that change an element's type
// without moving data), the parts as views, and the complex functions built on them.
// Attrs: none. The arithmetic on complex operands is routed in ember/ops/complex_route.cpp.
#include "ember/ops/complex.h"

#include <numbers>

#include "ember/autodiff/rules.h"
#include "ember/ember.h"
#include "ember/ops/common.h"
#include "ember/ops/complex_route.h"
#include "ember/tensor_impl.h"

namespace ember {
namespace {

void infer_view_as(OpId op, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  const Tensor& x = in[0];
  if (op == OpId::view_as_real) {
    if (!is_complex(x.dtype()))
      detail::throw_dtype(name, "expected a complex tensor, found " +
                                    std::string(dtype_name(x.dtype())));
    Shape s = x.shape();
    s.push_back(2);
    out.add(std::move(s), complex_part_dtype(x.dtype()));
    return;
  }
  if (x.dtype() != DType::F32 && x.dtype() != DType::F64)
    detail::throw_dtype(name, "expected a float32 or float64 tensor, found " +
                                  std::string(dtype_name(x.dtype())));
  if (x.dim() == 0 || x.shape().back() != 2)
    detail::throw_shape(name, "expected a last dim of size 2, found shape " + shape_str(x.shape()));
  if (x.stride(-1) != 1)
    detail::throw_shape(name, "expected a last dim of stride 1, found strides " +
                                  shape_str(x.strides()) + " (call contiguous() first)");
  for (int64_t d = 0; d + 1 < x.dim(); ++d)
    if (x.stride(d) % 2 != 0 && x.size(d) > 1)
      detail::throw_shape(name, "expected every stride but the last to be even, found strides " +
                                    shape_str(x.strides()) + " (call contiguous() first)");
  if (x.offset() % 2 != 0)
    detail::throw_shape(name, "expected an even storage offset, found " +
                                  std::to_string(x.offset()) + " (call contiguous() first)");
  out.add(Shape(std::span<const int64_t>(x.shape().data(), x.shape().size() - 1)),
          complex_dtype_for(x.dtype()));
}

TensorList vjp_view_as_real(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  if (!g.defined() || !c.needs_grad(0)) return {Tensor()};
  return {view_as_complex(g.is_contiguous() ? g : contiguous(g))};
}
TensorList vjp_view_as_complex(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  if (!g.defined() || !c.needs_grad(0)) return {Tensor()};
  return {view_as_real(g)};
}

void require_float_part(const Tensor& t, const char* op, const char* what) {
  ops::require_defined(t, op, what);
  if (t.dtype() != DType::F32 && t.dtype() != DType::F64)
    detail::throw_dtype(op, std::string("expected ") + what + " of float32 or float64, found " +
                                std::string(dtype_name(t.dtype())));
}

Tensor from_parts(const Tensor& re, const Tensor& im, const char* op) {
  require_float_part(re, op, "real parts");
  require_float_part(im, op, "imaginary parts");
  if (re.dtype() != im.dtype())
    detail::throw_dtype(op, "expected parts of one dtype, found " +
                                std::string(dtype_name(re.dtype())) + " and " +
                                std::string(dtype_name(im.dtype())));
  Shape s = broadcast_shapes(re.shape(), im.shape(), op);
  return view_as_complex(stack({expand(re, s), expand(im, s)}, -1));
}

}  // namespace

Tensor view_as_real(const Tensor& x) { return dispatch1(OpId::view_as_real, {}, {x}); }
Tensor view_as_complex(const Tensor& x) { return dispatch1(OpId::view_as_complex, {}, {x}); }

Tensor complex(const Tensor& real, const Tensor& imag) { return from_parts(real, imag, "complex"); }
Tensor polar(const Tensor& abs, const Tensor& angle) {
  require_float_part(abs, "polar", "magnitudes");
  require_float_part(angle, "polar", "angles");
  return from_parts(abs * cos(angle), abs * sin(angle), "polar");
}

Tensor real(const Tensor& x) {
  ops::require_defined(x, "real");
  return is_complex(x.dtype()) ? select(view_as_real(x), -1, 0) : x;
}
Tensor imag(const Tensor& x) {
  ops::require_defined(x, "imag");
  if (!is_complex(x.dtype()))
    detail::throw_dtype("imag", "expected a complex tensor, found " +
                                    std::string(dtype_name(x.dtype())));
  return select(view_as_real(x), -1, 1);
}
Tensor conj(const Tensor& x) {
  ops::require_defined(x, "conj");
  if (!is_complex(x.dtype())) return x;
  Tensor r = view_as_real(x);
  return view_as_complex(stack({select(r, -1, 0), neg(select(r, -1, 1))}, -1));
}
Tensor conj_physical(const Tensor& x) { return conj(x); }
Tensor angle(const Tensor& x) {
  ops::require_defined(x, "angle");
  if (is_complex(x.dtype())) return atan2(imag(x), real(x));
  if (x.dtype() == DType::Bool || is_integral(x.dtype())) return angle(x.to(default_dtype()));
  // torch: pi for negative values, 0 otherwise, NaN kept.
  const double pi = std::numbers::pi;
  return where(isnan(x), x, where(lt(x, 0), full_like(x, pi), zeros_like(x)));
}

namespace detail {
bool call_is_complex(const OpCall& c) {
  for (const Tensor& t : c.inputs)
    if (t.defined() && is_complex(t.dtype())) return true;
  for (int i = 0; i < c.meta.n; ++i)
    if (is_complex(c.meta.m[i].dtype)) return true;
  return false;
}
}  // namespace detail

namespace ops {
void register_complex_ops() {
  for (OpId op : {OpId::view_as_real, OpId::view_as_complex}) op_def_mut(op).infer = infer_view_as;
  autodiff::set_vjp(OpId::view_as_real, vjp_view_as_real);
  autodiff::set_vjp(OpId::view_as_complex, vjp_view_as_complex);
}
}  // namespace ops

}  // namespace ember
