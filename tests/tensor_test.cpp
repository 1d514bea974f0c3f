// Core types: dtypes and promotion, shapes, devices, tensors, views, printing, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(DType, PromotionFollowsTorch) {
  EXPECT_EQ(promote_types(kU8, kI8), kI16);
  EXPECT_EQ(promote_types(kBool, kI32), kI32);
  EXPECT_EQ(promote_types(kF16, kBF16), kF32);
  EXPECT_EQ(promote_types(kI64, kF16), kF16);
  EXPECT_EQ(promote_types(kF32, kF64), kF64);
  EXPECT_EQ(itemsize(kBF16), 2u);
  EXPECT_EQ(dtype_from_name("bfloat16"), kBF16);
  EXPECT_THROW(dtype_from_name("float8"), ValueError);
}

TEST(DType, ScalarsAreWeakTypes) {
  Tensor i = arange(4, {kI32});
  EXPECT_EQ((i + 1).dtype(), kI32);
  EXPECT_EQ((i + 1.5).dtype(), kF32);
  Tensor h = ones({2}, {kF16});
  EXPECT_EQ((h * 2.0).dtype(), kF16);
  EXPECT_EQ((h + ones({2}, {kF64})).dtype(), kF64);
  EXPECT_EQ((i / 2).dtype(), kF32);
  // a 0-d tensor of a higher category wins, of the same category it does not
  EXPECT_EQ((i + scalar_tensor(2.0, kF64)).dtype(), kF64);
  EXPECT_EQ((h + scalar_tensor(2.0, kF64)).dtype(), kF16);
}

TEST(Half, RoundTrips) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 1e-7f, 3.14159f}) {
    EXPECT_NEAR(float(Half(f)), f, std::abs(f) * 1e-3 + 1e-7);
    EXPECT_NEAR(float(BFloat16(f)), f, std::abs(f) * 1e-2 + 1e-30);
  }
  EXPECT_TRUE(std::isinf(float(Half(70000.f))));
  EXPECT_TRUE(std::isnan(float(Half(NAN))));
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(Tensor, ValueSemanticsAndViews) {
  Tensor a = arange(6).reshape({2, 3});
  Tensor b = a;  // shares the implementation
  EXPECT_TRUE(b.is_alias_of(a));
  Tensor t = a.transpose(0, 1);
  EXPECT_TRUE(t.is_alias_of(a));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  EXPECT_EQ(t.strides(), Shape({1, 3}));
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  Tensor c = t.contiguous();
  EXPECT_FALSE(c.is_alias_of(a));
  EXPECT_TRUE(a.contiguous().is_alias_of(a));
  Tensor s = a.slice(1, 0, 3, 2);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 5}));
  s.fill_(9);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{9, 1, 9, 9, 4, 9}));
  EXPECT_GT(a.version(), 0u);
}

TEST(Tensor, ItemAndData) {
  Tensor x = full({}, 2.5);
  EXPECT_EQ(x.dim(), 0);
  EXPECT_DOUBLE_EQ(x.item<double>(), 2.5);
  EXPECT_EQ(x.item<int>(), 2);
  EXPECT_THROW(ones({2}).item<float>(), ValueError);
  TensorData d = tensor({1.f, 2.f}).data();
  EXPECT_EQ(d.dtype, kF32);
  EXPECT_EQ(d.as<float>()[1], 2.f);
  EXPECT_THROW(ones({2}).data_ptr<double>(), DTypeError);
}

TEST(Tensor, FromHostData) {
  Tensor t = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t[1].to_vector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_THROW(tensor(std::vector<float>{1, 2}, {3}), ShapeError);
  Tensor i = tensor({1, 2, 3}, kI64);
  EXPECT_EQ(i.dtype(), kI64);
}

TEST(Printing, LooksLikeTorch) {
  EXPECT_EQ(tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}).str(), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(tensor({1.5f, -2.25f}).str(), "tensor([ 1.5000, -2.2500])");
  EXPECT_EQ(arange(3).str(), "tensor([0, 1, 2])");
  EXPECT_EQ(full({}, 3.0).str(), "tensor(3.)");
  EXPECT_EQ(ones({2}, {kF64}).str(), "tensor([1., 1.], dtype=float64)");
  EXPECT_EQ(zeros({0, 3}).str(), "tensor([], size=(0, 3))");
  EXPECT_EQ(tensor({1e-5f, 1.f}).str(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ((arange(3) > 0).str(), "tensor([False,  True,  True])");
  std::string big = arange(2000).str();
  EXPECT_NE(big.find("..."), std::string::npos);
}

TEST(Device, ValueTypeAndErrors) {
  EXPECT_EQ(Device::flex().str(), "flex");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_THROW(Device::cuda(0), DeviceError);
  EXPECT_THROW(Device::remote("wss://localhost:1"), DeviceError);
  Tensor a = ones({2}, {.device = Device::flex()});
  Tensor b = ones({2}, {.device = Device::cpu()});
  try {
    (void)(a + b);
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("flex"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos);
  }
  EXPECT_TRUE(allclose(a + b.to(Device::flex()), full({2}, 2.0)));
  {
    DeviceGuard g(Device::cpu());
    EXPECT_EQ(zeros({1}).device(), Device::cpu());
  }
  EXPECT_EQ(zeros({1}).device(), Device::flex());
}

TEST(Errors, NameTheOpAndWhatWasFound) {
  try {
    (void)(ones({2, 3}) + ones({4, 3}));
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[add]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 3]"), std::string::npos) << m;
  }
  EXPECT_THROW(ones({6}).view({4, -1}), ShapeError);
  EXPECT_THROW(ones({2, 3}).transpose(0, 1).view({6}), ShapeError);
  EXPECT_THROW(ones({2}).select(0, 2), IndexError);
  EXPECT_THROW(ones({2}).sum({3}), IndexError);
  EXPECT_THROW(bitwise_and(ones({2}), ones({2})), DTypeError);
  EXPECT_THROW(Tensor().shape(), ValueError);
  EXPECT_THROW(div(arange(3), zeros({3}, {kI64}), "floor"), ValueError);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {
TEST(Errors, HugeAndDeepShapesAreRejectedNotCrashed) {
  EXPECT_THROW(empty({int64_t(1) << 40, int64_t(1) << 40}), ValueError);
  EXPECT_THROW(zeros({-1}), ValueError);
  Tensor t = ones({1});
  EXPECT_THROW({
    for (int i = 0; i < 20; ++i) t = t.unsqueeze(0);
  }, ShapeError);
}
}  // namespace
}  // namespace ember
