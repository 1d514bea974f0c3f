// Positional encodings: the sinusoidal table, a learned table and rotary embeddings. Tables are
// computed in double on the host, then stored in the parameter dtype; forward is built from
// ember ops, so gradients flow to the input (and to a learned table).
#include "ember/nn/positional.h"

#include <cmath>
#include <vector>

#include "ember/error.h"
#include "ember/nn/init.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"

namespace ember::nn {

namespace {

// angle[p][i] = p * base^(-2i / d) for p < len, i < d / 2: the rate of pair i at position p.
std::vector<double> angles(int64_t len, int64_t d, double base) {
  std::vector<double> a(size_t(len * (d / 2)));
  for (int64_t i = 0; i < d / 2; ++i) {
    const double rate = std::pow(base, -double(2 * i) / double(d));
    for (int64_t p = 0; p < len; ++p) a[size_t(p * (d / 2) + i)] = double(p) * rate;
  }
  return a;
}

void check_sizes(const char* module, int64_t d_model, int64_t len, const char* len_name) {
  if (d_model <= 0 || d_model % 2 != 0)
    ember::detail::throw_value(module,
                               "expected an even d_model > 0, found " + std::to_string(d_model));
  if (len < 1)
    ember::detail::throw_value(
        module, std::string("expected ") + len_name + " >= 1, found " + std::to_string(len));
}

// The rows of a [len, E] table for x laid out [S, N, E], [N, S, E] (batch first) or [S, E],
// shaped to broadcast against x.
Tensor rows_for(const char* module, const Tensor& table, const Tensor& x, int64_t offset,
                bool batch_first) {
  const int64_t len = table.shape()[0], e = table.shape()[1];
  if ((x.dim() != 2 && x.dim() != 3) || x.shape()[x.dim() - 1] != e)
    ember::detail::throw_shape(module, "expected x [S, N, " + std::to_string(e) + "], [N, S, " +
                                           std::to_string(e) + "] or [S, " + std::to_string(e) +
                                           "], found " + shape_str(x.shape()));
  const int64_t seq_dim = (x.dim() == 3 && batch_first) ? 1 : 0, s = x.shape()[seq_dim];
  if (offset < 0 || offset + s > len)
    ember::detail::throw_shape(module, "expected offset + sequence length <= max_len " +
                                           std::to_string(len) + ", found offset " +
                                           std::to_string(offset) + " and length " +
                                           std::to_string(s));
  Tensor rows = table.narrow(0, offset, s);
  return (x.dim() == 3 && !batch_first) ? rows.unsqueeze(1) : rows;
}

// A fixed table in x's floating dtype, so that encoding f16 activations keeps them f16.
Tensor like_input(const Tensor& table, const Tensor& x) {
  return is_floating(x.dtype()) && table.dtype() != x.dtype() ? table.to(x.dtype()) : table;
}

}  // namespace

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(
    const SinusoidalPositionalEncodingOptions& o)
    : options(o) {
  check_sizes("SinusoidalPositionalEncoding", o.d_model, o.max_len, "max_len");
  std::vector<double> a = angles(o.max_len, o.d_model, o.max_timescale), v(a.size() * 2);
  for (size_t j = 0; j < a.size(); ++j) v[2 * j] = std::sin(a[j]), v[2 * j + 1] = std::cos(a[j]);
  auto t = fmt::topts(o.param);
  pe = tensor(v, {o.max_len, o.d_model}, t.dtype.value_or(default_dtype()), t.device);
  register_buffer("pe", pe, /*persistent=*/false);
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, int64_t offset) {
  return x + like_input(
                 rows_for("SinusoidalPositionalEncoding", pe, x, offset, options.batch_first), x);
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
  return "d_model=" + std::to_string(options.d_model) +
         ", max_len=" + std::to_string(options.max_len) +
         ", max_timescale=" + fmt::py_float(options.max_timescale) +
         ", batch_first=" + fmt::py_bool(options.batch_first);
}

std::shared_ptr<Module> SinusoidalPositionalEncoding::clone() const {
  auto c = std::make_shared<SinusoidalPositionalEncoding>(options);
  c->copy_state_from(*this);
  return c;
}

LearnedPositionalEncoding::LearnedPositionalEncoding(const LearnedPositionalEncodingOptions& o)
    : options(o) {
  if (o.max_len < 1 || o.d_model < 1)
    ember::detail::throw_value("LearnedPositionalEncoding",
                               "expected max_len and d_model >= 1, found " +
                                   std::to_string(o.max_len) + " and " + std::to_string(o.d_model));
  weight = empty(fmt::param_shape("LearnedPositionalEncoding", {o.max_len, o.d_model}),
                 fmt::topts(o.param));
  init::normal_(weight, 0.0, 1.0);
  register_parameter("weight", weight);
}

Tensor LearnedPositionalEncoding::forward(const Tensor& x, int64_t offset) {
  return x + rows_for("LearnedPositionalEncoding", weight, x, offset, options.batch_first);
}

std::string LearnedPositionalEncoding::extra_repr() const {
  return "max_len=" + std::to_string(options.max_len) +
         ", d_model=" + std::to_string(options.d_model) +
         ", batch_first=" + fmt::py_bool(options.batch_first);
}

std::shared_ptr<Module> LearnedPositionalEncoding::clone() const {
  auto c = std::make_shared<LearnedPositionalEncoding>(options);
  c->copy_state_from(*this);
  return c;
}

RotaryEncoding::RotaryEncoding(const RotaryEncodingOptions& o) : options(o) {
  check_sizes("RotaryEncoding", o.d_model, o.max_sequence_length, "max_sequence_length");
  std::vector<double> a = angles(o.max_sequence_length, o.d_model, o.theta), c(a.size()),
                      s(a.size());
  for (size_t j = 0; j < a.size(); ++j) c[j] = std::cos(a[j]), s[j] = std::sin(a[j]);
  auto t = fmt::topts(o.param);
  const DType dt = t.dtype.value_or(default_dtype());
  cos_cached = tensor(c, {o.max_sequence_length, o.d_model / 2}, dt, t.device);
  sin_cached = tensor(s, {o.max_sequence_length, o.d_model / 2}, dt, t.device);
  register_buffer("cos_cached", cos_cached, /*persistent=*/false);
  register_buffer("sin_cached", sin_cached, /*persistent=*/false);
}

Tensor RotaryEncoding::forward(const Tensor& x, int64_t offset) {
  const int64_t d = options.d_model, h = d / 2, last = x.dim() - 1;
  if (x.dim() < 2 || x.shape()[last] != d)
    ember::detail::throw_shape("RotaryEncoding", "expected x [..., S, " + std::to_string(d) +
                                                     "], found " + shape_str(x.shape()));
  const int64_t s = x.shape()[last - 1], len = options.max_sequence_length;
  if (offset < 0 || offset + s > len)
    ember::detail::throw_shape(
        "RotaryEncoding", "expected offset + sequence length <= max_sequence_length " +
                              std::to_string(len) + ", found offset " + std::to_string(offset) +
                              " and length " + std::to_string(s));
  Tensor c = like_input(cos_cached.narrow(0, offset, s), x);  // [S, D/2]
  Tensor sn = like_input(sin_cached.narrow(0, offset, s), x);
  Tensor x0, x1;  // the two coordinates of every pair, [..., S, D/2]
  if (options.interleaved) {
    Shape pairs = x.shape();
    pairs[last] = h;
    pairs.push_back(2);
    Tensor xr = x.reshape(pairs);
    x0 = xr.select(last + 1, 0), x1 = xr.select(last + 1, 1);
  } else {
    x0 = x.narrow(last, 0, h), x1 = x.narrow(last, h, h);
  }
  Tensor o0 = x0 * c - x1 * sn, o1 = x0 * sn + x1 * c;
  return options.interleaved ? stack({o0, o1}, last + 1).reshape(x.shape()) : cat({o0, o1}, last);
}

std::string RotaryEncoding::extra_repr() const {
  return "d_model=" + std::to_string(options.d_model) +
         ", max_sequence_length=" + std::to_string(options.max_sequence_length) +
         ", theta=" + fmt::py_float(options.theta) +
         ", interleaved=" + fmt::py_bool(options.interleaved);
}

std::shared_ptr<Module> RotaryEncoding::clone() const {
  auto c = std::make_shared<RotaryEncoding>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn
