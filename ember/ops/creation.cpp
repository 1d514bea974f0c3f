// Creation and random ops: API, inference, decompositions.
// Attrs: ints shape; s[0] fill value; dtype/has_dtype; device. arange: s[0..2] start/end/step.
// linspace: f[0] start, f[1] end, i[0] steps. eye: i[0] n, i[1] m. normal: f[0] mean, f[1] std.
// uniform: f[0] low, f[1] high. randint: i[0] low, i[1] high. bernoulli: input p, or
// (input like, f[0] p, b[0] = true).
#include "ember/random.h"
#include "ember/ops/creation.h"

#include <cmath>
#include <tuple>

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/autodiff.h"
#include "ember/ops/binary.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

Attrs creation_attrs(const Shape& shape, const TensorOptions& o, DType fallback) {
  Attrs a;
  a.ints = shape;
  a.dtype = o.dtype.value_or(fallback);
  a.has_dtype = true;
  a.device = resolve_device(o.device);
  return a;
}

// A random op's attrs with its Philox state drawn now, from `gen` or else from the generator of
// the device it runs on.
Attrs random_attrs(Attrs a, std::optional<Device> on = {}, const Generator* gen = nullptr) {
  if (gen) std::tie(a.seed, a.offset) = gen->next();
  else detail::draw_philox(a, on.value_or(a.device));
  return a;
}

// requires_grad in the options: the new tensor becomes a leaf that requires grad.
Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad) t.requires_grad_();
  return t;
}

void check_shape(const char* op, const Shape& s) {
  for (int64_t d : s)
    if (d < 0)
      detail::throw_value(op, "expected non-negative sizes, found " + shape_str(s));
}

int64_t arange_len(const Attrs& a) {
  double start = a.s[0].to_double(), end = a.s[1].to_double(), step = a.s[2].to_double();
  if (step == 0 || !std::isfinite(step))
    detail::throw_value("arange", "step must be non-zero and finite, found " +
                                      std::to_string(step));
  if (!std::isfinite(start) || !std::isfinite(end))
    detail::throw_value("arange", "start and end must be finite");
  if ((step > 0 && end < start) || (step < 0 && end > start))
    detail::throw_value("arange", "upper bound and step sign are inconsistent: start " +
                                      std::to_string(start) + ", end " + std::to_string(end) +
                                      ", step " + std::to_string(step));
  auto too_long = [&]() -> int64_t {
    detail::throw_value("arange", "start " + std::to_string(start) + ", end " +
                                      std::to_string(end) + " and step " + std::to_string(step) +
                                      " give more than 2^56 elements");
  };
  if (!a.s[0].is_floating() && !a.s[1].is_floating() && !a.s[2].is_floating()) {
    // ceil(|e - s| / |step|) in unsigned arithmetic: the distance may exceed INT64_MAX.
    int64_t s = a.s[0].to_int(), e = a.s[1].to_int(), st = a.s[2].to_int();
    uint64_t dist = st > 0 ? uint64_t(e) - uint64_t(s) : uint64_t(s) - uint64_t(e);
    uint64_t mag = st > 0 ? uint64_t(st) : uint64_t(0) - uint64_t(st);
    uint64_t n = dist / mag + (dist % mag != 0);
    return n > uint64_t(kMaxNumel) ? too_long() : int64_t(n);
  }
  double n = std::ceil((end - start) / step);
  return n <= double(kMaxNumel) ? int64_t(n) : too_long();
}

std::string scalar_text(Scalar v) {
  if (v.is_floating()) return std::to_string(v.to_double());
  return v.is_bool() ? (v.to_bool() ? "true" : "false") : std::to_string(v.to_int());
}

// torch refuses bounds the dtype cannot hold (randint(0, 1000, dtype=uint8)): values would wrap.
void check_randint_range(const Attrs& a) {
  if (!is_integral(a.dtype) || a.dtype == DType::I64) return;
  int bits = int(itemsize(a.dtype)) * 8;
  int64_t lo = is_signed(a.dtype) ? -(int64_t(1) << (bits - 1)) : 0;
  int64_t hi = is_signed(a.dtype) ? (int64_t(1) << (bits - 1)) : (int64_t(1) << bits);
  if (a.i[0] < lo || a.i[1] > hi)
    detail::throw_value("randint", "low " + std::to_string(a.i[0]) + " and high " +
                                       std::to_string(a.i[1]) + " must lie in [" +
                                       std::to_string(lo) + ", " + std::to_string(hi) + "] for " +
                                       std::string(dtype_name(a.dtype)));
}

