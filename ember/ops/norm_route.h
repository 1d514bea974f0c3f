#pragma once
// A backend's own batch-norm backward (private to the batch_norm VJP and the backends): the VJP
// of training-mode batch_norm asks the input's backend first, so a device with a library kernel
// for it (cuDNN's) runs one call instead of the closed form's reductions over [N, *] per channel.
#include "ember/ops/registry.h"

namespace ember::detail {

/// (dx, dweight, dbias) of training-mode batch_norm for x [N, C, *], its weight (or undefined:
/// ones), the output's cotangent dy and eps; the statistics are those of the batch. dweight and
/// dbias are float32 [C]. An empty list when the backend's kernel does not serve the call (the
/// VJP's closed form then runs).
using BatchNormBackwardFn = TensorList (*)(const Tensor& x, const Tensor& weight,
                                           const Tensor& dy, double eps);
void set_batch_norm_backward(Backend b, BatchNormBackwardFn fn);
BatchNormBackwardFn batch_norm_backward(Backend b);

}  // namespace ember::detail
