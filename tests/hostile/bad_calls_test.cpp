// A few hundred bad calls through the public API: wrong shapes, dtypes, devices, indices,
// overflowing sizes, NaN/inf arguments, empty tensors and integer extremes. Each must throw
// exactly the documented ember::Error subclass with a message naming the op (docs/errors.md).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "hostile/expect_error.h"

using namespace ember;
namespace F = nn::functional;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

using Unary = Tensor (*)(const Tensor&);
struct NamedUnary {
  const char* name;
  Unary fn;
};
#define EMBER_U(n) \
  NamedUnary { #n, static_cast < Unary>(&ember::n) }
const NamedUnary kUnary[] = {
    EMBER_U(neg),       EMBER_U(abs),         EMBER_U(sign),        EMBER_U(exp),
    EMBER_U(exp2),      EMBER_U(expm1),       EMBER_U(log),         EMBER_U(log2),
    EMBER_U(log10),     EMBER_U(log1p),       EMBER_U(sqrt),        EMBER_U(rsqrt),
    EMBER_U(square),    EMBER_U(reciprocal),  EMBER_U(sin),         EMBER_U(cos),
    EMBER_U(tan),       EMBER_U(asin),        EMBER_U(acos),        EMBER_U(atan),
    EMBER_U(sinh),      EMBER_U(cosh),        EMBER_U(tanh),        EMBER_U(asinh),
    EMBER_U(acosh),     EMBER_U(atanh),       EMBER_U(erf),         EMBER_U(erfinv),
    EMBER_U(floor),     EMBER_U(ceil),        EMBER_U(round),       EMBER_U(trunc),
    EMBER_U(sigmoid),   EMBER_U(relu),        EMBER_U(silu),        EMBER_U(mish),
    EMBER_U(hardswish), EMBER_U(hardsigmoid), EMBER_U(logical_not), EMBER_U(bitwise_not),
    EMBER_U(isnan),     EMBER_U(isinf),       EMBER_U(isfinite)};
#undef EMBER_U

using Binary = Tensor (*)(const Tensor&, const Tensor&);
struct NamedBinary {
  const char* name;
  Binary fn;
};
#define EMBER_B(n) \
  NamedBinary { #n, static_cast < Binary>(&ember::n) }
const NamedBinary kBinary[] = {EMBER_B(add),
                               EMBER_B(sub),
                               EMBER_B(mul),
                               EMBER_B(div),
                               EMBER_B(remainder),
                               EMBER_B(fmod),
                               EMBER_B(pow),
                               EMBER_B(atan2),
                               EMBER_B(maximum),
                               EMBER_B(minimum),
                               EMBER_B(eq),
                               EMBER_B(ne),
                               EMBER_B(lt),
                               EMBER_B(le),
                               EMBER_B(gt),
                               EMBER_B(ge),
                               EMBER_B(logical_and),
                               EMBER_B(logical_or),
                               EMBER_B(logical_xor),
                               EMBER_B(bitwise_and),
                               EMBER_B(bitwise_or),
                               EMBER_B(bitwise_xor),
                               EMBER_B(bitwise_left_shift),
                               EMBER_B(bitwise_right_shift)};
#undef EMBER_B
}  // namespace

TEST(HostileCalls, UnaryOpsRefuseUndefinedInputs) {
  for (const auto& u : kUnary) EXPECT_ERROR(u.fn(Tensor()), ValueError, u.name);
}

TEST(HostileCalls, UnaryOpsTakeEmptyAndExtremeInputs) {
  for (const auto& u : kUnary) {
    if (std::string(u.name) == "bitwise_not") continue;
    Tensor e = u.fn(zeros({0, 3}));
    EXPECT_EQ(e.shape(), Shape({0, 3}));
    Tensor x = tensor({kNaN, kInf, -kInf, 0.0, -0.0, 1e308}, kF64);
    EXPECT_EQ(u.fn(x).numel(), 6);  // no error, no UB: NaN/inf are values
  }
  EXPECT_ERROR(bitwise_not(ones({2})), DTypeError, "bitwise_not");
  EXPECT_ERROR(neg(ones({2}, {kBool})), DTypeError, "neg");
}

TEST(HostileCalls, BinaryOpsRefuseBadOperands) {
  for (const auto& b : kBinary) {
    EXPECT_ERROR(b.fn(Tensor(), ones({2})), ValueError, b.name);
    EXPECT_ERROR(b.fn(ones({2}), Tensor()), ValueError, b.name);
    EXPECT_ERROR(b.fn(ones({2, 3}), ones({4, 3})), ShapeError, b.name);
    EXPECT_ERROR(b.fn(ones({2}), ones({2}, {.device = Device::cpu()})), DeviceError, b.name);
    // Broadcast views of 2^30 x 1 and 1 x 2^30 int64 ones: the result would hold 2^60.
    Tensor tall = ones({1, 1}, {kI64}).expand({int64_t(1) << 30, 1});
    EXPECT_ERROR(b.fn(tall, tall.t()), ValueError, b.name);
  }
  for (const char* n :
       {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}) {
    for (const auto& b : kBinary)
      if (std::string(b.name) == n) EXPECT_ERROR(b.fn(ones({2}), ones({2})), DTypeError, n);
  }
  EXPECT_ERROR(sub(ones({2}, {kBool}), ones({2}, {kBool})), DTypeError, "sub");
  EXPECT_ERROR(div(ones({2}), ones({2}), "round"), ValueError, "div");
  EXPECT_ERROR(where(ones({2}), ones({2}), ones({2})), DTypeError, "where");
  EXPECT_ERROR(where(ones({2}, {kBool}), ones({3}), ones({2})), ShapeError, "where");
  EXPECT_ERROR(clamp(ones({2}), std::nullopt, std::nullopt), ValueError, "clamp");
  EXPECT_ERROR(lerp(ones({2}, {kI64}), ones({2}, {kI64}), 0.5), DTypeError, "lerp");
  EXPECT_ERROR(addcdiv(ones({2}, {kI64}), ones({2}, {kI64}), ones({2}, {kI64})), DTypeError,
               "addcdiv");
}

TEST(HostileCalls, ReductionsCheckDims) {
  Tensor x = ones({2, 3});
  EXPECT_ERROR(sum(x, {2}), IndexError, "sum");
  EXPECT_ERROR(sum(x, {kMin}), IndexError, "sum");
  EXPECT_ERROR(sum(x, {kMax}), IndexError, "sum");
  EXPECT_ERROR(sum(x, {0, 0}), ValueError, "sum");
  EXPECT_ERROR(mean(x, {-3}), IndexError, "mean");
  EXPECT_ERROR(amax(x, {5}), IndexError, "amax");
  EXPECT_ERROR(amin(x, {1, -1}), ValueError, "amin");
  EXPECT_ERROR(prod(x, 2), IndexError, "prod");
  EXPECT_ERROR(argmax(x, 2), IndexError, "argmax");
  EXPECT_ERROR(argmin(x, kMin), IndexError, "argmin");
  EXPECT_ERROR(var(x, {3}), IndexError, "var");
  EXPECT_ERROR(ember::std(x, {3}), IndexError, "std");
  EXPECT_ERROR(logsumexp(x, {3}), IndexError, "logsumexp");
  EXPECT_ERROR(norm(x, 2, {3}), IndexError, "norm");
  EXPECT_ERROR(any(x, {9}), IndexError, "any");
  EXPECT_ERROR(all(x, {9}), IndexError, "all");
  EXPECT_ERROR(count_nonzero(x, {9}), IndexError, "count_nonzero");
  EXPECT_ERROR(cumsum(x, 2), IndexError, "cumsum");
  EXPECT_ERROR(cumprod(x, kMax), IndexError, "cumprod");
  EXPECT_ERROR(cummax(x, -3), IndexError, "cummax");
  EXPECT_ERROR(cummin(x, 7), IndexError, "cummin");
  EXPECT_ERROR(sort(x, 2), IndexError, "sort");
  EXPECT_ERROR(argsort(x, -3), IndexError, "argsort");
  EXPECT_ERROR(max(x, 4), IndexError, "max");
  EXPECT_ERROR(min(x, -4), IndexError, "min");
  EXPECT_ERROR(median(x, 2), IndexError, "median");
  EXPECT_ERROR(topk(x, 4), IndexError, "topk");
  EXPECT_ERROR(topk(x, kMax), IndexError, "topk");
  EXPECT_ERROR(topk(x, -1), IndexError, "topk");
  EXPECT_ERROR(kthvalue(x, 0), IndexError, "kthvalue");
  EXPECT_ERROR(kthvalue(x, kMax), IndexError, "kthvalue");
  EXPECT_ERROR(kthvalue(x, kMin), IndexError, "kthvalue");
  EXPECT_ERROR(sum(Tensor()), ValueError, "sum");
  EXPECT_ERROR(mean(Tensor()), ValueError, "mean");
  EXPECT_ERROR(amax(Tensor()), ValueError, "amax");
  EXPECT_ERROR(max(Tensor()), ValueError, "max");
  EXPECT_ERROR(cumsum(Tensor(), 0), ValueError, "cumsum");
  EXPECT_ERROR(sort(Tensor()), ValueError, "sort");
}

TEST(HostileCalls, ReductionsOfEmptyTensors) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(sum(e).item<float>(), 0);
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
  EXPECT_EQ(prod(e).item<float>(), 1);
  EXPECT_EQ(sum(e, {0}).shape(), Shape({3}));
  EXPECT_ERROR(amax(e), IndexError, "amax");
  EXPECT_ERROR(max(e), IndexError, "max");
  EXPECT_ERROR(min(e), IndexError, "min");
  EXPECT_ERROR(argmax(e), IndexError, "argmax");
  EXPECT_ERROR(max(e, 0), IndexError, "max");
  EXPECT_TRUE(std::isnan(median(e).item<float>()));  // as torch
  EXPECT_ERROR(median(e, 0), IndexError, "median");
  EXPECT_EQ(std::get<0>(max(e, 1)).shape(), Shape({0}));
}