void infer_creation(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  switch (op) {
    case OpId::arange: out.add({arange_len(a)}, a.dtype); return;
    case OpId::linspace:
      if (a.i[0] < 0) detail::throw_value(name, "number of steps must be non-negative");
      if (!is_floating(a.dtype) && !(std::isfinite(a.f[0]) && std::isfinite(a.f[1])))
        detail::throw_value(name, "start and end must be finite for an integer dtype, found " +
                                      std::to_string(a.f[0]) + " and " + std::to_string(a.f[1]));
      out.add({a.i[0]}, a.dtype);
      return;
    case OpId::eye:
      if (a.i[0] < 0 || a.i[1] < 0)
        detail::throw_value(name, "n and m must be non-negative, found " + std::to_string(a.i[0]) +
                                      " and " + std::to_string(a.i[1]));
      out.add({a.i[0], a.i[1]}, a.dtype);
      return;
    case OpId::empty_like: case OpId::zeros_like: case OpId::ones_like: case OpId::full_like:
    case OpId::rand_like: case OpId::randn_like: {
      if (in.size() != 1) detail::throw_value(name, "expected 1 input");
      ops::require_defined(in[0], name);
      DType d = a.has_dtype ? a.dtype : in[0].dtype();
      if ((op == OpId::rand_like || op == OpId::randn_like) && !is_floating(d))
        detail::throw_dtype(name, "expected a floating dtype, found " + std::string(dtype_name(d)));
      out.add(in[0].shape(), d);
      return;
    }
    case OpId::bernoulli: {
      if (in.size() != 1) detail::throw_value(name, "expected 1 input");
      ops::require_defined(in[0], name);
      if (!is_floating(in[0].dtype()))
        detail::throw_dtype(name, "expected floating probabilities, found " +
                                      std::string(dtype_name(in[0].dtype())));
      if (a.b[0] && !(a.f[0] >= 0 && a.f[0] <= 1))  // NaN is refused too
        detail::throw_value(name, "p must be in [0, 1], found " + std::to_string(a.f[0]));
      out.add(in[0].shape(), in[0].dtype());
      return;
    }
    default:
      check_shape(name, a.ints);
      if ((op == OpId::rand || op == OpId::randn || op == OpId::normal || op == OpId::uniform) &&
          !is_floating(a.dtype))
        detail::throw_dtype(name, "expected a floating dtype, found " + std::string(dtype_name(a.dtype)));
      if (op == OpId::randint && a.i[0] >= a.i[1])
        detail::throw_value(name, "expected low < high, found low " + std::to_string(a.i[0]) +
                                      " and high " + std::to_string(a.i[1]));
      if (op == OpId::randint) check_randint_range(a);
      if (op == OpId::full && !a.s[0].fits(a.dtype))
        detail::throw_dtype(name, "the fill value " + scalar_text(a.s[0]) + " does not fit in " +
                                      std::string(dtype_name(a.dtype)));
      // NaN and inf parameters would fill the tensor with NaN: refused (the negated tests
      // catch NaN).
      if (op == OpId::normal && !(a.f[1] >= 0 && std::isfinite(a.f[1]) && std::isfinite(a.f[0])))
        detail::throw_value(name, "expected a finite mean and a finite std >= 0, found mean " +
                                      std::to_string(a.f[0]) + " and std " +
                                      std::to_string(a.f[1]));
      if (op == OpId::uniform &&
          !(std::isfinite(a.f[0]) && std::isfinite(a.f[1]) && a.f[0] <= a.f[1]))
        detail::throw_value(name, "expected finite low <= high, found low " +
                                      std::to_string(a.f[0]) + " and high " +
                                      std::to_string(a.f[1]));
      out.add(a.ints, a.dtype);
      return;
  }
}

