#pragma once
// ember::nn::functional — PyTorch's spelling of the neural-network ops, which live in the core
// (ember/ops/nn.h): convolution, pooling, normalisation, attention and losses.
#include "ember/ops/nn.h"

namespace ember::nn::functional {
using ember::ConvOptions;
using ember::ConvTransposeOptions;
using ember::PoolOptions;
using ember::InterpolateOptions;
using ember::AttentionOptions;
using ember::CrossEntropyOptions;
using ember::adaptive_avg_pool1d;
using ember::adaptive_avg_pool2d;
using ember::adaptive_max_pool2d;
using ember::avg_pool1d;
using ember::avg_pool2d;
using ember::batch_norm;
using ember::binary_cross_entropy;
using ember::binary_cross_entropy_with_logits;
using ember::cdist;
using ember::conv1d;
using ember::conv2d;
using ember::conv3d;
using ember::conv_transpose1d;
using ember::conv_transpose2d;
using ember::cosine_similarity;
using ember::cross_entropy;
using ember::dropout;
using ember::embedding;
using ember::fold;
using ember::group_norm;
using ember::huber_loss;
using ember::interpolate;
using ember::kl_div;
using ember::l1_loss;
using ember::layer_norm;
using ember::log_softmax;
using ember::max_pool1d;
using ember::max_pool1d_with_indices;
using ember::max_pool2d;
using ember::max_pool2d_with_indices;
using ember::mse_loss;
using ember::nll_loss;
using ember::pairwise_distance;
using ember::rms_norm;
using ember::scaled_dot_product_attention;
using ember::smooth_l1_loss;
using ember::softmax;
using ember::unfold;
}  // namespace ember::nn::functional
