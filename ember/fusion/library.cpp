#include "ember/fusion/library.h"

#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/ops/modes.h"

namespace ember::fusion {
namespace {

bool activation_of(const Node& act, cpu::Epilogue& ep) {
  switch (act.op) {
    case OpId::relu: ep.act = cpu::Activation::Relu; return true;
    case OpId::silu: ep.act = cpu::Activation::Silu; return true;
    case OpId::sigmoid: ep.act = cpu::Activation::Sigmoid; return true;
    case OpId::tanh: ep.act = cpu::Activation::Tanh; return true;
    case OpId::gelu:
      ep.act = act.attrs.mode == uint8_t(ops::GeluApprox::Tanh) ? cpu::Activation::GeluTanh
                                                           : cpu::Activation::GeluErf;
      return true;
    default: return false;
  }
}

Tensor input(const Node& n, size_t j, const std::vector<Tensor>& vals) {
  const NodeInput& in = n.inputs[j];
  return in.value >= 0 ? vals[size_t(in.value)] : in.tensor;
}

}  // namespace

bool library_op(OpId op) {
  return op == OpId::mm || op == OpId::bmm || op == OpId::matmul || op == OpId::linear;
}

bool epilogue_pair(const Node& lib, const Node& act) {
  cpu::Epilogue ep;
  if (lib.device.backend() != Backend::Cpu || !cpu::dnnl_available()) return false;
  if (!library_op(lib.op) || lib.meta.n != 1 || lib.meta.m[0].dtype != DType::F32) return false;
  if (act.inputs.size() != 1 || act.meta.m[0].dtype != DType::F32) return false;
  if (cpu::skinny_product(lib.meta.m[0].shape)) return false;  // flex's kernel, then the act
  return activation_of(act, ep);
}

bool run_with_epilogue(const Node& lib, const Node& act, const std::vector<Tensor>& vals,
                       const Tensor& out) {
  cpu::Epilogue ep;
  activation_of(act, ep);
  const Tensor a = input(lib, 0, vals), b = input(lib, 1, vals);
  if (lib.op == OpId::linear) {
    const Tensor bias = lib.inputs.size() > 2 ? input(lib, 2, vals) : Tensor();
    if (!cpu::can_linear(a, b, bias, ep)) return false;
    cpu::linear(a, b, bias, ep, out);
    return true;
  }
  if (!cpu::can_matmul(a, b, ep)) return false;
  cpu::matmul(a, b, ep, out);
  return true;
}

}  // namespace ember::fusion