Tensor make(OpId op, const Attrs& a, std::initializer_list<Tensor> in = {}) {
  return dispatch1(op, a, in);
}

// Decompositions: the *_like and zeros/ones forms lower to full/empty/rand/randn.
TensorList dec_full_value(const Attrs& a, Scalar v) {
  Attrs b = a;
  b.s[0] = v;
  return {make(OpId::full, b)};
}
TensorList dec_zeros(const Attrs& a, std::span<const Tensor>) { return dec_full_value(a, 0); }
TensorList dec_ones(const Attrs& a, std::span<const Tensor>) { return dec_full_value(a, 1); }
Attrs like_attrs(const Attrs& a, const Tensor& t) {
  Attrs b = a;
  b.ints = t.shape();
  b.dtype = a.has_dtype ? a.dtype : t.dtype();
  b.has_dtype = true;
  b.device = t.device();
  return b;
}
TensorList dec_empty_like(const Attrs& a, std::span<const Tensor> in) {
  return {make(OpId::empty, like_attrs(a, in[0]))};
}
TensorList dec_zeros_like(const Attrs& a, std::span<const Tensor> in) {
  return dec_full_value(like_attrs(a, in[0]), 0);
}
TensorList dec_ones_like(const Attrs& a, std::span<const Tensor> in) {
  return dec_full_value(like_attrs(a, in[0]), 1);
}
TensorList dec_full_like(const Attrs& a, std::span<const Tensor> in) {
  return {make(OpId::full, like_attrs(a, in[0]))};
}
TensorList dec_rand_like(const Attrs& a, std::span<const Tensor> in) {
  return {make(OpId::rand, like_attrs(a, in[0]))};
}
TensorList dec_randn_like(const Attrs& a, std::span<const Tensor> in) {
  return {make(OpId::randn, like_attrs(a, in[0]))};
}

}  // namespace