TEST(HostileCalls, IndexingChecksEveryIndex) {
  Tensor x = arange(6.0).reshape({2, 3});
  for (int64_t bad : {int64_t(2), int64_t(-3), kMax, kMin}) {
    EXPECT_ERROR(index_select(x, 0, tensor({bad})), IndexError, "index_select");
    EXPECT_ERROR(gather(x, 0, tensor({bad, int64_t(0), int64_t(0)}).reshape({1, 3})), IndexError,
                 "gather");
    // 6 and -9 are past either end of the 6 elements; the extremes themselves stay as they are.
    int64_t flat = bad == kMax || bad == kMin ? bad : bad * 3;
    EXPECT_ERROR(take(x, tensor({flat})), IndexError, "take");
    EXPECT_ERROR(F::embedding(tensor({bad}), x), IndexError, "embedding");
    EXPECT_ERROR(scatter(x, 0, tensor({bad, int64_t(0), int64_t(0)}).reshape({1, 3}), 1.0),
                 IndexError, "scatter");
    EXPECT_ERROR(index_add(x, 0, tensor({bad}), ones({1, 3})), IndexError, "index_add");
    EXPECT_ERROR(index_put(x, {tensor({bad})}, scalar_tensor(1.0f)), IndexError, "index_put");
  }
  EXPECT_ERROR(index_select(x, 0, tensor({0.5f})), DTypeError, "index_select");
  EXPECT_ERROR(gather(x, 0, ones({1, 3})), DTypeError, "gather");
  EXPECT_ERROR(index_select(x, 2, tensor({0})), IndexError, "index_select");
  EXPECT_ERROR(index_select(x, 0, Tensor()), ValueError, "index_select");
  EXPECT_ERROR(gather(x, 0, tensor({0}).reshape({1, 1, 1})), ShapeError, "gather");
  EXPECT_ERROR(masked_fill(x, ones({2, 3}), 0.0), DTypeError, "masked_fill");
  EXPECT_ERROR(masked_fill(x, ones({4}, {kBool}), 0.0), ShapeError, "masked_fill");
  EXPECT_ERROR(masked_select(x, ones({3, 3}, {kBool})), ShapeError, "masked_select");
  EXPECT_ERROR(index_put(x, {tensor({0}), tensor({0}), tensor({0})}, scalar_tensor(1.0f)),
               IndexError, "index_put");
  EXPECT_ERROR(one_hot(tensor({0, 5}), 3), IndexError, "one_hot");
  EXPECT_ERROR(one_hot(tensor({0, -1}), 3), IndexError, "one_hot");
  EXPECT_ERROR(one_hot(tensor({0}), -2), ValueError, "one_hot");
  EXPECT_ERROR(one_hot(tensor({0}), kMax), ValueError, "one_hot");
  EXPECT_ERROR(one_hot(ones({2}), 3), DTypeError, "one_hot");
  EXPECT_ERROR(x[2], IndexError, "select");
  EXPECT_ERROR(x[kMin], IndexError, "select");
  EXPECT_ERROR(scalar_tensor(1.0)[0], IndexError, "select");
}

