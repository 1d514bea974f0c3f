#pragma once
// The native cpu backend (private): flex's kernel table, with oneDNN kernels for matrix
// products, convolutions and pooling where this build has oneDNN. Each oneDNN kernel decides per
// call whether oneDNN serves it and otherwise runs the flex kernel it replaced, so the backend
// keeps the default supports(): the answer needs strides, attributes and the primitive cache, and
// the fallback is always flex's kernel (never the op's decomposition).
#include <memory>

#include "ember/backends/backend.h"

namespace ember::cpu {

std::unique_ptr<BackendImpl> make_cpu_backend();

/// The flex kernel the cpu backend started from for `op` (what oneDNN kernels fall back to).
Kernel flex_kernel(OpId op);

/// Replaces flex's kernel for `op` with `fn`, for the dtypes flex's kernel serves (fn falls back
/// to flex_kernel(op) for the calls it does not take).
void override_kernel(BackendImpl& b, OpId op, Kernel fn);

/// The oneDNN kernels (dnnl_*.cpp, built when EMBER_DNNL is on).
void register_dnnl_matmul(BackendImpl& b);
void register_dnnl_conv(BackendImpl& b);
void register_dnnl_conv_grad(BackendImpl& b);
void register_dnnl_pool(BackendImpl& b);
/// The LAPACK kernels of the linalg ops (lapack_linalg.cpp, built when EMBER_LAPACK is on).
void register_lapack_linalg(BackendImpl& b);

}  // namespace ember::cpu
