// RNN, LSTM and GRU (forward, reverse, bidirectional; sequence_lens; initial states; both
// layouts; clip; the activations ONNX names), composed from ember ops: one matmul for every
// step's input projection, then per step a matmul with the recurrence weights and the gates.
// Steps past a batch entry's sequence length leave its state as it was and write zeros to Y.
#include <set>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

enum class Cell { Rnn, Lstm, Gru };

// One activation of the node's `activations` list, with its alpha/beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  Tensor operator()(const Tensor& x) const {
    if (name == "Sigmoid") return sigmoid(x);
    if (name == "Tanh") return tanh(x);
    if (name == "Relu") return relu(x);
    if (name == "Affine") return add(mul(x, Scalar(alpha)), Scalar(beta));
    if (name == "LeakyRelu") return leaky_relu(x, alpha);
    if (name == "ThresholdedRelu") return where(gt(x, Scalar(alpha)), x, Scalar(0.0));
    if (name == "ScaledTanh") return mul(tanh(mul(x, Scalar(beta))), Scalar(alpha));
    if (name == "HardSigmoid")
      return clamp(add(mul(x, Scalar(alpha)), Scalar(beta)), Scalar(0.0), Scalar(1.0));
    if (name == "Elu") return elu(x, alpha);
    if (name == "Softsign") return div(x, add(abs(x), Scalar(1.0)));
    return softplus(x);  // Softplus (the names were checked at parse)
  }
};

bool takes_alpha(const std::string& a) {
  return a == "Affine" || a == "LeakyRelu" || a == "ThresholdedRelu" || a == "ScaledTanh" ||
         a == "HardSigmoid" || a == "Elu";
}
bool takes_beta(const std::string& a) {
  return a == "Affine" || a == "ScaledTanh" || a == "HardSigmoid";
}

// The activations per direction (f, g, h for LSTM; f, g for GRU; f for RNN), with ONNX's
// defaults (LeakyRelu 0.01, HardSigmoid 0.2/0.5, ...) where alpha/beta are not listed.
std::vector<Activation> activations(const Node& n, size_t per_dir, int64_t dirs,
                                    std::vector<std::string> defaults) {
  std::vector<std::string> names;
  if (n.has("activations")) names = n.attrs.find("activations")->second.strings;
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * size_t(dirs))
    invalid(n, "activations lists " + std::to_string(names.size()) + " names, expected " +
                   std::to_string(per_dir * size_t(dirs)));
  std::vector<double> alphas = n.floats("activation_alpha"), betas = n.floats("activation_beta");
  size_t ia = 0, ib = 0;
  std::vector<Activation> out;
  static const std::set<std::string> known = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu",
                                              "ThresholdedRelu", "ScaledTanh", "HardSigmoid",
                                              "Elu", "Softsign", "Softplus"};
  for (const auto& name : names) {
    if (!known.count(name)) unsupported(n, "activation '" + name + "'");
    Activation a{name};
    if (name == "LeakyRelu") a.alpha = 0.01;
    if (name == "HardSigmoid") a = {name, 0.2, 0.5};
    if (name == "Elu" || name == "ThresholdedRelu" || name == "Affine" || name == "ScaledTanh")
      a.alpha = 1.0;
    if (takes_alpha(name) && ia < alphas.size()) a.alpha = alphas[ia++];
    if (takes_beta(name) && ib < betas.size()) a.beta = betas[ib++];
    out.push_back(a);
  }
  return out;
}

Tensor rsub_one(const Tensor& x) { return sub(Scalar(1.0), x); }