TEST(HostileCalls, ShapeAndViewOps) {
  Tensor x = ones({2, 3});
  EXPECT_ERROR(x.reshape({4, -1}), ShapeError, "reshape");
  EXPECT_ERROR(x.reshape({-1, -1}), ShapeError, "reshape");
  EXPECT_ERROR(x.reshape({-2, 3}), ShapeError, "reshape");
  EXPECT_ERROR(x.t().view({6}), ShapeError, "view");
  EXPECT_ERROR(x.permute({0}), ShapeError, "permute");
  EXPECT_ERROR(x.permute({0, 0}), ValueError, "permute");
  EXPECT_ERROR(x.permute({0, 2}), IndexError, "permute");
  EXPECT_ERROR(x.transpose(0, 2), IndexError, "transpose");
  EXPECT_ERROR(movedim(x, {0}, {0, 1}), ValueError, "movedim");
  EXPECT_ERROR(movedim(x, {0, 0}, {0, 1}), ValueError, "movedim");
  EXPECT_ERROR(x.squeeze(2), IndexError, "squeeze");
  EXPECT_ERROR(x.unsqueeze(3), IndexError, "unsqueeze");
  EXPECT_ERROR(x.expand({3}), ShapeError, "expand");
  EXPECT_ERROR(x.expand({4, 3}), ShapeError, "expand");
  EXPECT_ERROR(x.expand({-1, -1, 3}), ShapeError, "expand");
  EXPECT_ERROR(x.expand({2, -2}), ShapeError, "expand");
  EXPECT_ERROR(x.flatten(1, 0), ValueError, "flatten");
  EXPECT_ERROR(x.flatten(0, 5), IndexError, "flatten");
  EXPECT_ERROR(unflatten(x, 1, {2, 2}), ShapeError, "unflatten");
  EXPECT_ERROR(unflatten(x, 1, {}), ValueError, "unflatten");
  EXPECT_ERROR(x.diagonal(0, 0, 0), ValueError, "diagonal");
  EXPECT_ERROR(ones({3}).diagonal(), ShapeError, "diagonal");
  EXPECT_ERROR(scalar_tensor(1.0).slice(0, 0, 1), IndexError, "slice");
  EXPECT_ERROR(scalar_tensor(1.0).narrow(0, 0, 1), IndexError, "narrow");
  EXPECT_ERROR(x.t().t().t().reshape({kMax}), ShapeError, "reshape");
  EXPECT_ERROR(ones(Shape(16, 1)).unsqueeze(0), ShapeError, "unsqueeze");
  EXPECT_ERROR(reshape(Tensor(), {1}), ValueError, "reshape");
  EXPECT_ERROR(Tensor().shape(), ValueError, "shape");
  EXPECT_ERROR(Tensor().numel(), ValueError, "numel");
  EXPECT_ERROR(x.size(2), IndexError, "size");
  EXPECT_ERROR(x.stride(kMin), IndexError, "stride");
  EXPECT_ERROR(ones({2, 3, 4}).t(), ShapeError, "t");
}

