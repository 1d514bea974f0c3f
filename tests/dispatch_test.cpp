// The dispatcher: layers see every op on their device and forward to `next`; decompositions and
// kernel-internal ops stay below the layers; missing kernels and inference rules give clear errors.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

class CountingLayer : public Layer {
 public:
  const char* name() const override { return "count"; }
  TensorList call(const OpCall& c, const Next& next) override {
    ++counts[op_name(c.op)];
    return next(c);
  }
  std::map<std::string, int> counts;
};

TEST(Dispatch, LayersSeeEveryTopLevelOpAndForward) {
  auto layer = std::make_shared<CountingLayer>();
  Device dev = Device::flex().with_layer(layer);
  EXPECT_EQ(dev.str(), "flex+count");
  EXPECT_TRUE(dev.same_place(Device::flex()));
  Tensor a = ones({2, 3}, {.device = dev});
  Tensor b = a * 2 + 1;
  EXPECT_EQ(b.device(), dev);
  EXPECT_TRUE(allclose(b.to(Device::flex()), full({2, 3}, 3.0)));
  // zeros/ones are composite: the layer sees the op the user called, not its lowering to full.
  EXPECT_EQ(layer->counts["ones"], 1);
  EXPECT_EQ(layer->counts["full"], 0);
  EXPECT_EQ(layer->counts["mul"], 1);
  EXPECT_EQ(layer->counts["add"], 1);
  // ops a kernel runs internally (the int -> float cast inside exp) are not seen again
  layer->counts.clear();
  Tensor i = arange(3, {.device = dev});
  Tensor e = exp(i);
  EXPECT_EQ(layer->counts["exp"], 1);
  EXPECT_EQ(layer->counts["cast"], 0);
  EXPECT_NEAR(e.to_vector<float>()[1], 2.7182817f, 1e-6);
}

TEST(Dispatch, MixedLayerStacksRunThroughTheLayeredDevice) {
  auto layer = std::make_shared<CountingLayer>();
  Device dev = Device::flex().with_layer(layer);
  Tensor a = ones({2}, {.device = dev});
  Tensor plain = ones({2});
  Tensor c = plain + a;
  EXPECT_EQ(layer->counts["add"], 1);
  EXPECT_EQ(c.device(), dev);
}

TEST(Dispatch, StackedLayersRunOutermostFirst) {
  struct Tag : Layer {
    explicit Tag(std::string n, std::string* log) : n_(std::move(n)), log_(log) {}
    const char* name() const override { return n_.c_str(); }
    TensorList call(const OpCall& c, const Next& next) override {
      *log_ += n_;
      return next(c);
    }
    std::string n_;
    std::string* log_;
  };
  std::string log;
  Device dev = Device::flex().with_layer(std::make_shared<Tag>("A", &log)).with_layer(std::make_shared<Tag>("B", &log));
  (void)zeros({1}, {.device = dev});
  EXPECT_EQ(log, "AB");
}

TEST(Dispatch, MissingKernelFallsBackToDecompositionElseNamesOpDtypeAndDevice) {
  BackendImpl* flex = backend_for(Backend::Flex);
  ASSERT_NE(flex, nullptr);
  // zeros has no flex kernel: it runs through its decomposition into full.
  EXPECT_EQ(flex->kernel(OpId::zeros).fn, nullptr);
  EXPECT_EQ(zeros({2}).to_vector<float>(), (std::vector<float>{0, 0}));
  // Take neg's kernel away (neg has no decomposition): the error names op, dtype and backend.
  KernelEntry saved = flex->kernel(OpId::neg);
  flex->set_kernel(OpId::neg, nullptr, 0);
  try {
    (void)neg(ones({2}));
    ADD_FAILURE() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[neg]"), std::string::npos) << m;
    EXPECT_NE(m.find("float32"), std::string::npos) << m;
    EXPECT_NE(m.find("flex"), std::string::npos) << m;
  }
  flex->set_kernel(OpId::neg, saved.fn, saved.dtypes);
  EXPECT_EQ(neg(ones({1})).item<float>(), -1.f);
}

TEST(Dispatch, RegistryIsEnumerableWithUniqueNames) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_EQ(op_from_name(d.name), OpId(i));
  }
  EXPECT_THROW(op_from_name("no_such_op"), ValueError);
}

TEST(Dispatch, AnInputCountTheOpDoesNotTakeIsRefusedByName) {
  Tensor x = ones({2, 3});
  try {
    dispatch(OpId::add, Attrs{}, {x});
    FAIL() << "add took one input";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[add] expected 2 input tensors"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("found 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dispatch(OpId::relu, Attrs{}, {x, x}), ValueError);
  EXPECT_THROW(dispatch(OpId::zeros, Attrs{}, {x}), ValueError);
  EXPECT_THROW(dispatch(OpId::index_put, Attrs{}, {x}), ValueError);  // at least 2
  // Optional inputs travel as undefined tensors, so linear always takes three.
  EXPECT_THROW(dispatch(OpId::linear, Attrs{}, {x, x}), ValueError);
  // Every op, with any count from none to eight, and default attributes: a result or an ember
  // error, never a read past the inputs (the sanitizer build runs this too).
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = OpId(i);
    if (op_def(op).category == OpCategory::User) continue;
    for (size_t n = 0; n <= 8; ++n) {
      std::vector<Tensor> in(n, x);
      try {
        dispatch(op, Attrs{}, std::span<const Tensor>(in.data(), in.size()));
      } catch (const Error&) {
      }
    }
  }
}

}  // namespace
}  // namespace ember
