// LSTM and GRU: the input projection of a whole sequence is one matmul; the recurrence steps in
// time with one [N, H] x [H, gates * H] matmul per step.
#include "ember/nn/rnn.h"

#include <cmath>

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/unary.h"

namespace ember::nn {

RNNBase::RNNBase(const RNNOptions& o, int64_t gates, const char* name) : options(o) {
  if (o.in <= 0 || o.hidden <= 0 || o.layers <= 0)
    ember::detail::throw_value(name, "expected positive in, hidden and layers, found " +
                                         std::to_string(o.in) + ", " + std::to_string(o.hidden) +
                                         ", " + std::to_string(o.layers));
  if (o.dropout < 0 || o.dropout > 1)
    ember::detail::throw_value(name,
                               "expected dropout in [0, 1], found " + fmt::py_float(o.dropout));
  const int64_t dirs = o.bidirectional ? 2 : 1, h = o.hidden;
  const int64_t gh = checked_mul(gates, h, name, "gates * hidden");
  checked_mul(h, dirs, name, "hidden * directions");
  const double bound = 1.0 / std::sqrt(double(h));
  for (int64_t l = 0; l < o.layers; ++l) {
    for (int64_t d = 0; d < dirs; ++d) {
      auto c = std::make_unique<Cell>();
      int64_t in = l == 0 ? o.in : h * dirs;
      auto make = [&](Shape s) {
        Tensor t = empty(fmt::param_shape(name, s), fmt::topts(o.param));
        return init::uniform_(t, -bound, bound);
      };
      c->w_ih = make({gh, in});
      c->w_hh = make({gh, h});
      if (o.bias) {
        c->b_ih = make({gh});
        c->b_hh = make({gh});
      }
      std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      register_parameter("weight_ih" + sfx, c->w_ih);
      register_parameter("weight_hh" + sfx, c->w_hh);
      register_parameter("bias_ih" + sfx, c->b_ih);
      register_parameter("bias_hh" + sfx, c->b_hh);
      cells_.push_back(std::move(c));
    }
  }
}

std::string RNNBase::extra_repr() const {
  std::string s = std::to_string(options.in) + ", " + std::to_string(options.hidden);
  if (options.layers != 1) s += ", num_layers=" + std::to_string(options.layers);
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += ", dropout=" + fmt::py_float(options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0,
                                                const Tensor& c0, bool with_c) {
  const std::string name = type_name();
  if (input.dim() != 3 || input.shape()[2] != options.in)
    ember::detail::throw_shape(name.c_str(), "expected input [T, N, " + std::to_string(options.in) +
                                                 "], found " + shape_str(input.shape()));
  Tensor x = options.batch_first ? input.transpose(0, 1) : input;
  const int64_t n = x.shape()[1], dirs = options.bidirectional ? 2 : 1, hs = options.hidden;
  const Shape state{options.layers * dirs, n, hs};
  for (const Tensor* s : {&h0, &c0})
    if (s->defined() && s->shape() != state)
      ember::detail::throw_shape(name.c_str(), "expected initial state " + shape_str(state) +
                                                   ", found " + shape_str(s->shape()));
  TensorList hn, cn;
  for (int64_t l = 0; l < options.layers; ++l) {
    TensorList outs;
    for (int64_t d = 0; d < dirs; ++d) {
      int64_t i = l * dirs + d;
      Tensor h = h0.defined() ? h0[i] : zeros({n, hs}, {x.dtype(), x.device()});
      Tensor c;
      if (with_c) c = c0.defined() ? c0[i] : zeros({n, hs}, {x.dtype(), x.device()});
      outs.push_back(run_direction(x, size_t(i), h, c, d == 1));
      hn.push_back(h);
      if (with_c) cn.push_back(c);
    }
    x = dirs == 1 ? outs[0] : cat(outs, 2);
    if (l + 1 < options.layers && options.dropout > 0)
      x = functional::dropout(x, options.dropout, is_training());
  }
  if (options.batch_first) x = x.transpose(0, 1);
  return {x, stack(hn, 0), with_c ? stack(cn, 0) : Tensor()};
}

// --- LSTM ---

LSTM::LSTM(const RNNOptions& o) : RNNBase(o, 4, "LSTM") {}

// The input projection's steps are taken with one unbind, not a select per step: under autodiff
// each select's gradient is the whole [T, N, gates * H] tensor, which made the backward quadratic
// in T. The two biases are added once, in the projection.
Tensor LSTM::run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor& c, bool reverse) {
  const Cell& p = *cells_[cell];
  const int64_t t_len = x.shape()[0];
  const Tensor bias = p.b_ih.defined() ? p.b_ih + p.b_hh : Tensor();
  const TensorList xw = unbind(linear(x, p.w_ih, bias), 0);  // T x [N, 4H]
  Tensor w_hh_t = p.w_hh.t();
  TensorList out(static_cast<size_t>(t_len));
  for (int64_t s = 0; s < t_len; ++s) {
    int64_t t = reverse ? t_len - 1 - s : s;
    Tensor g = xw[size_t(t)] + matmul(h, w_hh_t);
    TensorList q = chunk(g, 4, 1);
    c = sigmoid(q[1]) * c + sigmoid(q[0]) * tanh(q[2]);
    h = sigmoid(q[3]) * tanh(c);
    out[size_t(t)] = h;
  }
  return stack(out, 0);
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& x, const Tensor& h0,
                                                             const Tensor& c0) {
  auto [y, h, c] = run(x, h0, c0, true);
  return {y, {h, c}};
}

Tensor LSTM::forward(const Tensor& x) { return std::get<0>(run(x, {}, {}, true)); }

std::shared_ptr<Module> LSTM::clone() const {
  auto c = std::make_shared<LSTM>(options);
  c->copy_state_from(*this);
  return c;
}

// --- GRU ---

GRU::GRU(const RNNOptions& o) : RNNBase(o, 3, "GRU") {}

Tensor GRU::run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor&, bool reverse) {
  const Cell& p = *cells_[cell];
  const int64_t t_len = x.shape()[0];
  const TensorList xw = unbind(linear(x, p.w_ih, p.b_ih), 0);  // T x [N, 3H], as for LSTM
  TensorList out(static_cast<size_t>(t_len));
  for (int64_t s = 0; s < t_len; ++s) {
    int64_t t = reverse ? t_len - 1 - s : s;
    Tensor hw = linear(h, p.w_hh, p.b_hh);
    TensorList a = chunk(xw[size_t(t)], 3, 1), b = chunk(hw, 3, 1);
    Tensor r = sigmoid(a[0] + b[0]), z = sigmoid(a[1] + b[1]);
    Tensor nn_ = tanh(a[2] + r * b[2]);
    h = (1.0 - z) * nn_ + z * h;
    out[size_t(t)] = h;
  }
  return stack(out, 0);
}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& x, const Tensor& h0) {
  auto [y, h, c] = run(x, h0, {}, false);
  return {y, h};
}

Tensor GRU::forward(const Tensor& x) { return std::get<0>(run(x, {}, {}, false)); }

std::shared_ptr<Module> GRU::clone() const {
  auto c = std::make_shared<GRU>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn
