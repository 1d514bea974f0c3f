#pragma once
// What torch.fft's front ends share (private; ember/fft.cpp): the input's promotion, trimming
// or zero-padding, and a norm string as the registry ops' normalisation.
#include <cstdint>
#include <string>

#include "ember/tensor.h"

namespace ember::fft::detail {

/// x as complex of the dtype torch.fft gives (f32 -> c64, f64 -> c128, others -> the default's).
Tensor as_complex_input(const Tensor& x);
/// The real dtype torch.fft computes a real input in (ints and halves -> the default dtype).
Tensor as_real_input(const Tensor& x);
/// x along `dim` trimmed or zero-padded to n points.
Tensor fit(const Tensor& x, int64_t n, int64_t dim);
/// "backward", "ortho" or "forward" (ValueError otherwise) as the ops' normalisation of a
/// transform in the direction `forward`: 0 none, 1 by 1/sqrt(n), 2 by 1/n.
int norm_mode(const char* op, const std::string& norm, bool forward);

}  // namespace ember::fft::detail
