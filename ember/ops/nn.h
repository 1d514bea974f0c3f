#pragma once
// Neural-network ops of the registry: convolution, pooling, resampling, normalisation, dropout,
// embedding, attention, losses and distances. Declared and defined in the core (ember/ops);
// ember/nn/functional.h re-exports them as ember::nn::functional::* (PyTorch's spelling).
// Spatial arguments accept one value (used for every spatial dim) or one per dim.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/ops/modes.h"
#include "ember/tensor.h"

namespace ember {


struct ConvOptions {
  Shape stride = {1};
  Shape padding = {0};
  /// "same" or "valid" overrides `padding` when set.
  std::string padding_mode = {};
  Shape dilation = {1};
  int64_t groups = 1;
};
/// x [N, C, L] (or [C, L]), w [O, C/groups, K].
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const ConvOptions& o = {});
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const ConvOptions& o = {});
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const ConvOptions& o = {});

struct ConvTransposeOptions {
  Shape stride = {1};
  Shape padding = {0};
  Shape output_padding = {0};
  int64_t groups = 1;
  Shape dilation = {1};
};
/// w [C_in, C_out/groups, K...].
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias = {},
                        const ConvTransposeOptions& o = {});
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias = {},
                        const ConvTransposeOptions& o = {});

/// im2col: [N, C, H, W] -> [N, C*kh*kw, L].
Tensor unfold(const Tensor& x, const Shape& kernel_size, const Shape& dilation = {1},
              const Shape& padding = {0}, const Shape& stride = {1});
/// col2im: [N, C*kh*kw, L] -> [N, C, H, W], summing overlaps.
Tensor fold(const Tensor& x, const Shape& output_size, const Shape& kernel_size,
            const Shape& dilation = {1}, const Shape& padding = {0}, const Shape& stride = {1});

struct PoolOptions {
  Shape kernel_size = {};
  Shape stride = {};  // defaults to kernel_size
  Shape padding = {0};
  Shape dilation = {1};  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
};
Tensor max_pool1d(const Tensor& x, const PoolOptions& o);
Tensor max_pool2d(const Tensor& x, const PoolOptions& o);
/// (values, indices into each flattened spatial plane), like return_indices=True.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const PoolOptions& o);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const PoolOptions& o);
Tensor avg_pool1d(const Tensor& x, const PoolOptions& o);
Tensor avg_pool2d(const Tensor& x, const PoolOptions& o);
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);
Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, const Shape& output_size);

struct InterpolateOptions {
  Shape size = {};                   // output spatial size, or
  std::vector<double> scale_factor;  // one per spatial dim (or one for all)
  std::string mode = "nearest";      // "nearest", "linear", "bilinear", "bicubic"
  std::optional<bool> align_corners = {};
};
Tensor interpolate(const Tensor& x, const InterpolateOptions& o);

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = {});
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
/// In training mode, running_mean/var (when given) are updated in place with `momentum`.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
/// Zeroes elements with probability p and scales the rest by 1/(1-p) when training.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
/// Channel dropout (torch's dropout2d/dropout3d): zeroes whole channels x[n, c] of [N, C, ...]
/// (or x[c] of an unbatched [C, ...]) with probability p, scaling the rest by 1 / (1 - p).
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true);
Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true);
/// Rows of `weight` at `indices`; rows at padding_idx are not special in the forward pass.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = {});

struct AttentionOptions {
  Tensor attn_mask;  // bool (true = keep) or additive float, broadcast to [.., L, S]
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale = {};
};
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& o = {});

/// reduction: "mean", "sum" or "none" for every loss.
struct CrossEntropyOptions {
  Tensor weight = {};
  int64_t ignore_index = -100;
  std::string reduction = "mean";
  double label_smoothing = 0.0;
};
/// target: class indices [N] (int64) or probabilities shaped like input.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o = {});
/// libtorch's loss reductions: nll_loss(x, t, /*weight=*/{}, Reduction::Sum).
using ops::Reduction;
/// libtorch's positional forms (weight may be undefined; Reduction::BatchMean is refused).
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                Reduction reduction, int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {},
                                        const std::string& reduction = "mean",
                                        const Tensor& pos_weight = {});
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);
Tensor cosine_similarity(const Tensor& a, const Tensor& b, int64_t dim = 1, double eps = 1e-8);
Tensor pairwise_distance(const Tensor& a, const Tensor& b, double p = 2.0, double eps = 1e-6,
                         bool keepdim = false);
