// Golden runners for weight-only quantization (tests/data/quant.json): "quantize" cases check
// quantize_int8 / quantize_int4 against torch's rounding bit for bit, the others the products.
#include "golden.h"

namespace {

using namespace ember;
using ember::test::Case;
using ember::test::inputs_of;

bool quantizes(const Case& c) { return c.attrs.value("mode", "") == "quantize"; }

}  // namespace

EMBER_RUNNER(linear_int8) {
  auto in = inputs_of(c, dev);
  if (quantizes(c)) {
    QuantizedInt8 q = quantize_int8(in[0]);
    return {q.values, q.scale};
  }
  return {linear_int8(in[0], in[1], in[2], in[3])};
}

EMBER_RUNNER(linear_int4) {
  auto in = inputs_of(c, dev);
  const int64_t group = c.attrs.at("group").get<int64_t>();
  if (quantizes(c)) {
    QuantizedInt4 q = quantize_int4(in[0], group);
    return {q.values, q.scale, q.zero};
  }
  return {linear_int4(in[0], in[1], in[2], in[3], group, in[4])};
}
