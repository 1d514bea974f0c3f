// Golden-case runners for nn functional ops (pooling, interpolate, softmax, normalisation,
// dropout, embedding, distances): each calls the public API with the case's attrs.
#include <cmath>

#include "golden.h"

namespace nnf = ember::nn::functional;
using ember::test::ints;
using ember::test::json;
using ember::test::opt_int;

namespace {

// A float attr that may be written as "inf" / "-inf" (JSON has no infinities).
double num_attr(const json& a, const char* key, double fallback) {
  if (!a.contains(key)) return fallback;
  const json& v = a[key];
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    return s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
  }
  return v.get<double>();
}

nnf::PoolOptions pool_opts(const json& a) {
  nnf::PoolOptions o;
  o.kernel_size = ints(a, "kernel_size");
  o.stride = ints(a, "stride");
  o.padding = ints(a, "padding", {0});
  o.dilation = ints(a, "dilation", {1});
  o.ceil_mode = a.value("ceil_mode", false);
  o.count_include_pad = a.value("count_include_pad", true);
  return o;
}

ember::TensorList max_pool(const ember::test::Case& c, ember::Device dev, int nd) {
  auto in = ember::test::inputs_of(c, dev);
  auto o = pool_opts(c.attrs);
  if (c.attrs.value("return_indices", false)) {
    auto [v, i] =
        nd == 1 ? nnf::max_pool1d_with_indices(in[0], o) : nnf::max_pool2d_with_indices(in[0], o);
    return {v, i};
  }
  return {nd == 1 ? nnf::max_pool1d(in[0], o) : nnf::max_pool2d(in[0], o)};
}

}  // namespace

EMBER_RUNNER(max_pool1d) { return max_pool(c, dev, 1); }
EMBER_RUNNER(max_pool2d) { return max_pool(c, dev, 2); }
EMBER_RUNNER(avg_pool1d) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::avg_pool1d(in[0], pool_opts(c.attrs))};
}
EMBER_RUNNER(avg_pool2d) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::avg_pool2d(in[0], pool_opts(c.attrs))};
}
EMBER_RUNNER(adaptive_avg_pool1d) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::adaptive_avg_pool1d(in[0], c.attrs.at("output_size").get<int64_t>())};
}
EMBER_RUNNER(adaptive_avg_pool2d) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::adaptive_avg_pool2d(in[0], ints(c.attrs, "output_size"))};
}
EMBER_RUNNER(adaptive_max_pool2d) {
  auto in = ember::test::inputs_of(c, dev);
  auto [v, i] = nnf::adaptive_max_pool2d(in[0], ints(c.attrs, "output_size"));
  return {v, i};
}

EMBER_RUNNER(interpolate) {
  auto in = ember::test::inputs_of(c, dev);
  nnf::InterpolateOptions o;
  o.size = ints(c.attrs, "size");
  if (c.attrs.contains("scale_factor")) {
    const json& s = c.attrs["scale_factor"];
    if (s.is_array()) o.scale_factor = s.get<std::vector<double>>();
    else o.scale_factor = {s.get<double>()};
  }
  o.mode = c.attrs.value("mode", "nearest");
  if (c.attrs.contains("align_corners")) o.align_corners = c.attrs["align_corners"].get<bool>();
  return {nnf::interpolate(in[0], o)};
}

EMBER_RUNNER(softmax) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::softmax(in[0], c.attrs.at("dim").get<int64_t>())};
}
EMBER_RUNNER(log_softmax) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::log_softmax(in[0], c.attrs.at("dim").get<int64_t>())};
}
EMBER_RUNNER(layer_norm) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::layer_norm(in[0], ints(c.attrs, "normalized_shape"), in[1], in[2],
                          c.attrs.value("eps", 1e-5))};
}
EMBER_RUNNER(rms_norm) {
  auto in = ember::test::inputs_of(c, dev);
  std::optional<double> eps;
  if (c.attrs.contains("eps")) eps = c.attrs["eps"].get<double>();
  return {nnf::rms_norm(in[0], ints(c.attrs, "normalized_shape"), in[1], eps)};
}
EMBER_RUNNER(group_norm) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::group_norm(in[0], c.attrs.at("num_groups").get<int64_t>(), in[1], in[2],
                          c.attrs.value("eps", 1e-5))};
}
// Outputs: y, then the running statistics after the call (updated in place when training).
EMBER_RUNNER(batch_norm) {
  auto in = ember::test::inputs_of(c, dev);
  ember::Tensor y = nnf::batch_norm(in[0], in[1], in[2], in[3], in[4],
                                    c.attrs.value("training", false),
                                    c.attrs.value("momentum", 0.1), c.attrs.value("eps", 1e-5));
  return {y, in[1], in[2]};
}
EMBER_RUNNER(dropout) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::dropout(in[0], c.attrs.at("p").get<double>(), c.attrs.value("training", true))};
}
EMBER_RUNNER(embedding) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::embedding(in[0], in[1], opt_int(c.attrs, "padding_idx"))};
}
EMBER_RUNNER(cosine_similarity) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::cosine_similarity(in[0], in[1], c.attrs.value("dim", int64_t(1)),
                                 c.attrs.value("eps", 1e-8))};
}
EMBER_RUNNER(pairwise_distance) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::pairwise_distance(in[0], in[1], num_attr(c.attrs, "p", 2.0),
                                 c.attrs.value("eps", 1e-6), c.attrs.value("keepdim", false))};
}
EMBER_RUNNER(cdist) {
  auto in = ember::test::inputs_of(c, dev);
  return {nnf::cdist(in[0], in[1], num_attr(c.attrs, "p", 2.0))};
}
EMBER_RUNNER(scaled_dot_product_attention) {
  auto in = ember::test::inputs_of(c, dev);
  nnf::AttentionOptions o;
  o.attn_mask = in[3];
  o.dropout_p = c.attrs.value("dropout_p", 0.0);
  o.is_causal = c.attrs.value("is_causal", false);
  if (c.attrs.contains("scale")) o.scale = c.attrs["scale"].get<double>();
  return {nnf::scaled_dot_product_attention(in[0], in[1], in[2], o)};
}