TEST(HostileCalls, LayoutOps) {
  Tensor x = ones({2, 3});
  EXPECT_ERROR(cat({}), ValueError, "cat");
  EXPECT_ERROR(cat({x, ones({2, 4})}), ShapeError, "cat");
  EXPECT_ERROR(cat({x, ones({2, 3, 1})}), ShapeError, "cat");
  EXPECT_ERROR(cat({x, scalar_tensor(1.0f)}), ShapeError, "cat");
  EXPECT_ERROR(cat({x, x}, 2), IndexError, "cat");
  EXPECT_ERROR(cat({x, Tensor()}), ValueError, "cat");
  EXPECT_ERROR(cat({x, ones({2, 3}, {.device = Device::cpu()})}), DeviceError, "cat");
  EXPECT_ERROR(stack({}), ValueError, "stack");
  EXPECT_ERROR(stack({x, ones({3, 2})}), ShapeError, "stack");
  EXPECT_ERROR(stack({x, x}, 3), IndexError, "stack");
  EXPECT_ERROR(split(x, -1), ValueError, "split");
  EXPECT_ERROR(split(x, 0), ValueError, "split");
  EXPECT_ERROR(split(x, {1, 2}, 0), ShapeError, "split");
  EXPECT_ERROR(split(x, {-1, 3}, 0), ValueError, "split");
  EXPECT_ERROR(chunk(x, 0), ValueError, "chunk");
  EXPECT_ERROR(chunk(x, kMin), ValueError, "chunk");
  EXPECT_ERROR(unbind(scalar_tensor(1.0)), IndexError, "unbind");
  EXPECT_ERROR(unbind(x, 2), IndexError, "unbind");
  EXPECT_ERROR(repeat(x, {2}), ShapeError, "repeat");
  EXPECT_ERROR(repeat(x, {-1, 1}), ValueError, "repeat");
  EXPECT_ERROR(repeat(x, {kMax, 2}), ValueError, "repeat");
  EXPECT_ERROR(repeat(x, {int64_t(1) << 40, int64_t(1) << 40}), ValueError, "repeat");
  EXPECT_ERROR(tile(x, {kMax}), ValueError, "tile");
  EXPECT_ERROR(repeat_interleave(x, -1), ValueError, "repeat_interleave");
  EXPECT_ERROR(repeat_interleave(x, kMax, 0), ValueError, "repeat_interleave");
  EXPECT_ERROR(repeat_interleave(x, tensor({1, -1}), 0), ValueError, "repeat_interleave");
  EXPECT_ERROR(repeat_interleave(x, tensor({1, 2}), 1), ShapeError, "repeat_interleave");
  EXPECT_ERROR(repeat_interleave(x, tensor({kMax, kMax, int64_t(1)}), 1), ValueError,
               "repeat_interleave");
  EXPECT_ERROR(flip(x, {0, 0}), ValueError, "flip");
  EXPECT_ERROR(flip(x, {2}), IndexError, "flip");
  EXPECT_ERROR(roll(x, {1, 2}, {0}), ValueError, "roll");
  EXPECT_ERROR(roll(x, {1}, {3}), IndexError, "roll");
  EXPECT_EQ(roll(x, {kMax}, {1}).shape(), x.shape());
  EXPECT_EQ(roll(x, {kMin}, {1}).shape(), x.shape());
  EXPECT_EQ(roll(zeros({0, 3}), {kMax}, {0}).numel(), 0);
  EXPECT_ERROR(tril(ones({3})), ShapeError, "tril");
  EXPECT_ERROR(triu(scalar_tensor(1.0)), ShapeError, "triu");
  EXPECT_EQ(tril(x, kMax).sum().item<float>(), 6);
  EXPECT_EQ(triu(x, kMin).sum().item<float>(), 6);
  EXPECT_EQ(tril(x, kMin).sum().item<float>(), 0);
  EXPECT_ERROR(pad(x, {1}), ValueError, "pad");
  EXPECT_ERROR(pad(x, {1, 1}, "mirror"), ValueError, "pad");
  EXPECT_ERROR(pad(x, {kMax, 1}), ValueError, "pad");
  EXPECT_ERROR(pad(x, {kMin, 1}), ShapeError, "pad");
  EXPECT_ERROR(pad(x, {5, 5}, "reflect"), ValueError, "pad");
  EXPECT_ERROR(meshgrid({}), ValueError, "meshgrid");
  EXPECT_ERROR(meshgrid({x}), ShapeError, "meshgrid");
  EXPECT_ERROR(meshgrid({ones({2})}, "yx"), ValueError, "meshgrid");
}