Tensor empty(const Shape& s, TensorOptions o) { return finish(make(OpId::empty, creation_attrs(s, o, default_dtype())), o); }
Tensor zeros(const Shape& s, TensorOptions o) { return finish(make(OpId::zeros, creation_attrs(s, o, default_dtype())), o); }
Tensor ones(const Shape& s, TensorOptions o) { return finish(make(OpId::ones, creation_attrs(s, o, default_dtype())), o); }
Tensor full(const Shape& s, Scalar v, TensorOptions o) {
  Attrs a = creation_attrs(s, o, v.dtype());
  a.s[0] = v;
  return finish(make(OpId::full, a), o);
}
Tensor arange(Scalar end, TensorOptions o) { return arange(0, end, 1, o); }
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions o) {
  bool fl = start.is_floating() || end.is_floating() || step.is_floating();
  Attrs a = creation_attrs({}, o, fl ? default_dtype() : DType::I64);
  a.s = {start, end, step};
  return finish(make(OpId::arange, a), o);
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  Attrs a = creation_attrs({}, o, default_dtype());
  a.f = {start, end, 0, 0};
  a.i[0] = steps;
  return finish(make(OpId::linspace, a), o);
}
Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  Attrs a = creation_attrs({}, o, default_dtype());
  a.i[0] = n;
  a.i[1] = m.value_or(n);
  return finish(make(OpId::eye, a), o);
}
namespace {
Attrs like_opts(const TensorOptions& o) {
  Attrs a;
  if (o.dtype) {
    a.dtype = *o.dtype;
    a.has_dtype = true;
  }
  return a;
}
Tensor like_on(const Tensor& t, const TensorOptions& o) {
  return o.device ? t.to(*o.device) : t;
}
}  // namespace
Tensor empty_like(const Tensor& t, TensorOptions o) { return finish(make(OpId::empty_like, like_opts(o), {like_on(t, o)}), o); }
Tensor zeros_like(const Tensor& t, TensorOptions o) { return finish(make(OpId::zeros_like, like_opts(o), {like_on(t, o)}), o); }
Tensor ones_like(const Tensor& t, TensorOptions o) { return finish(make(OpId::ones_like, like_opts(o), {like_on(t, o)}), o); }
Tensor full_like(const Tensor& t, Scalar v, TensorOptions o) {
  Attrs a = like_opts(o);
  a.s[0] = v;
  return finish(make(OpId::full_like, a, {like_on(t, o)}), o);
}
namespace {
Tensor rand_impl(const Shape& s, TensorOptions o, const Generator* g) {
  return finish(make(OpId::rand, random_attrs(creation_attrs(s, o, default_dtype()), {}, g)), o);
}
Tensor randn_impl(const Shape& s, TensorOptions o, const Generator* g) {
  return finish(make(OpId::randn, random_attrs(creation_attrs(s, o, default_dtype()), {}, g)), o);
}
Tensor randint_impl(int64_t low, int64_t high, const Shape& s, TensorOptions o,
                    const Generator* g) {
  Attrs a = creation_attrs(s, o, DType::I64);
  a.i[0] = low;
  a.i[1] = high;
  return finish(make(OpId::randint, random_attrs(a, {}, g)), o);
}
Tensor bernoulli_impl(const Tensor& p, const Generator* g) {
  ops::require_defined(p, "bernoulli");
  return make(OpId::bernoulli, random_attrs({}, p.device(), g), {p});
}
Tensor normal_impl(double mean, double sd, const Shape& s, TensorOptions o, const Generator* g) {
  Attrs a = creation_attrs(s, o, default_dtype());
  a.f = {mean, sd, 0, 0};
  return finish(make(OpId::normal, random_attrs(a, {}, g)), o);
}
Tensor uniform_impl(double low, double high, const Shape& s, TensorOptions o,
                    const Generator* g) {
  Attrs a = creation_attrs(s, o, default_dtype());
  a.f = {low, high, 0, 0};
  return finish(make(OpId::uniform, random_attrs(a, {}, g)), o);
}
Tensor randperm_impl(int64_t n, TensorOptions o, const Generator* g) {
  if (n < 0) detail::throw_value("randperm", "expected n >= 0, found " + std::to_string(n));
  // The order of n uniform draws (ties are as likely as in torch's own algorithm: never, for
  // any practical n, in 53-bit doubles).
  const Tensor keys = rand_impl({n}, {DType::F64, o.device, {}}, g);
  const Tensor perm = argsort(keys);
  return o.dtype && *o.dtype != DType::I64 ? perm.to(*o.dtype) : perm;
}
}  // namespace

Tensor rand(const Shape& s, TensorOptions o) { return rand_impl(s, o, nullptr); }
Tensor randn(const Shape& s, TensorOptions o) { return randn_impl(s, o, nullptr); }
Tensor randint(int64_t low, int64_t high, const Shape& s, TensorOptions o) {
  return randint_impl(low, high, s, o, nullptr);
}
Tensor randint(int64_t high, const Shape& s, TensorOptions o) {
  return randint_impl(0, high, s, o, nullptr);
}
Tensor bernoulli(const Tensor& p) { return bernoulli_impl(p, nullptr); }
Tensor bernoulli(const Tensor& like, double p) {
  ops::require_defined(like, "bernoulli");
  Attrs a;
  a.f[0] = p;
  a.b[0] = true;
  return make(OpId::bernoulli, random_attrs(a, like.device()), {like});
}
Tensor normal(double mean, double sd, const Shape& s, TensorOptions o) {
  return normal_impl(mean, sd, s, o, nullptr);
}
Tensor uniform(double low, double high, const Shape& s, TensorOptions o) {
  return uniform_impl(low, high, s, o, nullptr);
}
Tensor randperm(int64_t n, TensorOptions o) { return randperm_impl(n, o, nullptr); }

