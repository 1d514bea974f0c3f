// Integer extremes and out-of-range casts: results are defined (PyTorch's wrap-around for
// integer arithmetic, the documented values for float -> int casts) and computed without UB
// (the sanitizer build checks that), and checked conversions refuse what does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ember/ember.h"
#include "hostile/expect_error.h"

using namespace ember;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor i64(std::vector<int64_t> v) { return tensor(v, {int64_t(v.size())}); }
Tensor i32(std::vector<int32_t> v) { return tensor(v, {int64_t(v.size())}); }
}  // namespace

TEST(HostileIntegers, NegAndAbsOfTheMostNegativeValueWrap) {
  EXPECT_EQ(neg(i64({kMin, 5})).to_vector<int64_t>(), (std::vector<int64_t>{kMin, -5}));
  EXPECT_EQ(ember::abs(i64({kMin, -5})).to_vector<int64_t>(), (std::vector<int64_t>{kMin, 5}));
  EXPECT_EQ(neg(i32({kMin32})).to_vector<int32_t>(), std::vector<int32_t>{kMin32});
  EXPECT_EQ(ember::abs(i32({kMin32})).to_vector<int32_t>(), std::vector<int32_t>{kMin32});
  Tensor i8 = tensor(std::vector<int8_t>{-128, 127}, {2});
  EXPECT_EQ(neg(i8).to_vector<int64_t>(), (std::vector<int64_t>{-128, -127}));
  EXPECT_EQ(ember::abs(i8).to_vector<int64_t>(), (std::vector<int64_t>{-128, 127}));
}

TEST(HostileIntegers, ArithmeticWrapsLikeTorch) {
  EXPECT_EQ(add(i64({kMax}), i64({1})).item<int64_t>(), kMin);
  EXPECT_EQ((i64({kMax}) + 1).item<int64_t>(), kMin);
  EXPECT_EQ(sub(i64({kMin}), i64({1})).item<int64_t>(), kMax);
  EXPECT_EQ(mul(i64({kMax}), i64({2})).item<int64_t>(), -2);
  EXPECT_EQ(mul(i64({kMin}), i64({-1})).item<int64_t>(), kMin);
  EXPECT_EQ(add(i32({kMax32}), i32({1})).item<int32_t>(), kMin32);
  EXPECT_EQ(mul(i32({65536}), i32({65536})).item<int32_t>(), 0);
  Tensor s16 = tensor(std::vector<int16_t>{32767}, {1});
  EXPECT_EQ(mul(s16, s16).item<int64_t>(), 1);  // 32767^2 mod 2^16
  Tensor u8 = tensor(std::vector<uint8_t>{255}, {1});
  EXPECT_EQ(add(u8, u8).item<int64_t>(), 254);
  EXPECT_EQ(mul(u8, u8).item<int64_t>(), 1);
  EXPECT_EQ(square(i64({int64_t(1) << 32})).item<int64_t>(), 0);
  EXPECT_EQ(square(i32({65536})).item<int32_t>(), 0);
  EXPECT_EQ(addcmul(i64({kMax}), i64({1}), i64({1}), 1).item<int64_t>(), kMin);
  EXPECT_EQ(pow(i64({3}), i64({41})).item<int64_t>(),
            -420491770248316829);  // 3^41 mod 2^64, as torch
}

TEST(HostileIntegers, ReductionsAndScansWrap) {
  EXPECT_EQ(sum(i64({int64_t(1) << 62, int64_t(1) << 62})).item<int64_t>(), kMin);
  EXPECT_EQ(sum(i64({kMax, kMax, 2})).item<int64_t>(), 0);
  EXPECT_EQ(prod(i64({int64_t(1) << 32, int64_t(1) << 32})).item<int64_t>(), 0);
  EXPECT_EQ(cumsum(i64({kMax, 1, 1}), 0).to_vector<int64_t>(),
            (std::vector<int64_t>{kMax, kMin, kMin + 1}));
  EXPECT_EQ(cumprod(i64({kMax, 2}), 0).to_vector<int64_t>(), (std::vector<int64_t>{kMax, -2}));
  // Long sums go through the chunked/threaded engine: wrapping is still exact.
  Tensor many = full({100000}, kMax, {kI64});
  EXPECT_EQ(sum(many).item<int64_t>(), -100000);                               // as torch
  EXPECT_EQ(sum(i32({kMax32, kMax32})).item<int64_t>(), 2 * int64_t(kMax32));  // int64 result
}

TEST(HostileIntegers, DivisionAtTheEdges) {
  EXPECT_EQ(floor_divide(i64({kMin}), i64({-1})).item<int64_t>(), kMin);
  EXPECT_EQ(div(i64({kMin}), i64({-1}), "trunc").item<int64_t>(), kMin);
  EXPECT_EQ(div(i64({kMin}), i64({-1}), "floor").item<int64_t>(), kMin);
  EXPECT_EQ(floor_divide(i32({kMin32}), i32({-1})).item<int32_t>(), kMin32);
  EXPECT_EQ(remainder(i64({kMin}), i64({-1})).item<int64_t>(), 0);
  EXPECT_EQ(fmod(i64({kMin}), i64({-1})).item<int64_t>(), 0);
  EXPECT_EQ(remainder(i64({kMin}), i64({kMax})).item<int64_t>(), kMax - 1);
  EXPECT_EQ(floor_divide(i64({-7}), i64({2})).item<int64_t>(), -4);
  EXPECT_ERROR(floor_divide(i64({1}), i64({0})), ValueError, "div");
  EXPECT_ERROR(div(i64({1}), i64({0}), "trunc"), ValueError, "div");
  EXPECT_ERROR(remainder(i32({1}), i32({0})), ValueError, "remainder");
  EXPECT_ERROR(fmod(i64({kMin}), i64({0})), ValueError, "fmod");
}

