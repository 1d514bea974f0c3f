// Golden runners for the layout ops (tests/data/layout.json). split/chunk/unbind/meshgrid must
// return views of their inputs (zero-copy, like torch); the copying ops must never return one.
#include <gtest/gtest.h>

#include "golden.h"

namespace ember::test {
namespace {

int64_t iv(const Case& c, const char* key) { return c.attrs.at(key).get<int64_t>(); }

TensorList views_of(const Case& c, TensorList outs, const Tensor& x) {
  for (const Tensor& o : outs)
    if (o.numel() > 0) EXPECT_TRUE(o.is_alias_of(x)) << c.name << ": expected views of the input";
  return outs;
}

Tensor fresh(const Case& c, const Tensor& out, const TensorList& in) {
  for (const Tensor& t : in)
    if (t.defined() && out.numel() > 0)
      EXPECT_FALSE(out.is_alias_of(t)) << c.name << ": expected a copy, found a view";
  return out;
}

}  // namespace

EMBER_RUNNER(cat) {
  auto in = inputs_of(c, dev);
  return {fresh(c, cat(in, iv(c, "dim")), in)};
}
EMBER_RUNNER(stack) {
  auto in = inputs_of(c, dev);
  return {fresh(c, stack(in, iv(c, "dim")), in)};
}
EMBER_RUNNER(split) {
  auto in = inputs_of(c, dev);
  const Tensor& x = in.at(0);
  if (c.attrs.contains("sizes"))
    return views_of(c, split(x, ints(c.attrs, "sizes"), iv(c, "dim")), x);
  return views_of(c, split(x, iv(c, "size"), iv(c, "dim")), x);
}
EMBER_RUNNER(chunk) {
  auto in = inputs_of(c, dev);
  return views_of(c, chunk(in.at(0), iv(c, "chunks"), iv(c, "dim")), in.at(0));
}
EMBER_RUNNER(unbind) {
  auto in = inputs_of(c, dev);
  return views_of(c, unbind(in.at(0), iv(c, "dim")), in.at(0));
}
EMBER_RUNNER(meshgrid) {
  auto in = inputs_of(c, dev);
  TensorList out = meshgrid(in, c.attrs.at("indexing").get<std::string>());
  for (size_t i = 0; i < out.size() && i < in.size(); ++i)
    if (out[i].numel() > 0) EXPECT_TRUE(out[i].is_alias_of(in[i])) << c.name << ": grid " << i;
  return out;
}
EMBER_RUNNER(repeat) {
  auto in = inputs_of(c, dev);
  return {fresh(c, repeat(in.at(0), ints(c.attrs, "repeats")), in)};
}
EMBER_RUNNER(tile) {
  auto in = inputs_of(c, dev);
  return {fresh(c, tile(in.at(0), ints(c.attrs, "reps")), in)};
}
EMBER_RUNNER(repeat_interleave) {
  auto in = inputs_of(c, dev);
  std::optional<int64_t> dim = opt_int(c.attrs, "dim");
  if (in.size() > 1) return {fresh(c, repeat_interleave(in[0], in[1], dim), in)};
  return {fresh(c, repeat_interleave(in.at(0), iv(c, "repeats"), dim), in)};
}
EMBER_RUNNER(flip) {
  auto in = inputs_of(c, dev);
  return {fresh(c, flip(in.at(0), ints(c.attrs, "dims")), in)};
}
EMBER_RUNNER(roll) {
  auto in = inputs_of(c, dev);
  return {fresh(c, roll(in.at(0), ints(c.attrs, "shifts"), ints(c.attrs, "dims")), in)};
}
EMBER_RUNNER(tril) {
  auto in = inputs_of(c, dev);
  return {fresh(c, tril(in.at(0), iv(c, "diagonal")), in)};
}
EMBER_RUNNER(triu) {
  auto in = inputs_of(c, dev);
  return {fresh(c, triu(in.at(0), iv(c, "diagonal")), in)};
}
EMBER_RUNNER(pad) {
  auto in = inputs_of(c, dev);
  double value = c.attrs.contains("value")
                     ? scalar_of(json{{"scalar", c.attrs["value"]}}).to_double()
                     : 0.0;
  const std::string mode = c.attrs.at("mode").get<std::string>();
  return {fresh(c, pad(in.at(0), ints(c.attrs, "pad"), mode, value), in)};
}

}  // namespace ember::test