Tensor rand(const Shape& s, const Generator& g, TensorOptions o) { return rand_impl(s, o, &g); }
Tensor randn(const Shape& s, const Generator& g, TensorOptions o) { return randn_impl(s, o, &g); }
Tensor randint(int64_t low, int64_t high, const Shape& s, const Generator& g, TensorOptions o) {
  return randint_impl(low, high, s, o, &g);
}
Tensor randint(int64_t high, const Shape& s, const Generator& g, TensorOptions o) {
  return randint_impl(0, high, s, o, &g);
}
Tensor bernoulli(const Tensor& p, const Generator& g) { return bernoulli_impl(p, &g); }
Tensor normal(double mean, double sd, const Shape& s, const Generator& g, TensorOptions o) {
  return normal_impl(mean, sd, s, o, &g);
}
Tensor uniform(double low, double high, const Shape& s, const Generator& g, TensorOptions o) {
  return uniform_impl(low, high, s, o, &g);
}
Tensor randperm(int64_t n, const Generator& g, TensorOptions o) {
  return randperm_impl(n, o, &g);
}
namespace {
// Gumbel-max sampling: argmax(log w + G) over iid standard Gumbel noise G draws index i with
// probability w_i / sum(w); the top num_samples of one noise row are a draw without replacement.
Tensor multinomial_impl(const Tensor& probs, int64_t n, bool replacement, const Generator* g) {
  ops::require_defined(probs, "multinomial");
  if (probs.dim() != 1 && probs.dim() != 2)
    detail::throw_value("multinomial", "expected a 1-D or 2-D tensor of weights, found " +
                                           std::to_string(probs.dim()) + "-D");
  if (!is_floating(probs.dtype()))
    detail::throw_dtype("multinomial", "expected floating weights, found " +
                                           std::string(dtype_name(probs.dtype())));
  const int64_t k = probs.size(-1);
  if (n <= 0 || (!replacement && n > k))
    detail::throw_value("multinomial",
                        "expected 0 < num_samples" +
                            std::string(replacement ? "" : " <= " + std::to_string(k)) +
                            ", found " + std::to_string(n));
  NoGradGuard no_grad;
  const Tensor w = probs.detach().to(DType::F64);
  Shape noise_shape;  // [.., K], or [.., n, K] with replacement
  for (int64_t d = 0; d + 1 < w.dim(); ++d) noise_shape.push_back(w.size(d));
  if (replacement) noise_shape.push_back(n);
  noise_shape.push_back(k);
  const TensorOptions o{DType::F64, w.device(), {}};
  const Tensor u = g ? rand(noise_shape, *g, o) : rand(noise_shape, o);
  const Tensor keys = log(replacement ? w.unsqueeze(-2) : w) - log(-log(u));
  if (replacement) return argmax(keys, -1);
  return std::get<1>(topk(keys, n, -1));
}
}  // namespace
Tensor multinomial(const Tensor& probs, int64_t n, bool replacement) {
  return multinomial_impl(probs, n, replacement, nullptr);
}
Tensor multinomial(const Tensor& probs, int64_t n, bool replacement, const Generator& g) {
  return multinomial_impl(probs, n, replacement, &g);
}

Tensor rand_like(const Tensor& t, TensorOptions o) {
  ops::require_defined(t, "rand_like");
  const Tensor like = like_on(t, o);
  return finish(make(OpId::rand_like, random_attrs(like_opts(o), like.device()), {like}), o);
}
Tensor randn_like(const Tensor& t, TensorOptions o) {
  ops::require_defined(t, "randn_like");
  const Tensor like = like_on(t, o);
  return finish(make(OpId::randn_like, random_attrs(like_opts(o), like.device()), {like}), o);
}

namespace ops {
void register_creation_ops() {
  set_infer_for_category(OpCategory::Creation, infer_creation);
  set_infer_for_category(OpCategory::Random, infer_creation);
  auto dec = [](OpId op, DecompFn f) {
    op_def_mut(op).decompose = f;
  };
  dec(OpId::zeros, dec_zeros);
  dec(OpId::ones, dec_ones);
  dec(OpId::empty_like, dec_empty_like);
  dec(OpId::zeros_like, dec_zeros_like);
  dec(OpId::ones_like, dec_ones_like);
  dec(OpId::full_like, dec_full_like);
  dec(OpId::rand_like, dec_rand_like);
  dec(OpId::randn_like, dec_randn_like);
  for (int i = 0; i < kNumOps; ++i) {
    OpCategory c = op_def(OpId(i)).category;
    if (c == OpCategory::Creation || c == OpCategory::Random) op_def_mut(OpId(i)).differentiable = false;
  }
}
}  // namespace ops

}  // namespace ember
