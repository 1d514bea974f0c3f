// arange, linspace, eye and the random draws (rand, uniform, randn, normal, randint) on CUDA:
// the kernel of creation_kernel.cu, one thread an element, with the values and Philox streams
// of flex's creation kernels (a seed gives the same tensor on every device). full and empty are
// copy_ops.cpp's; the *_like forms and zeros/ones decompose into these.
#include "ember/backends/cuda/creation_kernel.h"
#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/flex/loops.h"
#include "ember/random.h"

namespace ember::cuda {
namespace {

TensorList generate(const OpCall& c, GenerateArgs a) {
  Tensor out = flex::new_output(c);
  a.dtype = int(out.dtype());
  a.numel = out.numel();
  a.out = device_ptr(out);
  if (a.numel == 0) return {out};
  const char* op = op_name(c.op);
  const int dev = out.device().index();
  set_device(dev);
  check(launch_generate(a, stream_handle(nullptr, dev)), op, "creation kernel launch");
  after_launch(op, dev);
  return {out};
}

GenerateArgs random_args(const OpCall& c, Generate kind) {
  const auto st = detail::philox_of(c.attrs);
  GenerateArgs a;
  a.kind = kind;
  a.seed = st.seed;
  a.offset = st.offset;
  return a;
}

TensorList k_arange(const OpCall& c) {
  const Attrs& at = c.attrs;
  GenerateArgs a;
  // Integer outputs of integer bounds count in int64 (wrapping); the rest in double.
  const bool ints =
      is_integral(c.meta.m[0].dtype) && !at.s[0].is_floating() && !at.s[2].is_floating();
  a.kind = ints ? Generate::ArangeInt : Generate::ArangeFloat;
  if (ints)
    a.i0 = at.s[0].to_int(), a.i1 = at.s[2].to_int();
  else
    a.f0 = at.s[0].to_double(), a.f1 = at.s[2].to_double();
  return generate(c, a);
}

TensorList k_linspace(const OpCall& c) {
  GenerateArgs a;
  a.kind = Generate::Linspace;
  a.i0 = c.attrs.i[0];
  a.i1 = a.i0 / 2;
  a.f0 = c.attrs.f[0], a.f1 = c.attrs.f[1];
  a.f2 = a.i0 > 1 ? (a.f1 - a.f0) / double(a.i0 - 1) : 0;
  return generate(c, a);
}

TensorList k_eye(const OpCall& c) {
  GenerateArgs a;
  a.kind = Generate::Eye;
  a.i0 = c.attrs.i[1];
  return generate(c, a);
}

TensorList k_uniform(const OpCall& c) {
  GenerateArgs a = random_args(c, Generate::Uniform);
  a.f0 = c.op == OpId::rand ? 0 : c.attrs.f[0];
  a.f1 = c.op == OpId::rand ? 1 : c.attrs.f[1];
  return generate(c, a);
}

TensorList k_normal(const OpCall& c) {
  GenerateArgs a = random_args(c, Generate::Normal);
  a.f0 = c.op == OpId::randn ? 0 : c.attrs.f[0];
  a.f1 = c.op == OpId::randn ? 1 : c.attrs.f[1];
  return generate(c, a);
}

TensorList k_randint(const OpCall& c) {
  GenerateArgs a = random_args(c, Generate::Randint);
  a.i0 = c.attrs.i[0];
  a.i1 = int64_t(uint64_t(c.attrs.i[1]) - uint64_t(c.attrs.i[0]));  // the range, unsigned
  return generate(c, a);
}

}  // namespace

void register_creation_kernels(BackendImpl& b) {
  b.set_kernel(OpId::arange, k_arange, kNumericDTypes);
  b.set_kernel(OpId::linspace, k_linspace, kNumericDTypes);
  b.set_kernel(OpId::eye, k_eye, kAllDTypes);
  b.set_kernel(OpId::rand, k_uniform, kFloatDTypes);
  b.set_kernel(OpId::uniform, k_uniform, kFloatDTypes);
  b.set_kernel(OpId::randn, k_normal, kFloatDTypes);
  b.set_kernel(OpId::normal, k_normal, kFloatDTypes);
  b.set_kernel(OpId::randint, k_randint, kNumericDTypes);
}

}  // namespace ember::cuda
