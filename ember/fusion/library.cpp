#include "ember/fusion/library.h"

#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/ops/modes.h"
#include "ember/tensor_impl.h"

namespace ember::fusion {
namespace {

// A graph constant's value as a float (clamp's bounds), when it is one.
bool constant_float(const NodeInput& in, float& f) {
  if (in.value >= 0 || !ember::detail::is_constant(in.tensor)) return false;
  f = float(in.tensor.impl()->constant.to<double>());
  return true;
}

bool activation_of(const Node& act, cpu::Epilogue& ep) {
  if (act.op == OpId::clamp) {  // relu6 and hardtanh: both bounds constant
    ep.act = cpu::Activation::Clamp;
    return act.inputs.size() == 3 && constant_float(act.inputs[1], ep.alpha) &&
           constant_float(act.inputs[2], ep.beta);
  }
  if (act.inputs.size() != 1) return false;
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

DeviceProducts g_products[kNumBackends];

Tensor input(const Node& n, size_t j, const std::vector<Tensor>& vals) {
  const NodeInput& in = n.inputs[j];
  return in.value >= 0 ? vals[size_t(in.value)] : in.tensor;
}

}  // namespace

void set_device_products(Backend b, DeviceProducts p) { g_products[int(b)] = p; }

bool library_op(OpId op) {
  return op == OpId::mm || op == OpId::bmm || op == OpId::matmul || op == OpId::linear;
}

bool conv_library_op(OpId op) {
  return op == OpId::conv1d || op == OpId::conv2d || op == OpId::conv3d;
}

bool queued_library_call(const OpCall& c) {
  return conv_library_op(c.op) && c.device.backend() == Backend::Cpu && cpu::dnnl_available();
}

bool channels_last_conv(const Node& n) {
  return n.op == OpId::conv2d && n.device.backend() == Backend::Cpu && cpu::dnnl_available() &&
         n.meta.n == 1 && n.meta.m[0].dtype == DType::F32;
}

bool epilogue_pair(const Node& lib, const Node& act) {
  cpu::Epilogue ep;
  if (const DeviceProducts& p = g_products[int(lib.device.backend())]; p.serves) {
    const DType dt = lib.meta.n == 1 ? lib.meta.m[0].dtype : DType::Bool;
    return library_op(lib.op) && lib.meta.n == 1 && !act.inputs.empty() &&
           act.meta.m[0].dtype == dt && activation_of(act, ep) && p.serves(ep, dt);
  }
  if (lib.device.backend() != Backend::Cpu || !cpu::dnnl_available()) return false;
  const bool conv = conv_library_op(lib.op);
  if (!(library_op(lib.op) || conv) || lib.meta.n != 1 || lib.meta.m[0].dtype != DType::F32)
    return false;
  if (act.inputs.empty() || act.meta.m[0].dtype != DType::F32) return false;
  if (!conv && cpu::skinny_product(lib.meta.m[0].shape)) return false;  // flex's, then the act
  return activation_of(act, ep);
}

bool residual_pair(const Node& lib, const Node& add) {
  if (lib.device.backend() != Backend::Cpu || !cpu::dnnl_available()) return false;
  if (!conv_library_op(lib.op) || lib.meta.n != 1 || lib.meta.m[0].dtype != DType::F32)
    return false;
  return add.op == OpId::add && add.inputs.size() == 2 && add.inputs[0].defined &&
         add.inputs[1].defined && add.meta.m[0].dtype == DType::F32 &&
         add.meta.m[0].shape == lib.meta.m[0].shape;
}

bool run_with_epilogue(const Node& lib, const Node* act, const Node* res,
                       const std::vector<Tensor>& vals, const Tensor& out) {
  cpu::Epilogue ep;
  if (act) activation_of(*act, ep);
  if (res) {  // the add's other operand (the first that the convolution did not make)
    const int32_t mine = lib.outputs[0];
    const size_t other = res->inputs[0].value == mine ? 1 : 0;
    ep.residual = input(*res, other, vals);
    ep.residual_first = true;
  }
  const Tensor a = input(lib, 0, vals), b = input(lib, 1, vals);
  if (const DeviceProducts& p = g_products[int(lib.device.backend())]; p.run) {
    const Tensor bias =
        lib.op == OpId::linear && lib.inputs.size() > 2 ? input(lib, 2, vals) : Tensor();
    return !res && p.run(lib.op, a, b, bias, ep, out);
  }
  if (conv_library_op(lib.op)) {
    const Tensor bias = lib.inputs.size() > 2 ? input(lib, 2, vals) : Tensor();
    return cpu::try_conv(lib.op, lib.attrs, a, b, bias, ep, out).defined();
  }
  if (res) return false;  // products take no residual here
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