TensorList recurrent(const OpArgs& a, Cell cell) {
  const Node& n = a.node;
  const int64_t gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const bool batch_first = n.i("layout", 0) == 1;
  Tensor X = batch_first ? a[0].transpose(0, 1) : a[0];  // [seq, batch, input]
  Tensor W = a[1], R = a[2];
  const std::string direction = n.s("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    invalid(n, "direction '" + direction + "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t seq = X.size(0), batch = X.size(1);
  const int64_t hidden = n.i("hidden_size", R.size(-1));
  if (W.dim() != 3 || W.size(0) != dirs || W.size(1) != gates * hidden)
    invalid(n, "W must be [" + std::to_string(dirs) + ", " + std::to_string(gates * hidden) +
                   ", input]");
  const double clip = n.f("clip", 0.0);
  const bool input_forget = n.i("input_forget", 0) != 0;
  const bool linear_before_reset = n.i("linear_before_reset", 0) != 0;
  const size_t per_dir = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
  auto acts = activations(n, per_dir, dirs,
                          cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                          : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                              : std::vector<std::string>{"Tanh"});
  auto state_in = [&](size_t k) {
    if (!a.has(k)) return Tensor();
    return batch_first ? a.in[k].transpose(0, 1) : a.in[k];  // [dirs, batch, hidden]
  };
  Tensor h0 = state_in(5), c0 = cell == Cell::Lstm ? state_in(6) : Tensor();
  // valid[t]: [batch, 1] bool, whether step t is inside each entry's sequence.
  Tensor lens = a.has(4) ? a.in[4].to(kI64) : Tensor();
  const TensorOptions o{.dtype = X.dtype(), .device = X.device()};

  TensorList ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation* f = &acts[size_t(d) * per_dir];
    Tensor Wd = select(W, 0, d), Rd = select(R, 0, d);
    Tensor xw = matmul(X, Wd.t());  // [seq, batch, gates*hidden]
    Tensor wb, rb;
    if (a.has(3)) {
      Tensor b = select(a.in[3], 0, d);
      wb = narrow(b, 0, 0, gates * hidden);
      rb = narrow(b, 0, gates * hidden, gates * hidden);
      xw = add(xw, wb);
    }
    Tensor P = cell == Cell::Lstm && a.has(7) ? select(a.in[7], 0, d) : Tensor();
    Tensor h = h0.defined() ? select(h0, 0, d) : zeros({batch, hidden}, o);
    Tensor c = cell == Cell::Lstm ? (c0.defined() ? select(c0, 0, d) : zeros({batch, hidden}, o))
                                  : Tensor();
    auto clipped = [&](Tensor t) {
      return clip > 0 ? clamp(t, Scalar(-clip), Scalar(clip)) : t;
    };
    auto gate = [&](const Tensor& t, int64_t k) { return narrow(t, 1, k * hidden, hidden); };
    TensorList y(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      Tensor xt = select(xw, 0, t);
      Tensor hr = matmul(h, Rd.t());
      if (rb.defined()) hr = add(hr, rb);
      Tensor h_new, c_new;
      if (cell == Cell::Rnn) {
        h_new = f[0](clipped(add(xt, hr)));
      } else if (cell == Cell::Lstm) {
        Tensor g = add(xt, hr);  // gate order i, o, f, c; peepholes i, o, f
        Tensor gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2), gc = gate(g, 3);
        if (P.defined()) {
          gi = add(gi, mul(c, narrow(P, 0, 0, hidden)));
          gf = add(gf, mul(c, narrow(P, 0, 2 * hidden, hidden)));
        }
        Tensor i = f[0](clipped(gi));
        Tensor fg = input_forget ? rsub_one(i) : f[0](clipped(gf));
        c_new = add(mul(fg, c), mul(i, f[1](clipped(gc))));
        if (P.defined()) go = add(go, mul(c_new, narrow(P, 0, hidden, hidden)));
        h_new = mul(f[0](clipped(go)), f[2](c_new));
      } else {  // GRU: gate order z, r, h
        Tensor z = f[0](clipped(add(gate(xt, 0), gate(hr, 0))));
        Tensor r = f[0](clipped(add(gate(xt, 1), gate(hr, 1))));
        Tensor hh;
        if (linear_before_reset) {
          hh = add(gate(xt, 2), mul(r, gate(hr, 2)));
        } else {
          Tensor rh = matmul(mul(r, h), narrow(Rd, 0, 2 * hidden, hidden).t());
          if (rb.defined()) rh = add(rh, narrow(rb, 0, 2 * hidden, hidden));
          hh = add(gate(xt, 2), rh);
        }
        hh = f[1](clipped(hh));
        h_new = add(mul(rsub_one(z), hh), mul(z, h));
      }
      if (lens.defined()) {
        Tensor valid = unsqueeze(gt(lens, Scalar(t)), 1);  // [batch, 1]
        h = where(valid, h_new, h);
        if (c.defined()) c = where(valid, c_new, c);
        y[size_t(t)] = where(valid, h_new, Scalar(0.0));
      } else {
        h = h_new;
        c = c_new;
        y[size_t(t)] = h_new;
      }
    }
    ys.push_back(stack(y, 0));  // [seq, batch, hidden]
    hs.push_back(h);
    if (c.defined()) cs.push_back(c);
  }
  Tensor Y = stack(ys, 1);  // [seq, dirs, batch, hidden]
  Tensor Yh = stack(hs, 0), Yc = cs.empty() ? Tensor() : stack(cs, 0);
  if (batch_first) {
    Y = permute(Y, {2, 0, 1, 3});
    Yh = Yh.transpose(0, 1);
    if (Yc.defined()) Yc = Yc.transpose(0, 1);
  }
  return {Y, Yh, Yc};
}

TensorList rnn(const OpArgs& a) { return recurrent(a, Cell::Rnn); }
TensorList lstm(const OpArgs& a) { return recurrent(a, Cell::Lstm); }
TensorList gru(const OpArgs& a) { return recurrent(a, Cell::Gru); }

}  // namespace

void add_rnn_ops(OpTable& t) {
  t["RNN"] = rnn;
  t["LSTM"] = lstm;
  t["GRU"] = gru;
}

}  // namespace ember::onnx::detail
