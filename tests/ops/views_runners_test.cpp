// Golden runners for the view ops, contiguous and copy (tests/data/views.json). A case whose
// attrs carry "alias" also checks that ember's result shares storage exactly when torch's does:
// views stay zero-copy and copies never alias their input.
#include <gtest/gtest.h>

#include "golden.h"

namespace ember::test {
namespace {

Tensor checked_alias(const Case& c, const Tensor& out, const Tensor& in) {
  const json& a = c.attrs;
  if (a.contains("alias") && !a["alias"].is_null())
    EXPECT_EQ(out.is_alias_of(in), a["alias"].get<bool>())
        << c.name << (a["alias"].get<bool>() ? ": expected a view" : ": expected a copy");
  return out;
}

int64_t iv(const Case& c, const char* key) { return c.attrs.at(key).get<int64_t>(); }

}  // namespace

#define EMBER_VIEW_RUNNER(op, expr)                   \
  EMBER_RUNNER(op) {                                  \
    auto in = inputs_of(c, dev);                      \
    const Tensor& x = in.at(0);                       \
    return {checked_alias(c, (expr), x)};             \
  }

EMBER_VIEW_RUNNER(reshape, reshape(x, ints(c.attrs, "shape")))
EMBER_VIEW_RUNNER(view, view(x, ints(c.attrs, "shape")))
EMBER_VIEW_RUNNER(flatten, flatten(x, iv(c, "start"), iv(c, "end")))
EMBER_VIEW_RUNNER(unflatten, unflatten(x, iv(c, "dim"), ints(c.attrs, "sizes")))
EMBER_VIEW_RUNNER(permute, permute(x, ints(c.attrs, "dims")))
EMBER_VIEW_RUNNER(transpose, transpose(x, iv(c, "d0"), iv(c, "d1")))
EMBER_VIEW_RUNNER(movedim, movedim(x, ints(c.attrs, "src"), ints(c.attrs, "dst")))
EMBER_VIEW_RUNNER(squeeze, squeeze(x, ints(c.attrs, "dims")))
EMBER_VIEW_RUNNER(unsqueeze, unsqueeze(x, iv(c, "dim")))
EMBER_VIEW_RUNNER(expand, expand(x, ints(c.attrs, "shape")))
EMBER_VIEW_RUNNER(broadcast_to, broadcast_to(x, ints(c.attrs, "shape")))
EMBER_VIEW_RUNNER(slice, slice(x, iv(c, "dim"), opt_int(c.attrs, "start"),
                               opt_int(c.attrs, "stop"), iv(c, "step")))
EMBER_VIEW_RUNNER(select, select(x, iv(c, "dim"), iv(c, "index")))
EMBER_VIEW_RUNNER(narrow, narrow(x, iv(c, "dim"), iv(c, "start"), iv(c, "length")))
EMBER_VIEW_RUNNER(diagonal, diagonal(x, iv(c, "offset"), iv(c, "d0"), iv(c, "d1")))
EMBER_VIEW_RUNNER(contiguous, contiguous(x))

EMBER_RUNNER(copy) {
  auto in = inputs_of(c, dev);
  if (!c.attrs.value("inplace", false)) return {checked_alias(c, clone(in.at(0)), in.at(0))};
  Tensor dst = in.at(0);
  dst.copy_(in.at(1));
  return {dst};
}

}  // namespace ember::test
