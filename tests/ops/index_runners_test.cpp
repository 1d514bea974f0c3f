// Golden runners for the index ops (tests/data/index.json).
#include "golden.h"

namespace ember::test {
namespace {

int64_t iv(const Case& c, const char* key) { return c.attrs.at(key).get<int64_t>(); }
// A number, bool or "nan"/"inf"/"-inf" attribute as a Scalar.
Scalar sv(const Case& c, const char* key) { return scalar_of(json{{"scalar", c.attrs.at(key)}}); }
bool is_scalar_spec(const json& spec) { return spec.is_object() && spec.contains("scalar"); }

}  // namespace

EMBER_RUNNER(index_select) {
  auto in = inputs_of(c, dev);
  return {index_select(in.at(0), iv(c, "dim"), in.at(1))};
}
EMBER_RUNNER(gather) {
  auto in = inputs_of(c, dev);
  return {gather(in.at(0), iv(c, "dim"), in.at(1))};
}
EMBER_RUNNER(scatter) {
  auto in = inputs_of(c, dev);
  if (in.size() == 2) return {scatter(in[0], iv(c, "dim"), in[1], sv(c, "value"))};
  return {scatter(in.at(0), iv(c, "dim"), in.at(1), in.at(2))};
}
EMBER_RUNNER(scatter_add) {
  auto in = inputs_of(c, dev);
  return {scatter_add(in.at(0), iv(c, "dim"), in.at(1), in.at(2))};
}
EMBER_RUNNER(scatter_reduce) {
  auto in = inputs_of(c, dev);
  return {scatter_reduce(in.at(0), iv(c, "dim"), in.at(1), in.at(2),
                         c.attrs.at("reduce").get<std::string>(),
                         c.attrs.at("include_self").get<bool>())};
}
EMBER_RUNNER(index_add) {
  auto in = inputs_of(c, dev);
  return {index_add(in.at(0), iv(c, "dim"), in.at(1), in.at(2), sv(c, "alpha"))};
}
EMBER_RUNNER(index_put) {
  auto in = inputs_of(c, dev);
  TensorList indices(in.begin() + 2, in.end());
  return {index_put(in.at(0), indices, in.at(1), c.attrs.at("accumulate").get<bool>())};
}
EMBER_RUNNER(masked_fill) {
  auto in = inputs_of(c, dev);
  if (is_scalar_spec(c.inputs.at(2))) return {masked_fill(in[0], in[1], scalar_of(c.inputs[2]))};
  return {masked_fill(in.at(0), in.at(1), in.at(2))};
}
EMBER_RUNNER(masked_select) {
  auto in = inputs_of(c, dev);
  return {masked_select(in.at(0), in.at(1))};
}
EMBER_RUNNER(nonzero) {
  auto in = inputs_of(c, dev);
  return {nonzero(in.at(0))};
}
EMBER_RUNNER(take) {
  auto in = inputs_of(c, dev);
  return {take(in.at(0), in.at(1))};
}
EMBER_RUNNER(one_hot) {
  auto in = inputs_of(c, dev);
  return {one_hot(in.at(0), iv(c, "num_classes"))};
}

}  // namespace ember::test
