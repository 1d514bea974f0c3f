// Tensor::index / index_put_ against torch 1.13's results for the same Python indexing
// (tests/gen/gen_indexing.py writes tests/data/api/indexing.json), on every golden device.
#include <gtest/gtest.h>

#include <fstream>

#include "golden.h"

namespace ember::test {
namespace {
using namespace ember::indexing;

std::vector<TensorIndex> indices_of(const json& list, Device dev) {
  std::vector<TensorIndex> out;
  for (const json& k : list) {
    if (k.contains("none"))
      out.emplace_back(None);
    else if (k.contains("ellipsis"))
      out.emplace_back(Ellipsis);
    else if (k.contains("bool"))
      out.emplace_back(k["bool"].get<bool>());
    else if (k.contains("int"))
      out.emplace_back(k["int"].get<int64_t>());
    else if (k.contains("slice")) {
      auto bound = [](const json& b) -> std::optional<int64_t> {
        return b.is_null() ? std::nullopt : std::optional<int64_t>(b.get<int64_t>());
      };
      const json& s = k["slice"];
      out.emplace_back(Slice(bound(s[0]), bound(s[1]), bound(s[2])));
    } else {
      out.emplace_back(make_tensor(k["tensor"], dev));
    }
  }
  return out;
}

TEST(TensorIndexing, MatchesTorch) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/api/indexing.json");
  ASSERT_TRUE(f.good());
  const json data = json::parse(f);
  ASSERT_GE(data["cases"].size(), 30u);
  for (const GoldenDevice& gd : golden_devices()) {
    for (const json& c : data["cases"]) {
      SCOPED_TRACE(c["name"].get<std::string>() + " on " + gd.name);
      Tensor x = make_tensor(c["x"], gd.device).clone();
      const auto idx = indices_of(c["indices"], gd.device);
      Tensor got;
      if (c["kind"] == "index") {
        got = x.index(idx);
      } else {
        x.index_put_(idx, make_tensor(c["value"], gd.device));
        got = x;
      }
      const std::string err = compare(got, c["out"], 0, 0);
      EXPECT_TRUE(err.empty()) << err;
    }
  }
}

TEST(TensorIndexing, BasicIndicesGiveViews) {
  Tensor x = arange(24, kF32).reshape({2, 3, 4});
  Tensor v = x.index({Slice(), 1, Slice(None, None, 2)});
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(v.shape(), Shape({2, 2}));
  x.index_put_({0, Ellipsis}, 0);
  EXPECT_EQ(x.sum().item<float>(), 210.f);  // 12..23 remain
}

TEST(TensorIndexing, Errors) {
  Tensor x = arange(6).reshape({2, 3});
  EXPECT_THROW(x.index({0, 0, 0}), IndexError);
  EXPECT_THROW(x.index({Ellipsis, Ellipsis}), IndexError);
  EXPECT_THROW(x.index({tensor({0.5f})}), IndexError);
  EXPECT_THROW(x.index({tensor({1, 0, 1}).to(kBool)}), IndexError);  // mask of the wrong size
  EXPECT_THROW(x.index({tensor({2})}), ValueError);                  // out of range
  EXPECT_THROW(x.index({Slice(0, 2, 0)}), ValueError);
}

TEST(TensorIndexing, AdvancedIndexingIsDifferentiable) {
  Tensor x = arange(6, kF32).reshape({2, 3}).requires_grad_();
  Tensor y = x.index({Slice(), tensor({2, 0, 2})});
  Tensor g = y.sum().backward().get(x);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1, 0, 2, 1, 0, 2}));
}

}  // namespace
}  // namespace ember::test
