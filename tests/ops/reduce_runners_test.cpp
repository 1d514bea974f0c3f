// Golden-case runners for the reductions (tests/data/reduce.json, from tests/gen/gen_reduce.py).
#include <cmath>

#include "golden.h"

namespace ember::test {
namespace {

std::optional<DType> dtype_attr(const json& a) {
  if (!a.contains("dtype") || a["dtype"].is_null()) return std::nullopt;
  return dtype_from_name(a["dtype"].get<std::string>());
}
bool keepdim(const json& a) { return a.value("keepdim", false); }
// A float attr that may be spelled "inf"/"-inf"/"nan" (JSON has no such numbers).
double float_attr(const json& a, const char* key, double fallback) {
  if (!a.contains(key) || a[key].is_null()) return fallback;
  const json& v = a[key];
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    return s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
  }
  return v.get<double>();
}
TensorList pair(std::tuple<Tensor, Tensor> t) { return {std::get<0>(t), std::get<1>(t)}; }

}  // namespace

EMBER_RUNNER(sum) {
  auto in = inputs_of(c, dev);
  return {sum(in[0], ints(c.attrs, "dims"), keepdim(c.attrs), dtype_attr(c.attrs))};
}
EMBER_RUNNER(mean) {
  auto in = inputs_of(c, dev);
  return {mean(in[0], ints(c.attrs, "dims"), keepdim(c.attrs), dtype_attr(c.attrs))};
}
EMBER_RUNNER(prod) {
  auto in = inputs_of(c, dev);
  return {prod(in[0], opt_int(c.attrs, "dim"), keepdim(c.attrs), dtype_attr(c.attrs))};
}
EMBER_RUNNER(max) {
  auto in = inputs_of(c, dev);
  if (auto d = opt_int(c.attrs, "dim")) return pair(max(in[0], *d, keepdim(c.attrs)));
  return {max(in[0])};
}
EMBER_RUNNER(min) {
  auto in = inputs_of(c, dev);
  if (auto d = opt_int(c.attrs, "dim")) return pair(min(in[0], *d, keepdim(c.attrs)));
  return {min(in[0])};
}
EMBER_RUNNER(amax) {
  auto in = inputs_of(c, dev);
  return {amax(in[0], ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(amin) {
  auto in = inputs_of(c, dev);
  return {amin(in[0], ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(argmax) {
  auto in = inputs_of(c, dev);
  return {argmax(in[0], opt_int(c.attrs, "dim"), keepdim(c.attrs))};
}
EMBER_RUNNER(argmin) {
  auto in = inputs_of(c, dev);
  return {argmin(in[0], opt_int(c.attrs, "dim"), keepdim(c.attrs))};
}
EMBER_RUNNER(any) {
  auto in = inputs_of(c, dev);
  return {any(in[0], ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(all) {
  auto in = inputs_of(c, dev);
  return {all(in[0], ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(var) {
  auto in = inputs_of(c, dev);
  return {var(in[0], ints(c.attrs, "dims"), float_attr(c.attrs, "correction", 1),
              keepdim(c.attrs))};
}
EMBER_RUNNER(std) {
  auto in = inputs_of(c, dev);
  return {ember::std(in[0], ints(c.attrs, "dims"), float_attr(c.attrs, "correction", 1),
                     keepdim(c.attrs))};
}
EMBER_RUNNER(logsumexp) {
  auto in = inputs_of(c, dev);
  return {logsumexp(in[0], ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(norm) {
  auto in = inputs_of(c, dev);
  return {norm(in[0], float_attr(c.attrs, "p", 2), ints(c.attrs, "dims"), keepdim(c.attrs))};
}
EMBER_RUNNER(count_nonzero) {
  auto in = inputs_of(c, dev);
  return {count_nonzero(in[0], ints(c.attrs, "dims"))};
}

}  // namespace ember::test