TEST(HostileCalls, CreationArguments) {
  EXPECT_ERROR(arange(0, 10, 0), ValueError, "arange");
  EXPECT_ERROR(arange(0.0, 1.0, 0.0), ValueError, "arange");
  EXPECT_ERROR(arange(10, 0, 1), ValueError, "arange");
  EXPECT_ERROR(arange(0.0, kInf), ValueError, "arange");
  EXPECT_ERROR(arange(-kInf, 0.0), ValueError, "arange");
  EXPECT_ERROR(arange(0.0, 1.0, kNaN), ValueError, "arange");
  EXPECT_ERROR(arange(kMin, kMax, 1), ValueError, "arange");
  EXPECT_ERROR(linspace(0, 1, -1), ValueError, "linspace");
  EXPECT_ERROR(linspace(0, 1, kMax), ValueError, "linspace");
  EXPECT_ERROR(eye(-1), ValueError, "eye");
  EXPECT_ERROR(eye(2, -1), ValueError, "eye");
  EXPECT_ERROR(eye(kMax), ValueError, "eye");
  EXPECT_ERROR(zeros({-1}), ValueError, "zeros");
  EXPECT_ERROR(ones({2, kMin}), ValueError, "ones");
  EXPECT_ERROR(empty({kMax, kMax}), ValueError, "empty");
  EXPECT_ERROR(full({-3}, 1.0), ValueError, "full");
  EXPECT_ERROR(zeros_like(Tensor()), ValueError, "zeros_like");
  EXPECT_ERROR(ones_like(Tensor()), ValueError, "ones_like");
  EXPECT_ERROR(full_like(Tensor(), 2), ValueError, "full_like");
  EXPECT_ERROR(rand({2}, {kI64}), DTypeError, "rand");
  EXPECT_ERROR(randn({2}, {kBool}), DTypeError, "randn");
  EXPECT_ERROR(rand_like(ones({2}, {kI32})), DTypeError, "rand_like");
  EXPECT_ERROR(randint(5, 5, {2}), ValueError, "randint");
  EXPECT_ERROR(randint(kMax, kMin, {2}), ValueError, "randint");
  EXPECT_ERROR(normal(0, -1, {2}), ValueError, "normal");
  EXPECT_ERROR(normal(0, kNaN, {2}), ValueError, "normal");
  EXPECT_ERROR(normal(kNaN, 1, {2}), ValueError, "normal");
  EXPECT_ERROR(normal(0, kInf, {2}), ValueError, "normal");
  EXPECT_ERROR(uniform(1, 0, {2}), ValueError, "uniform");
  EXPECT_ERROR(uniform(kNaN, 1, {2}), ValueError, "uniform");
  EXPECT_ERROR(uniform(0, kInf, {2}), ValueError, "uniform");
  EXPECT_ERROR(bernoulli(full({2}, kNaN)), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(full({2}, 1.5)), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(full({2}, -0.5, {kF64})), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(ones({2}), kNaN), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(ones({2}), 2.0), ValueError, "bernoulli");
  EXPECT_ERROR(bernoulli(ones({2}, {kI64})), DTypeError, "bernoulli");
  EXPECT_ERROR(tensor(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError, "tensor");
  EXPECT_ERROR(tensor(std::vector<float>{1, 2}, {-1, -2}), ValueError, "tensor");
  EXPECT_ERROR(dtype_from_name("float128"), ValueError, "dtype");
}

TEST(HostileCalls, Devices) {
  EXPECT_ERROR(zeros({2}, {.device = Device::cuda(0)}), DeviceError, "Device::cuda");
  EXPECT_ERROR(ones({2}).to(Device::cuda(-1)), DeviceError, "Device::cuda");
  EXPECT_ERROR(Device::remote("wss://localhost:1"), DeviceError, "Device::remote");
  EXPECT_ERROR(matmul(ones({2, 2}), ones({2, 2}, {.device = Device::cpu()})), DeviceError,
               "matmul");
  EXPECT_ERROR(where(ones({2}, {kBool}), ones({2}), ones({2}, {.device = Device::cpu()})),
               DeviceError, "where");
  EXPECT_ERROR(F::conv2d(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}, {.device = Device::cpu()})),
               DeviceError, "conv2d");
  EXPECT_ERROR(index_select(ones({3}), 0, tensor({0}).to(Device::cpu())), DeviceError,
               "index_select");
}

