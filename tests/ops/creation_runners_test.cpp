// Golden runners for creation and random ops.
#include "golden.h"

namespace ember::test {
namespace {

TensorOptions opts(const Case& c, Device dev) {
  TensorOptions o{.device = dev};
  if (c.attrs.contains("dtype")) o.dtype = dtype_from_name(c.attrs["dtype"].get<std::string>());
  return o;
}
Scalar value(const json& v) {
  if (v.is_boolean()) return Scalar(v.get<bool>());
  if (v.is_number_integer()) return Scalar(v.get<int64_t>());
  return Scalar(v.get<double>());
}
Shape shape(const Case& c) { return ints(c.attrs, "shape"); }

EMBER_RUNNER(empty) { return {empty(shape(c), opts(c, dev))}; }
EMBER_RUNNER(zeros) { return {zeros(shape(c), opts(c, dev))}; }
EMBER_RUNNER(ones) { return {ones(shape(c), opts(c, dev))}; }
EMBER_RUNNER(full) { return {full(shape(c), value(c.attrs.at("value")), opts(c, dev))}; }
EMBER_RUNNER(eye) { return {eye(c.attrs.at("n").get<int64_t>(), opt_int(c.attrs, "m"), opts(c, dev))}; }
EMBER_RUNNER(arange) {
  const json& a = c.attrs.at("args");
  if (a.size() == 1) return {arange(value(a[0]), opts(c, dev))};
  return {arange(value(a[0]), value(a[1]), a.size() > 2 ? value(a[2]) : Scalar(1), opts(c, dev))};
}
EMBER_RUNNER(linspace) {
  return {linspace(c.attrs.at("start").get<double>(), c.attrs.at("end").get<double>(),
                   c.attrs.at("steps").get<int64_t>(), opts(c, dev))};
}
TensorOptions like_opts(const Case& c) {
  TensorOptions o;
  if (c.attrs.contains("dtype")) o.dtype = dtype_from_name(c.attrs["dtype"].get<std::string>());
  return o;
}
EMBER_RUNNER(empty_like) { return {empty_like(make_tensor(c.inputs.at(0), dev), like_opts(c))}; }
EMBER_RUNNER(zeros_like) { return {zeros_like(make_tensor(c.inputs.at(0), dev), like_opts(c))}; }
EMBER_RUNNER(ones_like) { return {ones_like(make_tensor(c.inputs.at(0), dev), like_opts(c))}; }
EMBER_RUNNER(full_like) {
  return {full_like(make_tensor(c.inputs.at(0), dev), value(c.attrs.at("value")), like_opts(c))};
}
EMBER_RUNNER(rand) { return {rand(shape(c), opts(c, dev))}; }
EMBER_RUNNER(randn) { return {randn(shape(c), opts(c, dev))}; }
EMBER_RUNNER(uniform) {
  return {uniform(c.attrs.at("low").get<double>(), c.attrs.at("high").get<double>(), shape(c), opts(c, dev))};
}
EMBER_RUNNER(normal) {
  return {normal(c.attrs.at("mean").get<double>(), c.attrs.at("std").get<double>(), shape(c), opts(c, dev))};
}
EMBER_RUNNER(randint) {
  return {randint(c.attrs.at("low").get<int64_t>(), c.attrs.at("high").get<int64_t>(), shape(c), opts(c, dev))};
}
EMBER_RUNNER(bernoulli) {
  Tensor x = make_tensor(c.inputs.at(0), dev);
  if (c.attrs.contains("p")) return {bernoulli(x, c.attrs["p"].get<double>())};
  return {bernoulli(x)};
}
EMBER_RUNNER(rand_like) { return {rand_like(make_tensor(c.inputs.at(0), dev))}; }
EMBER_RUNNER(randn_like) { return {randn_like(make_tensor(c.inputs.at(0), dev))}; }

}  // namespace
}  // namespace ember::test
