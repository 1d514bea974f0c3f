#pragma once
// ember::nn::functional — PyTorch's spelling of the neural-network ops, which live in the core
// (ember/ops/nn.h): convolution, pooling, normalisation, attention and losses, and the
// activations, one_hot, pad and linear that torch::nn::functional also has.
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/unary.h"

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
using ember::elu;
using ember::embedding;
using ember::fold;
using ember::gelu;
using ember::group_norm;
using ember::hardsigmoid;
using ember::hardswish;
using ember::huber_loss;
using ember::interpolate;
using ember::kl_div;
using ember::l1_loss;
using ember::layer_norm;
using ember::leaky_relu;
using ember::linear;
using ember::log_softmax;
using ember::max_pool1d;
using ember::max_pool1d_with_indices;
using ember::max_pool2d;
using ember::max_pool2d_with_indices;
using ember::mish;
using ember::mse_loss;
using ember::nll_loss;
using ember::one_hot;
using ember::pad;
using ember::pairwise_distance;
using ember::relu;
using ember::rms_norm;
using ember::scaled_dot_product_attention;
using ember::silu;
using ember::smooth_l1_loss;
using ember::softmax;
using ember::softplus;
using ember::unfold;
}  // namespace ember::nn::functional