TEST(HostileCalls, Linalg) {
  EXPECT_ERROR(mm(ones({2, 3}), ones({4, 2})), ShapeError, "mm");
  EXPECT_ERROR(mm(ones({2}), ones({2, 2})), ShapeError, "mm");
  EXPECT_ERROR(bmm(ones({2, 2, 3}), ones({3, 3, 2})), ShapeError, "bmm");
  EXPECT_ERROR(matmul(scalar_tensor(1.0f), ones({2})), ShapeError, "matmul");
  EXPECT_ERROR(matmul(ones({2, 3}), ones({2, 3})), ShapeError, "matmul");
  EXPECT_ERROR(matmul(ones({5, 2, 3}), ones({4, 3, 2})), ShapeError, "matmul");
  EXPECT_ERROR(matmul(ones({2, 2}), ones({2, 2}, {kF64})), DTypeError, "matmul");
  EXPECT_ERROR(matmul(ones({2, 2}), Tensor()), ValueError, "matmul");
  EXPECT_ERROR(linear(ones({2, 3}), ones({4, 2})), ShapeError, "linear");
  EXPECT_ERROR(linear(ones({2, 3}), ones({4, 3}), ones({5})), ShapeError, "linear");
  EXPECT_ERROR(dot(ones({2}), ones({3})), ShapeError, "dot");
  EXPECT_ERROR(dot(ones({2, 2}), ones({2, 2})), ShapeError, "dot");
  EXPECT_ERROR(outer(ones({2, 2}), ones({2})), ShapeError, "outer");
  EXPECT_ERROR(einsum("ij,jk->ik", {ones({2, 3}), ones({4, 2})}), ShapeError, "einsum");
  EXPECT_ERROR(einsum("ij,jk", {ones({2, 3})}), ValueError, "einsum");
  EXPECT_ERROR(einsum("i$->i", {ones({2, 3})}), ValueError, "einsum");
  EXPECT_ERROR(einsum("", {}), ValueError, "einsum");
  EXPECT_ERROR(einsum(std::string(100000, 'i') + "->i", {ones({2})}), ValueError, "einsum");
  EXPECT_EQ(mm(zeros({0, 3}), zeros({3, 4})).shape(), Shape({0, 4}));
  EXPECT_EQ(mm(zeros({2, 0}), zeros({0, 4})).sum().item<float>(), 0);
}

