#pragma once
// Basic layers: Linear, Bilinear, Identity, Flatten, Dropout and Embedding (with the
// convolution and pooling headers). Options are structs for designated initializers:
// `nn::Conv2d conv{{.in = 3, .out = 8, .kernel = 3, .padding = 1}};`.
// Initialisation follows PyTorch's defaults (kaiming_uniform(a=sqrt(5)) weights, biases
// uniform(+-1/sqrt(fan_in))) using ember's seeded generator (manual_seed).
#include <optional>
#include <string>

#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/pool.h"
#include "ember/ops/quant.h"

namespace ember::nn {

struct LinearOptions {
  int64_t in = 0, out = 0;
  bool bias = true;
  ParamOptions param = {};
};
/// y = x W^T + b; weight [out, in], bias [out].
class Linear : public Module {
 public:
  EMBER_MODULE_ARROW(Linear)
  explicit Linear(const LinearOptions& o);
  /// libtorch's positional form: nn::Linear(784, 10).
  Linear(int64_t in, int64_t out, bool bias = true)
      : Linear(LinearOptions{.in = in, .out = out, .bias = bias}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  /// Re-draws weight and bias from PyTorch's default distributions.
  void reset_parameters();
  /// Weight-only quantization in place (models::quantize walks a model with it): bits 8 keeps
  /// weight_int8 (state_dict keys "weight_int8", "weight_scale"), bits 4 keeps weight_int4 in
  /// groups of group_size ("weight_int4", "weight_scale", "weight_zero"); `weight` becomes
  /// undefined and forward runs linear_int8 / linear_int4. The bias stays as it is.
  void quantize_(int bits, int64_t group_size = 128);
  /// 8 or 4 once quantized, else 0.
  int quantized_bits() const;
  Tensor weight, bias;
  QuantizedInt8 weight_int8;
  QuantizedInt4 weight_int4;
  const LinearOptions options;
};

struct BilinearOptions {
  int64_t in1 = 0, in2 = 0, out = 0;
  bool bias = true;
  ParamOptions param = {};
};
/// y = x1^T A x2 + b over the last dim; weight [out, in1, in2], bias [out].
class Bilinear : public Module {
 public:
  EMBER_MODULE_ARROW(Bilinear)
  explicit Bilinear(const BilinearOptions& o);
  using Module::forward;
  using Module::operator();
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  Tensor weight, bias;
  const BilinearOptions options;
};

class Identity : public Module {
 public:
  EMBER_MODULE_ARROW(Identity)
  Tensor forward(const Tensor& x) override { return x; }
  std::shared_ptr<Module> clone() const override;
};

struct FlattenOptions {
  int64_t start_dim = 1, end_dim = -1;
};
class Flatten : public Module {
 public:
  EMBER_MODULE_ARROW(Flatten)
  explicit Flatten(const FlattenOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const FlattenOptions options;
};

/// Zeroes elements with probability p in training mode; the identity in eval mode.
class Dropout : public Module {
 public:
  EMBER_MODULE_ARROW(Dropout)
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double p;
};

/// Zeroes whole channels with probability p in training mode (ember::dropout2d/dropout3d over
/// [N, C, ...] or an unbatched [C, ...]); the identity in eval mode. torch's Dropout2d/3d.
template <int Dims>
class FeatureDropout : public Module {
 public:
  EMBER_MODULE_ARROW(FeatureDropout)
  explicit FeatureDropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double p;
};
using Dropout2d = FeatureDropout<2>;
using Dropout3d = FeatureDropout<3>;

struct EmbeddingOptions {
  int64_t num = 0, dim = 0;
  std::optional<int64_t> padding_idx = {};
  ParamOptions param = {};
};
/// A lookup table [num, dim] drawn from N(0, 1); the padding row starts at zero.
class Embedding : public Module {
 public:
  EMBER_MODULE_ARROW(Embedding)
  explicit Embedding(const EmbeddingOptions& o);
  /// libtorch's positional form: nn::Embedding(num_embeddings, embedding_dim).
  Embedding(int64_t num, int64_t dim) : Embedding(EmbeddingOptions{.num = num, .dim = dim}) {}
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  /// h @ weight^T: the logits of a head tied to this table (quantized or not).
  Tensor attend(const Tensor& h);
  /// Weight-only quantization of the table, one int8 row scale (bits 8) or int4 groups along
  /// each row (bits 4), with Linear::quantize_'s keys; forward dequantizes only the rows it reads.
  void quantize_(int bits, int64_t group_size = 128);
  /// 8 or 4 once quantized, else 0.
  int quantized_bits() const;
  Tensor weight;
  QuantizedInt8 weight_int8;
  QuantizedInt4 weight_int4;
  const EmbeddingOptions options;
};

}  // namespace ember::nn
