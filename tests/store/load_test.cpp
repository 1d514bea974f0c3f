// load_into: renaming, filters, partial loads, dtype casts and the one combined error.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "store/store_test_util.h"

using namespace ember;

namespace {

// A checkpoint as another framework might name it, and the targets of a model.
struct Fixture {
  test::ScratchDir dir;
  std::string path = dir.file("ckpt.safetensors");
  Tensor w = arange(0.0, 6.0).reshape({2, 3}), b = tensor({10.f, 20.f});
  Tensor head = tensor({7.f});
  Fixture() {
    store::save_safetensors(path, {{"model.backbone.0.weight", w},
                                   {"model.backbone.0.bias", b},
                                   {"model.head.weight", head}});
  }
};

std::vector<float> vec(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST(StoreLoad, RenamesInOrderAndCopiesInPlace) {
  Fixture fx;
  Tensor w = zeros({2, 3}), b = zeros({2}), h = zeros({1});
  w.requires_grad_();  // a parameter: the copy must not be recorded
  Tensor w_before = w;
  store::LoadOptions o{.rename = {{"^model\\.", ""}, {"^backbone\\.(\\d+)", "layers.$1"}}};
  auto rep = store::load_into({{"layers.0.weight", w}, {"layers.0.bias", b}, {"head.weight", h}},
                              fx.path, o);
  EXPECT_EQ(vec(w), vec(fx.w));
  EXPECT_EQ(vec(b), vec(fx.b));
  EXPECT_EQ(vec(h), vec(fx.head));
  EXPECT_TRUE(w.is_alias_of(w_before));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(rep.loaded.size(), 3u);
  EXPECT_TRUE(rep.missing.empty() && rep.unexpected.empty());
}

TEST(StoreLoad, OneErrorListsMissingUnexpectedAndMisShapedAndWritesNothing) {
  Fixture fx;
  Tensor w = zeros({3, 2}), b = zeros({2}), extra = zeros({4});
  try {
    store::load_into({{"backbone.0.weight", w}, {"backbone.0.bias", b}, {"neck.scale", extra}},
                     fx.path, {.rename = {{"^model\\.", ""}}});
    FAIL() << "expected a LoadError";
  } catch (const store::LoadError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(fx.path), std::string::npos) << m;
    EXPECT_NE(m.find("missing (a target, not in the file): neck.scale"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected (in the file, no target): head.weight (file key "
                     "model.head.weight)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("backbone.0.weight (file key model.backbone.0.weight): shape [2, 3] in the "
                     "file, [3, 2] in the target"),
              std::string::npos)
        << m;
    EXPECT_EQ(e.report.missing, std::vector<std::string>{"neck.scale"});
    EXPECT_EQ(e.mismatched.size(), 1u);
  }
  EXPECT_EQ(vec(b), (std::vector<float>{0, 0}));  // checked first, so the good key was not loaded
}

TEST(StoreLoad, PartialAndUnexpectedWhenAllowed) {
  Fixture fx;
  Tensor b = zeros({2}), extra = full({1}, 5.0);
  auto rep = store::load_into({{"backbone.0.bias", b}, {"extra", extra}}, fx.path,
                              {.rename = {{"^model\\.", ""}},
                               .allow_partial = true,
                               .allow_unexpected = true});
  EXPECT_EQ(vec(b), vec(fx.b));
  EXPECT_EQ(vec(extra), std::vector<float>{5});
  EXPECT_EQ(rep.missing, std::vector<std::string>{"extra"});
  EXPECT_EQ(rep.unexpected.size(), 2u);
  EXPECT_EQ(rep.loaded, std::vector<std::string>{"backbone.0.bias"});
}

TEST(StoreLoad, IncludeAndExcludeFilterBothSides) {
  Fixture fx;
  Tensor w = zeros({2, 3}), b = zeros({2}), other = zeros({9});
  // Only the backbone, and not its bias: the bias target is neither loaded nor missing, and
  // "other" is outside the filter so it is not missing either.
  auto rep = store::load_into({{"model.backbone.0.weight", w}, {"model.backbone.0.bias", b},
                               {"other", other}},
                              fx.path, {.include = {"^model\\.backbone\\."}, .exclude = {"bias$"}});
  EXPECT_EQ(vec(w), vec(fx.w));
  EXPECT_EQ(vec(b), (std::vector<float>{0, 0}));
  EXPECT_EQ(rep.loaded, std::vector<std::string>{"model.backbone.0.weight"});
}

TEST(StoreLoad, CastsFloatingDtypesOnLoadOnlyWhenAllowed) {
  test::ScratchDir dir;
  std::string p = dir.file("half.safetensors");
  Tensor src = tensor({0.5f, -1.25f, 3.0f});
  store::save_safetensors(p, {{"a", src.to(kF16)}, {"b", src}, {"i", arange(3)}});
  Tensor a = zeros({3}), b = zeros({3}, {kBF16}), i = zeros({3});
  store::load_into({{"a", a}, {"b", b}}, p, {.allow_unexpected = true});
  EXPECT_EQ(vec(a), vec(src));
  EXPECT_EQ(b.dtype(), kBF16);
  EXPECT_EQ(vec(b), vec(src));
  EXPECT_THROW(store::load_into({{"a", a}}, p, {.allow_unexpected = true, .cast_floating = false}),
               store::LoadError);
  try {  // an integer tensor never loads into a float one
    store::load_into({{"i", i}}, p, {.allow_unexpected = true});
    FAIL();
  } catch (const store::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("i: dtype int64 in the file, float32 in the target"),
              std::string::npos)
        << e.what();
  }
}

TEST(StoreLoad, RejectsCollidingRenamesAndBadRegexes) {
  Fixture fx;
  Tensor t = zeros({2});
  try {
    store::load_into({{"x", t}}, fx.path, {.rename = {{".*bias$", "x"}, {".*weight$", "x"}},
                                           .allow_unexpected = true});
    FAIL();
  } catch (const store::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("both map to it"), std::string::npos) << e.what();
  }
  EXPECT_THROW(store::load_into({{"x", t}}, fx.path, {.include = {"("}}), ValueError);
  EXPECT_THROW(store::load_into({{"x", t}, {"x", t}}, fx.path), ValueError);
}
