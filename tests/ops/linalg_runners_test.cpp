// Golden runners for the matrix products and convolutions (tests/data/linalg.json, conv.json).
#include "golden.h"

namespace {

using namespace ember;
using ember::test::Case;
using ember::test::inputs_of;
using ember::test::ints;
using ember::test::opt_int;
namespace F = ember::nn::functional;

F::ConvOptions conv_options(const test::json& a) {
  F::ConvOptions o;
  o.stride = ints(a, "stride", {1});
  if (a.contains("padding") && a["padding"].is_string())
    o.padding_mode = a["padding"].get<std::string>();
  else o.padding = ints(a, "padding", {0});
  o.dilation = ints(a, "dilation", {1});
  o.groups = opt_int(a, "groups").value_or(1);
  return o;
}

F::ConvTransposeOptions conv_transpose_options(const test::json& a) {
  F::ConvTransposeOptions o;
  o.stride = ints(a, "stride", {1});
  o.padding = ints(a, "padding", {0});
  o.output_padding = ints(a, "output_padding", {0});
  o.dilation = ints(a, "dilation", {1});
  o.groups = opt_int(a, "groups").value_or(1);
  return o;
}

}  // namespace

EMBER_RUNNER(mm) {
  auto in = inputs_of(c, dev);
  return {mm(in[0], in[1])};
}
EMBER_RUNNER(bmm) {
  auto in = inputs_of(c, dev);
  return {bmm(in[0], in[1])};
}
EMBER_RUNNER(matmul) {
  auto in = inputs_of(c, dev);
  return {matmul(in[0], in[1])};
}
EMBER_RUNNER(linear) {
  auto in = inputs_of(c, dev);
  return {linear(in[0], in[1], in[2])};
}
EMBER_RUNNER(outer) {
  auto in = inputs_of(c, dev);
  return {outer(in[0], in[1])};
}
EMBER_RUNNER(dot) {
  auto in = inputs_of(c, dev);
  return {dot(in[0], in[1])};
}
EMBER_RUNNER(einsum) {
  auto in = inputs_of(c, dev);
  return {einsum(c.attrs.at("equation").get<std::string>(), in)};
}

EMBER_RUNNER(conv1d) {
  auto in = inputs_of(c, dev);
  return {F::conv1d(in[0], in[1], in[2], conv_options(c.attrs))};
}
EMBER_RUNNER(conv2d) {
  auto in = inputs_of(c, dev);
  return {F::conv2d(in[0], in[1], in[2], conv_options(c.attrs))};
}
EMBER_RUNNER(conv3d) {
  auto in = inputs_of(c, dev);
  return {F::conv3d(in[0], in[1], in[2], conv_options(c.attrs))};
}
EMBER_RUNNER(conv_transpose1d) {
  auto in = inputs_of(c, dev);
  return {F::conv_transpose1d(in[0], in[1], in[2], conv_transpose_options(c.attrs))};
}
EMBER_RUNNER(conv_transpose2d) {
  auto in = inputs_of(c, dev);
  return {F::conv_transpose2d(in[0], in[1], in[2], conv_transpose_options(c.attrs))};
}
EMBER_RUNNER(unfold) {
  auto in = inputs_of(c, dev);
  const auto& a = c.attrs;
  return {F::unfold(in[0], ints(a, "kernel_size"), ints(a, "dilation", {1}),
                    ints(a, "padding", {0}), ints(a, "stride", {1}))};
}
EMBER_RUNNER(fold) {
  auto in = inputs_of(c, dev);
  const auto& a = c.attrs;
  return {F::fold(in[0], ints(a, "output_size"), ints(a, "kernel_size"), ints(a, "dilation", {1}),
                  ints(a, "padding", {0}), ints(a, "stride", {1}))};
}
