#pragma once
// Library calls in a fused queue (private to ember/fusion): matrix products (mm, bmm, matmul,
// linear) are queued like any op, so a training step's queue does not stop at each one, and a
// product whose only reader is an activation runs as one oneDNN primitive with that activation
// as its epilogue (linear + bias + ReLU/GELU/SiLU/sigmoid/tanh/clamp): the product's value never
// reaches memory. Convolutions likewise, on cpu.
#include <vector>

#include "ember/fusion/queue.h"

namespace ember::cpu {
struct Epilogue;
}

namespace ember::fusion {

/// A device backend's products with epilogues (cuda: cuBLASLt), which that backend sets when it
/// is made. `serves` answers at planning time from the product's dtype and the activation;
/// `run` runs mm/bmm/matmul/linear into `out` or returns false (the caller then runs the
/// product and the activation on their own).
struct DeviceProducts {
  bool (*serves)(const cpu::Epilogue& ep, DType dt) = nullptr;
  bool (*run)(OpId op, const Tensor& a, const Tensor& b, const Tensor& bias,
              const cpu::Epilogue& ep, const Tensor& out) = nullptr;
};
void set_device_products(Backend b, DeviceProducts p);

/// Whether the fusion layer queues `op` as an opaque library call.
bool library_op(OpId op);
/// Convolutions (conv1d/2d/3d) are queued as library calls on cpu with oneDNN only, so that an
/// activation after one (ReLU, relu6's clamp, ...) becomes its oneDNN post-op.
bool conv_library_op(OpId op);
bool queued_library_call(const OpCall& c);
/// Whether the value of convolution `n` (with its epilogue) may be laid out channels-last when
/// only such convolutions read it: a conv2d that oneDNN runs (on cpu), whose kernels read and
/// write that layout without reorders, and take any strides.
bool channels_last_conv(const Node& n);
/// Whether `act` (reading the product `lib` makes) can be `lib`'s epilogue.
bool epilogue_pair(const Node& lib, const Node& act);
/// Whether `add` (reading the convolution `lib` makes and one other value) can be `lib`'s
/// residual, summed into its output before any activation epilogue.
bool residual_pair(const Node& lib, const Node& add);
/// Runs `lib` with the residual `res` (or null) and then `act` (or null) as its epilogue into
/// `out` (the last one's value); false when oneDNN does not serve these operands (the caller
/// then runs the nodes on their own).
bool run_with_epilogue(const Node& lib, const Node* act, const Node* res,
                       const std::vector<Tensor>& vals, const Tensor& out);

}  // namespace ember::fusion
