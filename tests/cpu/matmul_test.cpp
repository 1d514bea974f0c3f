// The cpu backend's matrix products against flex's: shapes the goldens miss (large, skinny,
// batched, broadcast), views that must reach oneDNN as strides (no copy), and every fallback.
#include "cpu_test_util.h"

namespace ember::test {
namespace {

namespace F = nn::functional;

Tensor mm_of(const std::vector<Tensor>& t) { return mm(t[0], t[1]); }
Tensor matmul_of(const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }

TEST(CpuMatmul, LargeAndSkinnyShapes) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (Mnk s : {Mnk{256, 256, 256}, Mnk{1, 1024, 512}, Mnk{1000, 7, 3}, Mnk{7, 1, 1000},
                Mnk{4096, 16, 16}, Mnk{33, 17, 65}, Mnk{16, 512, 784}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    expect_same(mm_of, {rnd({s.m, s.k}), rnd({s.k, s.n})}, true, 1e-4, 1e-4 * double(s.k));
  }
}

TEST(CpuMatmul, TransposedViewsAreStridesNotCopies) {
  const int64_t copies = cpu::dnnl_stats().operand_copies;
  // a^T, b^T and both: column-major oneDNN operands.
  expect_same([](auto& t) { return mm(t[0].t(), t[1]); }, {rnd({40, 30}), rnd({40, 20})}, true);
  expect_same([](auto& t) { return mm(t[0], t[1].t()); }, {rnd({30, 40}), rnd({20, 40})}, true);
  expect_same([](auto& t) { return mm(t[0].t(), t[1].t()); }, {rnd({40, 30}), rnd({20, 40})}, true);
  // A padded leading dim (a column slice) and a permuted batch.
  expect_same([](auto& t) { return mm(t[0].narrow(1, 3, 40), t[1]); },
              {rnd({30, 50}), rnd({40, 20})}, true);
  expect_same(
      [](auto& t) {
        return matmul(t[0].permute({1, 0, 2}), t[1]);
      },
      {rnd({5, 3, 6}), rnd({3, 6, 4})}, true);
  if (cpu::dnnl_available()) EXPECT_EQ(cpu::dnnl_stats().operand_copies, copies);
}

TEST(CpuMatmul, MatrixWithoutUnitStrideIsCopied) {
  const int64_t copies = cpu::dnnl_stats().operand_copies;
  // Every other column: neither stride is 1.
  expect_same([](auto& t) { return mm(t[0].slice(1, 0, 40, 2), t[1]); },
              {rnd({30, 40}), rnd({20, 20})}, true);
  if (cpu::dnnl_available()) EXPECT_EQ(cpu::dnnl_stats().operand_copies, copies + 1);
}

TEST(CpuMatmul, BatchedAndBroadcast) {
  expect_same(matmul_of, {rnd({2, 1, 5, 6}), rnd({3, 6, 4})}, true);  // both broadcast
  expect_same(matmul_of, {rnd({4, 5, 6}), rnd({6, 7})}, true);        // folds into one GEMM
  expect_same(matmul_of, {rnd({5, 6}), rnd({3, 6, 4})}, true);        // a broadcast
  expect_same(
      [](auto& t) {
        return matmul(t[0].expand({3, 5, 6}), t[1]);
      },
      {rnd({1, 5, 6}), rnd({3, 6, 4})}, true);  // a stride-0 batch dim
  expect_same([](auto& t) { return bmm(t[0], t[1].transpose(1, 2)); },
              {rnd({3, 5, 6}), rnd({3, 4, 6})}, true);
  // Batch dims on a that do not fold (a permuted view): a batched primitive.
  expect_same(
      [](auto& t) {
        return matmul(t[0].permute({1, 0, 2}), t[1]);
      },
      {rnd({5, 4, 6}), rnd({6, 7})}, true);
  expect_same(matmul_of, {rnd({2, 3, 4, 5, 6}), rnd({2, 1, 1, 6, 3})}, true);
}

TEST(CpuMatmul, VectorOperands) {
  expect_same(matmul_of, {rnd({6}), rnd({6, 4})}, true);
  expect_same(matmul_of, {rnd({5, 6}), rnd({6})}, true);
  expect_same(matmul_of, {rnd({6}), rnd({6})}, true);
  expect_same(matmul_of, {rnd({3, 5, 6}), rnd({6})}, true);
  expect_same(matmul_of, {rnd({6}), rnd({3, 6, 4})}, true);
}

TEST(CpuMatmul, Linear) {
  auto lin = [](auto& t) { return linear(t[0], t[1], t[2]); };
  expect_same(lin, {rnd({8, 16}), rnd({32, 16}), rnd({32})}, true);
  expect_same(lin, {rnd({2, 3, 16}), rnd({32, 16}), rnd({32})}, true);
  expect_same(lin, {rnd({16}), rnd({32, 16}), rnd({32})}, true);
  expect_same(lin, {rnd({8, 16}), rnd({16}), rnd({1})}, true);  // 1-D weight
  expect_same(lin, {rnd({8, 16}), rnd({32, 16}), rnd({1, 32})}, true);
  expect_same(lin, {rnd({8, 16}), rnd({32, 16}), rnd({8, 32})}, true);  // a full bias
  expect_same(lin, {rnd({8, 16}), rnd({32, 16}), Tensor()}, true);
  expect_same([](auto& t) { return linear(t[0].t(), t[1], t[2]); },
              {rnd({16, 8}), rnd({32, 16}), rnd({32})}, true);
  expect_same([](auto& t) { return linear(t[0], t[1].t(), t[2]); },  // a transposed weight
              {rnd({8, 16}), rnd({16, 32}), rnd({32})}, true);
}

TEST(CpuMatmul, OtherDtypesFallBack) {
  // f64 and integers run flex's kernels; f16/bf16 reach oneDNN through flex's cast to f32.
  expect_same(mm_of, {rnd({20, 30}, DType::F64), rnd({30, 10}, DType::F64)}, false, 1e-12, 1e-12);
  for (DType dt : {DType::I32, DType::I64, DType::I16}) {
    Tensor a = (rnd({20, 30}) * 10).to(dt), b = (rnd({30, 10}) * 10).to(dt);
    expect_same(mm_of, {a, b}, false, 0, 0);
  }
  for (DType dt : {DType::F16, DType::BF16})
    expect_same(mm_of, {rnd({20, 30}, dt), rnd({30, 10}, dt)}, true, 1e-2, 1e-2);
}

TEST(CpuMatmul, EmptyShapesFallBack) {
  expect_same(mm_of, {rnd({0, 5}), rnd({5, 4})}, false);
  expect_same(mm_of, {rnd({3, 0}), rnd({0, 4})}, false);  // K = 0: zeros
  auto lin = [](auto& t) { return linear(t[0], t[1], t[2]); };
  expect_same(lin, {rnd({3, 0}), rnd({4, 0}), rnd({4})}, false);  // the bias alone
}

TEST(CpuMatmul, GradientsMatchFlex) {
  // The VJP rules of matmul and linear run matmuls of transposed cotangents: they reach oneDNN.
  std::vector<Tensor> in = {rnd({4, 3, 8}), rnd({16, 8}), rnd({16})};
  auto grads = [&](Device d) {
    Device ad = d.autodiff();
    Tensor x = in[0].to(ad).requires_grad_(), w = in[1].to(ad).requires_grad_();
    Tensor b = in[2].to(ad).requires_grad_();
    Tensor y = linear(x, w, b).relu();
    Gradients g = (y * y).sum().backward();
    return std::vector<Tensor>{x.grad(g), w.grad(g), b.grad(g)};
  };
  auto gf = grads(Device::flex()), gc = grads(Device::cpu());
  for (size_t i = 0; i < gf.size(); ++i) EXPECT_EQ(mismatch(gc[i], gf[i], 1e-4, 1e-4), "") << i;
}

}  // namespace
}  // namespace ember::test
