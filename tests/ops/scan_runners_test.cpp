// Golden-case runners for scans, sorting and order statistics (tests/data/scan.json, from
// tests/gen/gen_scan.py).
#include "golden.h"

namespace ember::test {
namespace {

std::optional<DType> dtype_attr(const json& a) {
  if (!a.contains("dtype") || a["dtype"].is_null()) return std::nullopt;
  return dtype_from_name(a["dtype"].get<std::string>());
}
int64_t dim_attr(const json& a) { return opt_int(a, "dim").value_or(-1); }
TensorList pair(std::tuple<Tensor, Tensor> t) { return {std::get<0>(t), std::get<1>(t)}; }

}  // namespace

EMBER_RUNNER(cumsum) {
  auto in = inputs_of(c, dev);
  return {cumsum(in[0], dim_attr(c.attrs), dtype_attr(c.attrs))};
}
EMBER_RUNNER(cumprod) {
  auto in = inputs_of(c, dev);
  return {cumprod(in[0], dim_attr(c.attrs), dtype_attr(c.attrs))};
}
EMBER_RUNNER(cummax) { return pair(cummax(inputs_of(c, dev)[0], dim_attr(c.attrs))); }
EMBER_RUNNER(cummin) { return pair(cummin(inputs_of(c, dev)[0], dim_attr(c.attrs))); }
EMBER_RUNNER(sort) {
  auto in = inputs_of(c, dev);
  return pair(sort(in[0], dim_attr(c.attrs), c.attrs.value("descending", false)));
}
EMBER_RUNNER(argsort) {
  auto in = inputs_of(c, dev);
  return {argsort(in[0], dim_attr(c.attrs), c.attrs.value("descending", false))};
}
EMBER_RUNNER(topk) {
  auto in = inputs_of(c, dev);
  const bool largest = c.attrs.value("largest", true), sorted = c.attrs.value("sorted", true);
  const int64_t dim = dim_attr(c.attrs);
  auto [values, indices] = topk(in[0], c.attrs.at("k").get<int64_t>(), dim, largest, sorted);
  // Unsorted results come in an unspecified order: the case records its values sorted.
  if (!sorted) values = std::get<0>(sort(values, dim, largest));
  return {values, indices};
}
EMBER_RUNNER(kthvalue) {
  auto in = inputs_of(c, dev);
  return pair(kthvalue(in[0], c.attrs.at("k").get<int64_t>(), dim_attr(c.attrs),
                       c.attrs.value("keepdim", false)));
}
EMBER_RUNNER(median) {
  auto in = inputs_of(c, dev);
  if (auto d = opt_int(c.attrs, "dim"))
    return pair(median(in[0], *d, c.attrs.value("keepdim", false)));
  return {median(in[0])};
}

}  // namespace ember::test