TEST(HostileCalls, NnFunctional) {
  Tensor x = ones({1, 2, 4, 4});
  EXPECT_ERROR(F::conv2d(ones({2, 4, 4}), ones({1, 2, 3, 3, 3})), ShapeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 3, 3, 3})), ShapeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.groups = 0}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.groups = kMin}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.stride = {0}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.padding = {-1}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.padding = {1, 2, 3}}), ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 9, 9})), ShapeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}, {kF64})), DTypeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), ones({2})), ShapeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x.to(kBool), ones({1, 2, 3, 3}, {kBool})), DTypeError, "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.padding_mode = "full"}), ValueError,
               "conv2d");
  EXPECT_ERROR(F::conv2d(x, ones({1, 2, 3, 3}), {}, {.stride = {2}, .padding_mode = "same"}),
               ValueError, "conv2d");
  EXPECT_ERROR(F::conv2d(Tensor(), ones({1, 2, 3, 3})), ValueError, "conv2d");
  EXPECT_ERROR(F::conv_transpose2d(x, ones({3, 1, 2, 2})), ShapeError, "conv_transpose2d");
  EXPECT_ERROR(
      F::conv_transpose2d(x, ones({2, 1, 2, 2}), {}, {.stride = {1}, .output_padding = {1}}),
      ValueError, "conv_transpose2d");
  EXPECT_ERROR(F::conv_transpose2d(x, ones({2, 1, 2, 2}), {}, {.padding = {5}}), ShapeError,
               "conv_transpose2d");
  EXPECT_ERROR(F::max_pool2d(x, {.kernel_size = {0}}), ValueError, "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(x, {.kernel_size = {2}, .padding = {2}}), ValueError, "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(x, {.kernel_size = {9}}), ShapeError, "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(ones({4}), {.kernel_size = {2}}), ShapeError, "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(x.to(kI64), {.kernel_size = {2}}), DTypeError, "max_pool2d");
  EXPECT_ERROR(F::max_pool2d(zeros({1, 2, 0, 4}), {.kernel_size = {2}}), ShapeError, "max_pool2d");
  EXPECT_ERROR(F::avg_pool2d(x, {.kernel_size = {kMin}}), ValueError, "avg_pool2d");
  EXPECT_ERROR(F::adaptive_avg_pool2d(x, {-1}), ValueError, "adaptive_avg_pool2d");
  EXPECT_ERROR(F::adaptive_avg_pool2d(x, {}), ValueError, "adaptive_avg_pool2d");
  EXPECT_ERROR(F::adaptive_max_pool2d(x, {1, 2, 3}), ValueError, "adaptive_max_pool2d");
  EXPECT_ERROR(F::interpolate(x, {.size = {2}, .mode = "cubic"}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.size = {2}, .scale_factor = {2}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.scale_factor = {kNaN}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.scale_factor = {kInf}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.scale_factor = {-2}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.size = {0}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.size = {-5}}), ValueError, "interpolate");
  EXPECT_ERROR(F::interpolate(x, {.size = {2}, .mode = "linear"}), ShapeError, "interpolate");
  EXPECT_ERROR(F::interpolate(zeros({1, 0, 4, 4}), {.size = {2}}), ShapeError, "interpolate");
  EXPECT_ERROR(F::softmax(x, 4), IndexError, "softmax");
  EXPECT_ERROR(F::log_softmax(x, kMin), IndexError, "log_softmax");
  EXPECT_ERROR(F::softmax(x.to(kI64), 1), DTypeError, "softmax");
  EXPECT_ERROR(F::layer_norm(x, {3}), ShapeError, "layer_norm");
  EXPECT_ERROR(F::layer_norm(x, {}), ShapeError, "layer_norm");
  EXPECT_ERROR(F::group_norm(x, 3), ShapeError, "group_norm");
  EXPECT_ERROR(F::group_norm(x, 0), ValueError, "group_norm");
  EXPECT_ERROR(F::dropout(x, 1.5), ValueError, "dropout");
  EXPECT_ERROR(F::dropout(x, -0.1), ValueError, "dropout");
  EXPECT_ERROR(F::dropout(x, kNaN), ValueError, "dropout");
  EXPECT_ERROR(F::embedding(tensor({0.5f}), ones({3, 2})), DTypeError, "embedding");
  EXPECT_ERROR(F::embedding(tensor({0}), ones({3})), ShapeError, "embedding");
  EXPECT_ERROR(F::embedding(tensor({0}), ones({3, 2}), 5), ValueError, "embedding");
}

TEST(HostileCalls, Losses) {
  Tensor logits = ones({2, 3});
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0, 3})), IndexError, "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({int64_t(0), kMin})), IndexError, "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0.5f, 1.0f})), ShapeError, "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0, 1, 2})), ShapeError, "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0, 1}), {.reduction = "avg"}), ValueError,
               "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0, 1}), {.label_smoothing = 2}), ValueError,
               "cross_entropy");
  EXPECT_ERROR(F::cross_entropy(logits, tensor({0, 1}), {.label_smoothing = kNaN}), ValueError,
               "cross_entropy");
  EXPECT_ERROR(F::nll_loss(logits, tensor({0, 9})), IndexError, "nll_loss");
  EXPECT_ERROR(F::mse_loss(logits, ones({3, 2})), ShapeError, "mse_loss");
  EXPECT_ERROR(F::mse_loss(logits, logits, "avg"), ValueError, "mse_loss");
  EXPECT_ERROR(F::l1_loss(logits, ones({4})), ShapeError, "l1_loss");
  EXPECT_ERROR(F::huber_loss(logits, logits, "mean", -1), ValueError, "huber_loss");
  EXPECT_ERROR(F::smooth_l1_loss(logits, logits, "mean", -1), ValueError, "smooth_l1_loss");
  EXPECT_ERROR(F::binary_cross_entropy(full({2}, 1.5), ones({2})), ValueError,
               "binary_cross_entropy");
  EXPECT_ERROR(F::binary_cross_entropy(full({2}, kNaN), ones({2})), ValueError,
               "binary_cross_entropy");
  EXPECT_ERROR(F::kl_div(logits, logits, "avg"), ValueError, "kl_div");
  EXPECT_ERROR(F::cosine_similarity(ones({2, 3}), ones({2, 4})), ShapeError, "cosine_similarity");
  EXPECT_ERROR(F::cdist(ones({2, 3}), ones({2, 4})), ShapeError, "cdist");
  EXPECT_ERROR(F::cdist(ones({2, 3}), ones({2, 3}), -1), ValueError, "cdist");
}

TEST(HostileCalls, CopyArguments) {
  Tensor x = zeros({3});
  EXPECT_ERROR(x.copy_(ones({4})), ShapeError, "copy");
  EXPECT_ERROR(x.copy_(ones({2, 3})), ShapeError, "copy");
  EXPECT_ERROR(x.copy_(Tensor()), ValueError, "copy");
  EXPECT_ERROR(Tensor().copy_(x), ValueError, "copy");
  EXPECT_EQ(sum(x).item<float>(), 0);
}