/// Distances between each row pair of [.., P, M] and [.., R, M] -> [.., P, R].
Tensor cdist(const Tensor& a, const Tensor& b, double p = 2.0);

// --- libtorch's positional forms: conv2d(x, w, bias, stride, padding, dilation, groups) ---
// Each spatial argument is an integer (used for every spatial dim) or a Shape. Templates, so that
// a braced list in that place (`conv2d(x, w, b, {.padding = {1}})`, `{}`) always means the
// options form: pass `2` or `Shape{2, 1}` as the stride of the positional one.
template <class T>
concept SpatialArg = std::is_integral_v<T> || std::is_convertible_v<const T&, Shape>;
inline Shape spatial_arg(int64_t v) { return {v}; }
inline Shape spatial_arg(const Shape& s) { return s; }
#define EMBER_CONV_POSITIONAL(name)                                                            \
  template <SpatialArg S, SpatialArg P = Shape, SpatialArg D = Shape>                          \
  Tensor name(const Tensor& x, const Tensor& w, const Tensor& bias, const S& stride,           \
              const P& padding = {0}, const D& dilation = {1}, int64_t groups = 1) {           \
    return name(x, w, bias,                                                                    \
                ConvOptions{.stride = spatial_arg(stride), .padding = spatial_arg(padding),    \
                            .dilation = spatial_arg(dilation), .groups = groups});             \
  }
EMBER_CONV_POSITIONAL(conv1d)
EMBER_CONV_POSITIONAL(conv2d)
EMBER_CONV_POSITIONAL(conv3d)
#undef EMBER_CONV_POSITIONAL
/// (x, w, bias, stride, padding, output_padding, groups, dilation), libtorch's order.
#define EMBER_CONV_T_POSITIONAL(name)                                                          \
  template <SpatialArg S, SpatialArg P = Shape, SpatialArg O = Shape, SpatialArg D = Shape>    \
  Tensor name(const Tensor& x, const Tensor& w, const Tensor& bias, const S& stride,           \
              const P& padding = {0}, const O& output_padding = {0}, int64_t groups = 1,       \
              const D& dilation = {1}) {                                                       \
    return name(x, w, bias,                                                                    \
                ConvTransposeOptions{.stride = spatial_arg(stride),                            \
                                     .padding = spatial_arg(padding),                          \
                                     .output_padding = spatial_arg(output_padding),            \
                                     .groups = groups, .dilation = spatial_arg(dilation)});    \
  }
EMBER_CONV_T_POSITIONAL(conv_transpose1d)
EMBER_CONV_T_POSITIONAL(conv_transpose2d)
#undef EMBER_CONV_T_POSITIONAL
/// (x, kernel_size, stride = kernel_size, padding, dilation, ceil_mode).
#define EMBER_MAX_POOL_POSITIONAL(name)                                                        \
  template <SpatialArg K, SpatialArg S = Shape, SpatialArg P = Shape, SpatialArg D = Shape>    \
  Tensor name(const Tensor& x, const K& kernel_size, const S& stride = {},                     \
              const P& padding = {0}, const D& dilation = {1}, bool ceil_mode = false) {       \
    return name(x, PoolOptions{.kernel_size = spatial_arg(kernel_size),                        \
                               .stride = spatial_arg(stride), .padding = spatial_arg(padding), \
                               .dilation = spatial_arg(dilation), .ceil_mode = ceil_mode});    \
  }
EMBER_MAX_POOL_POSITIONAL(max_pool1d)
EMBER_MAX_POOL_POSITIONAL(max_pool2d)
#undef EMBER_MAX_POOL_POSITIONAL
/// (x, kernel_size, stride = kernel_size, padding, ceil_mode, count_include_pad).
#define EMBER_AVG_POOL_POSITIONAL(name)                                                        \
  template <SpatialArg K, SpatialArg S = Shape, SpatialArg P = Shape>                          \
  Tensor name(const Tensor& x, const K& kernel_size, const S& stride = {},                     \
              const P& padding = {0}, bool ceil_mode = false, bool count_include_pad = true) { \
    return name(x, PoolOptions{.kernel_size = spatial_arg(kernel_size),                        \
                               .stride = spatial_arg(stride), .padding = spatial_arg(padding), \
                               .ceil_mode = ceil_mode,                                         \
                               .count_include_pad = count_include_pad});                       \
  }
EMBER_AVG_POOL_POSITIONAL(avg_pool1d)
EMBER_AVG_POOL_POSITIONAL(avg_pool2d)
#undef EMBER_AVG_POOL_POSITIONAL

}  // namespace ember
