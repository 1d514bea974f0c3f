#pragma once
// Recurrent layers: LSTM and GRU with PyTorch's parameter names (weight_ih_l0, weight_hh_l0,
// bias_ih_l0, bias_hh_l0, "_reverse" for the backward direction), gate order (LSTM i, f, g, o;
// GRU r, z, n) and initialisation (uniform(+-1/sqrt(hidden)) for every parameter).
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

struct RNNOptions {
  int64_t in = 0, hidden = 0;
  int64_t layers = 1;
  bool bias = true;
  bool batch_first = false;  // [N, T, in] instead of [T, N, in]
  double dropout = 0.0;      // between layers, in training mode
  bool bidirectional = false;
  ParamOptions param = {};
};

/// Shared code of LSTM and GRU: parameters per layer and direction, and the layer loop.
class RNNBase : public Module {
 public:
  EMBER_MODULE_ARROW(RNNBase)
  std::string extra_repr() const override;
  const RNNOptions options;

 protected:
  RNNBase(const RNNOptions& o, int64_t gates, const char* name);
  /// One direction of one layer over x [T, N, in'] from (h, c); returns outputs [T, N, H] and
  /// updates h (and c for LSTM).
  virtual Tensor run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor& c,
                               bool reverse) = 0;
  /// Runs every layer; state [layers * dirs, N, H] (c only for LSTM).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                         bool with_c);
  struct Cell {
    Tensor w_ih, w_hh, b_ih, b_hh;
  };
  std::vector<std::unique_ptr<Cell>> cells_;  // layer-major, forward then reverse
};

class LSTM : public RNNBase {
 public:
  EMBER_MODULE_ARROW(LSTM)
  explicit LSTM(const RNNOptions& o);
  /// libtorch's positional form: nn::LSTM(input_size, hidden_size, num_layers).
  LSTM(int64_t in, int64_t hidden, int64_t layers = 1)
      : LSTM(RNNOptions{.in = in, .hidden = hidden, .layers = layers}) {}
  /// (output [T, N, dirs * H], (h_n, c_n) each [layers * dirs, N, H]); h0/c0 default to zeros.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& x, const Tensor& h0,
                                                         const Tensor& c0);
  /// libtorch's form: lstm->forward(x, {h0, c0}) (or {} for zeros).
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& x,
                                                         const std::tuple<Tensor, Tensor>& hc) {
    return forward(x, std::get<0>(hc), std::get<1>(hc));
  }
  /// The output sequence only (libtorch's lstm->forward(x) returns (output, (h, c)): write
  /// lstm->forward(x, {}) for that).
  Tensor forward(const Tensor& x) override;
  /// libtorch's return: auto [out, hc] = lstm(x, {}) (empty (h0, c0): zeros).
  using Module::operator();
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> operator()(const Tensor& x,
                                                            const std::tuple<Tensor, Tensor>& hc) {
    return forward(x, std::get<0>(hc), std::get<1>(hc));
  }
  std::shared_ptr<Module> clone() const override;

 private:
  Tensor run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor& c, bool reverse) override;
};

class GRU : public RNNBase {
 public:
  EMBER_MODULE_ARROW(GRU)
  explicit GRU(const RNNOptions& o);
  GRU(int64_t in, int64_t hidden, int64_t layers = 1)
      : GRU(RNNOptions{.in = in, .hidden = hidden, .layers = layers}) {}
  /// (output [T, N, dirs * H], h_n [layers * dirs, N, H]); h0 defaults to zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& h0);
  Tensor forward(const Tensor& x) override;
  /// libtorch's return: auto [out, h] = gru(x, {}) (an undefined h0: zeros).
  using Module::operator();
  std::tuple<Tensor, Tensor> operator()(const Tensor& x, const Tensor& h0) { return forward(x, h0); }
  std::shared_ptr<Module> clone() const override;

 private:
  Tensor run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor& c, bool reverse) override;
};

}  // namespace ember::nn
