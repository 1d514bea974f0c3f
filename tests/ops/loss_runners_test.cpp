// Golden-case runners for the losses: each calls the public API with the case's attrs.
#include "golden.h"

namespace nnf = ember::nn::functional;
using ember::test::json;

namespace {

std::string reduction(const json& a) { return a.value("reduction", "mean"); }

nnf::CrossEntropyOptions class_opts(const json& a, const ember::Tensor& weight) {
  nnf::CrossEntropyOptions o;
  o.weight = weight;
  o.ignore_index = a.value("ignore_index", int64_t(-100));
  o.reduction = reduction(a);
  o.label_smoothing = a.value("label_smoothing", 0.0);
  return o;
}

}  // namespace

EMBER_RUNNER(cross_entropy) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::cross_entropy(in[0], in[1], class_opts(c.attrs, in[2]))};
}
EMBER_RUNNER(nll_loss) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::nll_loss(in[0], in[1], class_opts(c.attrs, in[2]))};
}
EMBER_RUNNER(mse_loss) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::mse_loss(in[0], in[1], reduction(c.attrs))};
}
EMBER_RUNNER(l1_loss) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::l1_loss(in[0], in[1], reduction(c.attrs))};
}
EMBER_RUNNER(smooth_l1_loss) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::smooth_l1_loss(in[0], in[1], reduction(c.attrs), c.attrs.value("beta", 1.0))};
}
EMBER_RUNNER(huber_loss) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::huber_loss(in[0], in[1], reduction(c.attrs), c.attrs.value("delta", 1.0))};
}
EMBER_RUNNER(binary_cross_entropy) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::binary_cross_entropy(in[0], in[1], in[2], reduction(c.attrs))};
}
EMBER_RUNNER(binary_cross_entropy_with_logits) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::binary_cross_entropy_with_logits(in[0], in[1], in[2], reduction(c.attrs), in[3])};
}
EMBER_RUNNER(kl_div) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::kl_div(in[0], in[1], reduction(c.attrs), c.attrs.value("log_target", false))};
}