TEST(HostileIntegers, FloatToIntCastsHaveDocumentedResults) {
  Tensor f = tensor({kInf, kNaN, 1e30, -1e30, -kInf, 300.7, -5.0, 1e10}, kF64);
  EXPECT_EQ(f.to(kI64).to_vector<int64_t>(),
            (std::vector<int64_t>{kMin, kMin, kMin, kMin, kMin, 300, -5, 10000000000}));
  EXPECT_EQ(f.to(kI32).to_vector<int32_t>(),
            (std::vector<int32_t>{kMin32, kMin32, kMin32, kMin32, kMin32, 300, -5, kMin32}));
  EXPECT_EQ(f.to(kI16).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0, 300, -5, 0}));
  EXPECT_EQ(f.to(kI8).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0, 44, -5, 0}));
  EXPECT_EQ(f.to(kU8).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0, 44, 251, 0}));
  EXPECT_EQ(f.to(kBool).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1}));
  for (DType from : {kF32, kF16, kBF16}) {
    Tensor g = f.to(from);  // 1e30 and 1e10 become inf in f16
    EXPECT_EQ(g.to(kI64).to_vector<int64_t>()[0], kMin) << dtype_name(from);
    EXPECT_EQ(g.to(kI32).to_vector<int32_t>()[2], kMin32) << dtype_name(from);
    EXPECT_EQ(g.to(kU8).to_vector<int64_t>()[1], 0) << dtype_name(from);
  }
  // The edges of int64 and int32.
  Tensor e = tensor(
      {9223372036854775808.0, -9223372036854775808.0, 2147483648.0, -2147483649.0, -2147483648.5},
      kF64);
  EXPECT_EQ(e.to(kI64).to_vector<int64_t>(),
            (std::vector<int64_t>{kMin, kMin, 2147483648, -2147483649, -2147483648}));
  EXPECT_EQ(e.to(kI32).to_vector<int32_t>(),
            (std::vector<int32_t>{kMin32, kMin32, kMin32, kMin32, kMin32}));
  // float64 -> uint8 wraps the int64 result (torch's kernel does), other narrow casts the int32
  // one: -2147483649.0 is 255 as uint8 but 0 as int8.
  EXPECT_EQ(e.to(kU8).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 255, 0}));
  EXPECT_EQ(e.to(kI8).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(e.to(kF32).to(kU8).to_vector<int64_t>()[3], 0);
}

TEST(HostileIntegers, ItemIsACheckedConversion) {
  EXPECT_ERROR(scalar_tensor(1e10).item<int32_t>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(kNaN, kF32).item<int64_t>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(kInf, kF64).item<int16_t>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(-1, kI64).item<uint8_t>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(kMax, kI64).item<int32_t>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(1e300, kF64).item<float>(), DTypeError, "item");
  EXPECT_ERROR(scalar_tensor(70000.0, kF32).item<Half>(), DTypeError, "item");
  EXPECT_ERROR(zeros({2}).item<float>(), ValueError, "item");
  EXPECT_EQ(scalar_tensor(1.9, kF32).item<int32_t>(), 1);
  EXPECT_EQ(scalar_tensor(-1.9, kF64).item<int64_t>(), -1);
  EXPECT_TRUE(std::isinf(scalar_tensor(kInf, kF64).item<float>()));
  EXPECT_TRUE(std::isnan(scalar_tensor(kNaN, kF64).item<float>()));
  EXPECT_TRUE(scalar_tensor(kNaN, kF64).item<bool>());
  EXPECT_EQ(scalar_tensor(255, kI64).item<uint8_t>(), 255);
  EXPECT_EQ(scalar_tensor(kMin, kI64).item<double>(), -9223372036854775808.0);
  EXPECT_EQ(scalar_tensor(int64_t(-3), kI8).item<int64_t>(), -3);
}

TEST(HostileIntegers, FillValuesMustFitTheDtype) {
  EXPECT_ERROR(full({2}, 1e30, {kI32}), DTypeError, "full");
  EXPECT_ERROR(full({2}, 300, {kU8}), DTypeError, "full");
  EXPECT_ERROR(full({2}, -1, {kU8}), DTypeError, "full");
  EXPECT_ERROR(full({2}, kNaN, {kI64}), DTypeError, "full");
  EXPECT_ERROR(full({2}, kInf, {kI16}), DTypeError, "full");
  EXPECT_ERROR(full({2}, 1e300, {kF32}), DTypeError, "full");
  EXPECT_ERROR(full({2}, 70000, {kF16}), DTypeError, "full");
  EXPECT_ERROR(zeros({2}, {kI32}).fill_(1e10), DTypeError, "fill_");
  EXPECT_ERROR(zeros({2}, {kI8}).fill_(128), DTypeError, "fill_");
  EXPECT_EQ(full({2}, kInf, {kF32}).to_vector<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(full({1}, 1.9, {kI32}).item<int32_t>(), 1);  // truncation, as torch
  EXPECT_EQ(full({1}, -128, {kI8}).item<int64_t>(), -128);
  EXPECT_EQ(full({1}, 1e300, {kBool}).item<bool>(), true);
  EXPECT_ERROR(arange(0.0, kNaN), ValueError, "arange");
}
