// LSTM and GRU: the input projection of a whole sequence is one matmul; the recurrence steps in
// time with one [N, H] x [H, gates * H] matmul per step.
#include "ember/nn/rnn.h"

#include <cmath>
#include <memory>

#include "ember/autodiff.h"
#include "ember/autodiff/function.h"
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

namespace {

// What the backward needs of one direction's steps, by time index: the gates' activations, the
// cell state and its tanh.
struct LstmSteps {
  TensorList i, f, g, o, c, tc;
};

// The recurrence over xw [T, N, 4H] (the input projection, both biases added) from h0, c0
// [N, H]: returns y [T, N, H] and sets h_out, c_out to the final states; `keep` (optional) gets
// what the backward needs. The input projection's steps are taken with one unbind.
Tensor lstm_steps(const Tensor& xw, const Tensor& w_hh, const Tensor& h0, const Tensor& c0,
                  bool reverse, LstmSteps* keep, Tensor& h_out, Tensor& c_out) {
  const int64_t t_len = xw.shape()[0];
  const size_t len = size_t(t_len);
  const TensorList xs = unbind(xw, 0);
  const Tensor w_t = w_hh.t();
  if (keep)
    for (TensorList* l : {&keep->i, &keep->f, &keep->g, &keep->o, &keep->c, &keep->tc})
      l->resize(len);
  TensorList out(len);
  Tensor h = h0, c = c0;
  for (int64_t s = 0; s < t_len; ++s) {
    const size_t t = size_t(reverse ? t_len - 1 - s : s);
    TensorList q = chunk(xs[t] + matmul(h, w_t), 4, 1);
    Tensor i = sigmoid(q[0]), f = sigmoid(q[1]), g = tanh(q[2]), o = sigmoid(q[3]);
    c = f * c + i * g;
    Tensor tc = tanh(c);
    h = o * tc;
    out[t] = h;
    if (keep) {
      keep->i[t] = i, keep->f[t] = f, keep->g[t] = g, keep->o[t] = o;
      keep->c[t] = c, keep->tc[t] = tc;
    }
  }
  h_out = h;
  c_out = c;
  return stack(out, 0);
}

// The VJP of lstm_steps' node: inputs (xw, w_hh, h0, c0), outputs (y, h, c). The gates'
// gradients of every step are kept, so the recurrent weight's gradient is one GEMM over all
// steps, sum_t dgates_t^T h_{t-1}, and xw's is their stack. Under create_graph the steps are
// recomputed from the inputs, whose history the backward then extends.
TensorList lstm_vjp(const VjpCtx& ctx, const LstmSteps& kept, bool reverse) {
  const Tensor &xw = ctx.input(0), &w_hh = ctx.input(1), &h0 = ctx.input(2), &c0 = ctx.input(3);
  Tensor y = ctx.output(0);
  LstmSteps again;
  const LstmSteps* st = &kept;
  if (grad_enabled()) {
    Tensor h, c;
    y = lstm_steps(xw, w_hh, h0, c0, reverse, &again, h, c);
    st = &again;
  }
  const int64_t t_len = xw.shape()[0];
  const TensorList dys = ctx.grad(0).defined() ? unbind(ctx.grad(0), 0) : TensorList();
  Tensor dh = ctx.grad(1).defined() ? ctx.grad(1) : zeros_like(h0);
  Tensor dc = ctx.grad(2).defined() ? ctx.grad(2) : zeros_like(c0);
  TensorList dgates(static_cast<size_t>(t_len));
  for (int64_t s = t_len - 1; s >= 0; --s) {
    const size_t t = size_t(reverse ? t_len - 1 - s : s);
    const size_t prev = reverse ? t + 1 : t - 1;  // the time index of step s - 1
    const Tensor &i = st->i[t], &f = st->f[t], &g = st->g[t], &o = st->o[t], &tc = st->tc[t];
    const Tensor& c_prev = s == 0 ? c0 : st->c[prev];
    const Tensor dht = dys.empty() ? dh : dys[t] + dh;
    const Tensor dct = dc + dht * o * (1.0 - tc * tc);
    dgates[t] = cat({dct * g * i * (1.0 - i), dct * c_prev * f * (1.0 - f),
                     dct * i * (1.0 - g * g), dht * tc * o * (1.0 - o)},
                    1);
    dc = dct * f;
    if (s > 0 || ctx.needs_grad(2)) dh = matmul(dgates[t], w_hh);
  }
  const Tensor dxw = stack(dgates, 0);
  Tensor dw;
  if (ctx.needs_grad(1) && t_len > 0) {
    // h_{t-1} for every t, in time order.
    const Tensor first = h0.unsqueeze(0), rest = y.narrow(0, reverse ? 1 : 0, t_len - 1);
    const Tensor hp = reverse ? cat({rest, first}, 0) : cat({first, rest}, 0);
    const int64_t rows = t_len * xw.shape()[1];
    dw = matmul(dxw.reshape({rows, xw.shape()[2]}).t(), hp.reshape({rows, h0.shape()[1]}));
  }
  return {ctx.needs_grad(0) ? dxw : Tensor(), dw, ctx.needs_grad(2) ? dh : Tensor(),
          ctx.needs_grad(3) ? dc : Tensor()};
}

}  // namespace

// One direction is one autodiff node over all its steps (lstm_vjp), computed without recording
// each op; the input projection before it is one linear, both biases added once.
Tensor LSTM::run_direction(const Tensor& x, size_t cell, Tensor& h, Tensor& c, bool reverse) {
  const Cell& p = *cells_[cell];
  const Tensor bias = p.b_ih.defined() ? p.b_ih + p.b_hh : Tensor();
  const Tensor xw = linear(x, p.w_ih, bias);  // [T, N, 4H]
  const Tensor in[4] = {xw, p.w_hh, h, c};
  if (!autodiff::function_needs_grad(in))
    return lstm_steps(xw, p.w_hh, in[2], in[3], reverse, nullptr, h, c);
  auto kept = std::make_shared<LstmSteps>();
  TensorList outs(3);
  {
    NoGradGuard no_grad;
    outs[0] = lstm_steps(xw, p.w_hh, in[2], in[3], reverse, kept.get(), outs[1], outs[2]);
  }
  // The final c is also kept->c's last entry: the node (which owns `kept`) goes on a fresh handle
  // of it, else that entry would hold the node that holds it (a reference cycle, a leak).
  outs[2] = outs[2].detach();
  autodiff::record_function("LSTM", in, outs, [kept, reverse](const VjpCtx& ctx) {
    return lstm_vjp(ctx, *kept, reverse);
  });
  h = outs[1];
  c = outs[2];
  return outs[0];
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
