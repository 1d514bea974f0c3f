// The FFT's registry ops, torch's _fft_c2c / _fft_r2c / _fft_c2r: every ember::fft function
// dispatches one of them (ember/fft.cpp, fft_nd.cpp), so the native kernels
// (ember/backends/flex/fft_ops.cpp, flex's and cpu's) run under autodiff too, and each VJP is
// itself one of these ops (torch's derivatives.yaml). Attrs:
//   ints: the dims transformed (wrapped, in the caller's order; the real dim of r2c / c2r last)
//   i[0]: the normalisation, 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of the signal
//         sizes (c2r: of the output)
//   fft_c2c: b[0] forward (e^-2 pi i jk / n) or inverse (e^+).
//   fft_r2c: b[0] onesided (the last dim keeps n / 2 + 1 frequencies); always forward.
//   fft_c2r: i[1] the output's size along the last dim; the input has i[1] / 2 + 1 there.
#include "ember/autodiff/rules.h"
#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/fft_ops.h"

namespace ember {
namespace {

void infer_fft(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  const Tensor& x = in[0];
  ops::require_defined(x, name);
  const bool real_in = op == OpId::fft_r2c;
  ops::require_dtype(name, x.dtype(),
                     real_in ? mask_of(DType::F32) | mask_of(DType::F64) : kComplexDTypes,
                     real_in ? "a float32 or float64 input" : "a complex64 or complex128 input");
  if (a.ints.empty()) detail::throw_value(name, "expected at least one dim to transform");
  const BackendImpl* b = backend_for(x.device().backend());
  if (b && !b->is_host())
    detail::throw_not_implemented(name, "complex results run on the host devices (flex, cpu) "
                                        "only, not on " + x.device().str());
  Shape shape = x.shape();
  for (int64_t d : a.ints) {
    if (d < 0 || d >= x.dim()) detail::throw_value(name, "dim " + std::to_string(d) + " out of range");
    if (x.size(d) < 1 && !(op == OpId::fft_c2r && d == a.ints.back()))
      detail::throw_value(name, "invalid number of data points (0) along dim " + std::to_string(d));
  }
  const int64_t last = a.ints.back();
  switch (op) {
    case OpId::fft_c2c:
      out.add(shape, x.dtype());
      return;
    case OpId::fft_r2c:
      if (a.b[0]) shape[size_t(last)] = x.size(last) / 2 + 1;
      out.add(shape, complex_dtype_for(x.dtype()));
      return;
    default: {  // fft_c2r
      const int64_t n = a.i[1];
      if (n < 1) detail::throw_value(name, "invalid number of data points (" + std::to_string(n) + ")");
      if (x.size(last) != n / 2 + 1)
        detail::throw_shape(name, "expected " + std::to_string(n / 2 + 1) + " frequencies along dim " +
                                      std::to_string(last) + " for " + std::to_string(n) +
                                      " output points, found " + std::to_string(x.size(last)));
      shape[size_t(last)] = n;
      out.add(shape, complex_part_dtype(x.dtype()));
      return;
    }
  }
}

// c2c: the adjoint of a DFT is the DFT of the other direction, with the same normalisation.
TensorList vjp_c2c(const VjpCtx& c) {
  return {fft::detail::c2c(c.grad(0), c.attrs.ints, int(c.attrs.i[0]), !c.attrs.b[0])};
}

// r2c: the one-sided spectrum zero-padded to the full length, the inverse c2c, the real part.
TensorList vjp_r2c(const VjpCtx& c) {
  Tensor g = c.grad(0);
  const int64_t last = c.attrs.ints.back(), n = c.input(0).size(last);
  if (c.attrs.b[0] && g.size(last) < n) {
    Shape p(size_t(2 * (g.dim() - last)), 0);
    p[p.size() - 1] = n - g.size(last);
    g = pad(g, p);
  }
  return {real(fft::detail::c2c(g, c.attrs.ints, int(c.attrs.i[0]), false)).contiguous()};
}

// c2r: the one-sided r2c of the gradient, the frequencies whose mirror images fell outside the
// one-sided half (1 .. n - (n / 2 + 1)) doubled.
TensorList vjp_c2r(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  const int64_t last = c.attrs.ints.back(), n = g.size(last), h = n / 2 + 1;
  Tensor gi = fft::detail::r2c(g, c.attrs.ints, int(c.attrs.i[0]), true);
  if (n - h > 0) {
    std::vector<double> m(size_t(h), 1.0);
    for (int64_t k = 1; k <= n - h; ++k) m[size_t(k)] = 2.0;
    Shape s(size_t(g.dim() - last), 1);
    s[0] = h;
    gi = gi * tensor(m, s, complex_part_dtype(gi.dtype()), gi.device());
  }
  return {gi};
}

Attrs fft_attrs(const Shape& dims, int norm) {
  Attrs a;
  a.ints = dims;
  a.i[0] = norm;
  return a;
}

}  // namespace

namespace fft::detail {

Tensor c2c(const Tensor& x, const Shape& dims, int norm, bool forward) {
  Attrs a = fft_attrs(dims, norm);
  a.b[0] = forward;
  return dispatch1(OpId::fft_c2c, a, {x});
}

Tensor r2c(const Tensor& x, const Shape& dims, int norm, bool onesided) {
  Attrs a = fft_attrs(dims, norm);
  a.b[0] = onesided;
  return dispatch1(OpId::fft_r2c, a, {x});
}

Tensor c2r(const Tensor& x, const Shape& dims, int norm, int64_t last_dim_size) {
  Attrs a = fft_attrs(dims, norm);
  a.i[1] = last_dim_size;
  return dispatch1(OpId::fft_c2r, a, {x});
}

}  // namespace fft::detail

namespace ops {
void register_fft_ops() {
  for (OpId op : {OpId::fft_c2c, OpId::fft_r2c, OpId::fft_c2r}) op_def_mut(op).infer = infer_fft;
  autodiff::set_vjp(OpId::fft_c2c, vjp_c2c);
  autodiff::set_vjp(OpId::fft_r2c, vjp_r2c);
  autodiff::set_vjp(OpId::fft_c2r, vjp_c2r);
}
}  // namespace ops

}  // namespace ember
