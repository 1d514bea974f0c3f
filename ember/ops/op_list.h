#pragma once
// The one list of ops. The enum, the name table, dispatch tables, the conformance enumeration
// and the coverage report all come from here. X(name, category).
// Attribute use per op is documented beside its inference function in ember/ops/*.cpp.

#define EMBER_OPS(X)                                                                          \
  /* creation */                                                                              \
  X(empty, Creation) X(full, Creation) X(zeros, Creation) X(ones, Creation)                   \
  X(arange, Creation) X(linspace, Creation) X(eye, Creation)                                  \
  X(empty_like, Creation) X(zeros_like, Creation) X(ones_like, Creation)                      \
  X(full_like, Creation)                                                                      \
  /* random */                                                                                \
  X(rand, Random) X(randn, Random) X(randint, Random) X(bernoulli, Random)                    \
  X(normal, Random) X(uniform, Random) X(rand_like, Random) X(randn_like, Random)             \
  /* unary */                                                                                 \
  X(cast, Unary) X(neg, Unary) X(abs, Unary) X(sign, Unary) X(exp, Unary) X(exp2, Unary)      \
  X(expm1, Unary) X(log, Unary) X(log2, Unary) X(log10, Unary) X(log1p, Unary)                \
  X(sqrt, Unary) X(rsqrt, Unary) X(square, Unary) X(reciprocal, Unary) X(sin, Unary)          \
  X(cos, Unary) X(tan, Unary) X(asin, Unary) X(acos, Unary) X(atan, Unary) X(sinh, Unary)     \
  X(cosh, Unary) X(tanh, Unary) X(asinh, Unary) X(acosh, Unary) X(atanh, Unary)               \
  X(erf, Unary) X(erfinv, Unary) X(floor, Unary) X(ceil, Unary) X(round, Unary)               \
  X(trunc, Unary) X(sigmoid, Unary) X(relu, Unary) X(gelu, Unary) X(silu, Unary)              \
  X(softplus, Unary) X(mish, Unary) X(elu, Unary) X(leaky_relu, Unary) X(hardswish, Unary)    \
  X(hardsigmoid, Unary) X(logical_not, Unary) X(bitwise_not, Unary) X(isnan, Unary)           \
  X(isinf, Unary) X(isfinite, Unary) X(nan_to_num, Unary)                                     \
  /* binary (broadcasting) */                                                                 \
  X(add, Binary) X(sub, Binary) X(mul, Binary) X(div, Binary) X(remainder, Binary)            \
  X(fmod, Binary) X(pow, Binary) X(atan2, Binary) X(maximum, Binary) X(minimum, Binary)       \
  X(eq, Binary) X(ne, Binary) X(lt, Binary) X(le, Binary) X(gt, Binary) X(ge, Binary)         \
  X(logical_and, Binary) X(logical_or, Binary) X(logical_xor, Binary)                         \
  X(bitwise_and, Binary) X(bitwise_or, Binary) X(bitwise_xor, Binary)                         \
  X(bitwise_left_shift, Binary) X(bitwise_right_shift, Binary)                                \
  /* ternary */                                                                               \
  X(where, Ternary) X(clamp, Ternary) X(lerp, Ternary) X(addcmul, Ternary)                    \
  X(addcdiv, Ternary)                                                                         \
  /* reductions */                                                                            \
  X(sum, Reduce) X(mean, Reduce) X(prod, Reduce) X(max, Reduce) X(min, Reduce)                \
  X(amax, Reduce) X(amin, Reduce) X(argmax, Reduce) X(argmin, Reduce) X(any, Reduce)          \
  X(all, Reduce) X(var, Reduce) X(std, Reduce) X(logsumexp, Reduce) X(norm, Reduce)           \
  X(count_nonzero, Reduce)                                                                    \
  /* scans and order statistics */                                                            \
  X(cumsum, Scan) X(cumprod, Scan) X(cummax, Scan) X(cummin, Scan) X(sort, Scan)              \
  X(argsort, Scan) X(topk, Scan) X(kthvalue, Scan) X(median, Scan)                            \
  /* linear algebra */                                                                        \
  X(mm, Matmul) X(bmm, Matmul) X(matmul, Matmul) X(linear, Matmul) X(outer, Matmul)           \
  X(dot, Matmul) X(einsum, Matmul)                                                            \
  /* matrix functions and decompositions (ember/linalg.h) */                                  \
  X(linalg_inv, Linalg) X(linalg_solve, Linalg) X(linalg_det, Linalg)                         \
  X(linalg_slogdet, Linalg) X(linalg_cholesky, Linalg) X(linalg_qr, Linalg)                   \
  X(linalg_svd, Linalg) X(linalg_eigh, Linalg) X(linalg_lu_factor, Linalg)                    \
  X(linalg_lu_solve, Linalg) X(linalg_solve_triangular, Linalg) X(matrix_exp, Linalg)         \
  X(linalg_svdvals, Composite) X(linalg_eigvalsh, Composite) X(linalg_lstsq, Composite)       \
  X(linalg_pinv, Composite) X(linalg_matrix_rank, Composite) X(linalg_matrix_norm, Composite) \
  X(linalg_vector_norm, Composite) X(linalg_cross, Composite) X(trace, Composite)             \
  X(diag, Composite) X(diag_embed, Composite) X(matrix_power, Composite)                      \
  X(linalg_eig, Linalg)                                                                       \
  /* the FFT's primitives (ember/fft.h), torch's _fft_c2c / _fft_r2c / _fft_c2r */            \
  X(fft_c2c, Linalg) X(fft_r2c, Linalg) X(fft_c2r, Linalg)                                   \
  /* weight-only quantized products (ember/ops/quant.h) */                                     \
  X(linear_int8, Matmul) X(linear_int4, Matmul)                                               \
  /* indexing */                                                                              \
  X(slice, Index) X(select, Index) X(narrow, Index) X(index_select, Index) X(gather, Index)   \
  X(scatter, Index) X(scatter_add, Index) X(scatter_reduce, Index) X(index_add, Index)        \
  X(index_put, Index) X(masked_fill, Index) X(masked_select, Index) X(nonzero, Index)         \
  X(take, Index) X(one_hot, Index)                                                            \
  /* layout */                                                                                \
  X(reshape, Layout) X(view, Layout) X(flatten, Layout) X(unflatten, Layout)                  \
  X(permute, Layout) X(transpose, Layout) X(movedim, Layout) X(squeeze, Layout)               \
  X(unsqueeze, Layout) X(expand, Layout) X(broadcast_to, Layout) X(contiguous, Layout)        \
  X(copy, Layout) X(cat, Layout) X(stack, Layout) X(split, Layout) X(chunk, Layout)           \
  X(unbind, Layout) X(repeat, Layout) X(tile, Layout) X(repeat_interleave, Layout)            \
  X(flip, Layout) X(roll, Layout) X(tril, Layout) X(triu, Layout) X(diagonal, Layout)         \
  X(pad, Layout) X(meshgrid, Layout) X(view_as_real, Layout) X(view_as_complex, Layout)      \
  /* convolution */                                                                           \
  X(conv1d, Conv) X(conv2d, Conv) X(conv3d, Conv) X(conv_transpose1d, Conv)                   \
  X(conv_transpose2d, Conv) X(unfold, Conv) X(fold, Conv)                                     \
  X(conv_input_grad, Conv) X(conv_weight_grad, Conv)                                          \
  /* pooling and resampling */                                                                \
  X(max_pool1d, Pool) X(max_pool2d, Pool) X(avg_pool1d, Pool) X(avg_pool2d, Pool)             \
  X(adaptive_avg_pool1d, Pool) X(adaptive_avg_pool2d, Pool) X(adaptive_max_pool2d, Pool)      \
  X(interpolate, Pool)                                                                        \
  /* nn functional */                                                                         \
  X(softmax, Composite) X(log_softmax, Composite) X(layer_norm, Composite)                    \
  X(rms_norm, Composite) X(group_norm, Composite) X(batch_norm, Composite)                    \
  X(dropout, Composite) X(embedding, Composite) X(scaled_dot_product_attention, Composite)    \
  X(cross_entropy, Composite) X(nll_loss, Composite) X(mse_loss, Composite)                  \
  X(l1_loss, Composite) X(smooth_l1_loss, Composite) X(huber_loss, Composite)                \
  X(binary_cross_entropy, Composite) X(binary_cross_entropy_with_logits, Composite)          \
  X(kl_div, Composite) X(cosine_similarity, Composite) X(pairwise_distance, Composite)        \
  X(cdist, Composite)                                                                         \
  /* backward ops the VJP rules call (fused devices run each as one kernel) */                 \
  X(layer_norm_backward, Composite) X(rms_norm_backward, Composite)                            \
  /* vision (ember/vision): detection and image-analysis ops with kernels of their own */    \
  X(nms, Index) X(roi_align, Pool) X(erode, Pool) X(dilate, Pool)                            \
  X(connected_components, Index)                                                              \
  /* ops registered at run time (ember/user_op.h): Attrs::i[0] names which */               \
  X(user_op, User)
