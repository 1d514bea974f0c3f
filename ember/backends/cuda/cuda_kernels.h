#pragma once
// The cuda backend's kernel families (private) and the helpers they share.
#include "ember/backends/backend.h"

namespace ember::cuda {

/// copy, contiguous, cast, empty and full (copy_ops.cpp).
void register_copy_kernels(BackendImpl& b);
/// arange, linspace, eye, rand, uniform, randn, normal and randint (creation_ops.cpp).
void register_creation_kernels(BackendImpl& b);
/// mm, bmm, matmul and linear through cuBLASLt (cublas_matmul.cpp).
void register_cublas_kernels(BackendImpl& b);
/// sort, argsort, topk, cumsum and cumprod through CUB (sort_scan_ops.cpp).
void register_sort_scan_kernels(BackendImpl& b);
/// cat, stack, flip, roll and repeat as strided copies (layout_ops.cpp).
void register_layout_kernels(BackendImpl& b);
/// index_select, gather, scatter, scatter_add, index_add and embedding (index_ops.cpp).
void register_index_kernels(BackendImpl& b);
/// max_pool1d/2d on the generated-by-hand kernel of index_kernel.cu: with indices, any dilation
/// and ceil_mode (what cuDNN's pooling cannot serve).
TensorList max_pool_with_indices(const OpCall& c);
/// scaled_dot_product_attention's fused route and OpId::user_op on cuda (attention_ops.cpp).
void register_attention_kernels(BackendImpl& b);
/// The cuda kernel of the user op `id` (an op of ember's own registered through kl::register_op
/// with a cuda-only body, e.g. the fused attention's): OpId::user_op on cuda runs it for that id.
void set_user_kernel(int id, Kernel k);
/// The elementwise ops, reductions, softmax/log_softmax and layer/RMS norm as generated kl
/// kernels, one per call (executor.cpp): what Device::cuda(i).eager() runs.
void register_kl_kernels(BackendImpl& b);

/// Writes `src` into `dst` on dst's device: src broadcasts to dst's shape, is cast to dst's dtype,
/// and both may have any strides (a graph constant src fills dst). Ordered on dst's default
/// stream; `op` names the caller in errors.
void copy_into(const Tensor& dst, const Tensor& src, const char* op);

/// The device address of `t`'s first element (after queued work that writes it has run).
inline void* device_ptr(const Tensor& t) { return t.impl()->data(); }

}  // namespace ember::cuda