TEST(HostileCalls, ModulesAndOptimizers) {
  EXPECT_ERROR(nn::Conv2d({.in = 3, .out = 4, .kernel = 3, .groups = 2}), ValueError, "Conv2d");
  EXPECT_ERROR(nn::Conv2d({.in = 3, .out = 4, .kernel = 3, .groups = 0}), ValueError, "Conv2d");
  EXPECT_ERROR(nn::Conv2d({.in = 3, .out = 4, .kernel = {3, 3, 3}}), ValueError, "Conv2d");
  EXPECT_ERROR(nn::Linear({.in = -1, .out = 2}), ValueError, "Linear");
  EXPECT_ERROR(nn::Linear({.in = 2, .out = kMax}), ValueError, "Linear");
  EXPECT_ERROR(nn::Embedding({.num = -1, .dim = 2}), ValueError, "Embedding");
  EXPECT_ERROR(nn::Dropout(1.5), ValueError, "Dropout");
  EXPECT_ERROR(nn::Dropout(kNaN), ValueError, "Dropout");
  nn::Linear lin({.in = 3, .out = 2});
  EXPECT_ERROR(lin(ones({2, 4})), ShapeError, "linear");
  EXPECT_ERROR(lin.load_state_dict({{"weight", ones({3, 3})}, {"bias", ones({2})}}), ValueError,
               "load_state_dict");
  EXPECT_ERROR(lin.load_state_dict({{"weight", Tensor()}, {"bias", ones({2})}}), ValueError,
               "load_state_dict");
  EXPECT_ERROR(lin.load_state_dict({{"bias", ones({2})}}), ValueError, "load_state_dict");
  std::vector<Tensor> p{ones({2}).requires_grad_()};
  EXPECT_ERROR(optim::SGD(p, {.lr = -1}), ValueError, "SGD");
  EXPECT_ERROR(optim::SGD(p, {.lr = kNaN}), ValueError, "SGD");
  EXPECT_ERROR(optim::SGD(p, {.momentum = -0.5}), ValueError, "SGD");
  EXPECT_ERROR(optim::SGD(p, {.nesterov = true}), ValueError, "SGD");
  EXPECT_ERROR(optim::Adam(p, {.betas = {1.0, 0.9}}), ValueError, "Adam");
  EXPECT_ERROR(optim::Adam(p, {.betas = {0.9, kNaN}}), ValueError, "Adam");
  EXPECT_ERROR(optim::Adam(p, {.eps = -1}), ValueError, "Adam");
  EXPECT_ERROR(optim::AdamW(p, {.weight_decay = -1}), ValueError, "AdamW");
  EXPECT_ERROR(optim::RMSprop(p, {.alpha = -1}), ValueError, "RMSprop");
  EXPECT_ERROR(optim::Adagrad(p, {.lr_decay = -1}), ValueError, "Adagrad");
  EXPECT_ERROR(optim::Lion(p, {.betas = {0.9, 1.5}}), ValueError, "Lion");
  EXPECT_ERROR(optim::SGD({ones({2}, {kI64})}), ValueError, "SGD");
  EXPECT_ERROR(optim::SGD({Tensor()}), ValueError, "SGD");
  EXPECT_ERROR(optim::SGD({p[0], p[0]}), ValueError, "SGD");
  optim::SGD sgd(p, {.lr = 0.1});
  EXPECT_ERROR(optim::StepLR(sgd, 0), ValueError, "StepLR");
  EXPECT_ERROR(optim::CosineAnnealingLR(sgd, kMin), ValueError, "CosineAnnealingLR");
  EXPECT_ERROR(optim::CosineAnnealingWarmRestarts(sgd, 0), ValueError,
               "CosineAnnealingWarmRestarts");
  EXPECT_ERROR(optim::LinearLR(sgd, 0.0), ValueError, "LinearLR");
  EXPECT_ERROR(optim::LinearLR(sgd, kNaN), ValueError, "LinearLR");
  EXPECT_ERROR(optim::OneCycleLR(sgd, {.max_lr = kNaN}), ValueError, "OneCycleLR");
  EXPECT_ERROR(optim::OneCycleLR(sgd, {.total_steps = 0}), ValueError, "OneCycleLR");
  EXPECT_ERROR(optim::ExponentialLR(sgd, kNaN), ValueError, "ExponentialLR");
  EXPECT_ERROR(optim::ExponentialLR(sgd, -1), ValueError, "ExponentialLR");
  EXPECT_ERROR(optim::StepLR(sgd, 1, kNaN), ValueError, "StepLR");
  Gradients g;
  EXPECT_ERROR(optim::clip_grad_norm(g, p, kNaN), ValueError, "clip_grad_norm");
  EXPECT_ERROR(optim::clip_grad_norm(g, p, -1), ValueError, "clip_grad_norm");
  EXPECT_ERROR(optim::clip_grad_value(g, p, kNaN), ValueError, "clip_grad_value");
}
