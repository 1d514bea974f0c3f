// CUB's sorts and scans, the gather/scatter kernels and max pooling with indices on cuda:0
// against the host (flex): sort/argsort/topk bit for bit (values and indices: the sort is
// stable, NaN last ascending and first descending, -0 equal to +0) over every dtype and dim;
// cumsum/cumprod within rounding; index ops exactly (scatter-add's float atomics within
// rounding); a bad index raises IndexError at the next sync. A small convnet with max pooling
// trains on cuda:0 with max pooling and its gradient on the device.
#include <cmath>

#include "cuda/cuda_util.h"
#include "ember/backends/cuda/cudnn_ops.h"

namespace ember {
namespace {

using testing::rel_error;
const Device kHost = Device::flex();

// Element-wise equality on the host, NaN equal to NaN.
::testing::AssertionResult same(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "shapes " << shape_str(got.shape()) << " and " << shape_str(want.shape());
  if (got.dtype() != want.dtype()) return ::testing::AssertionFailure() << "dtypes differ";
  const auto g = got.to(kHost).to(DType::F64).to_vector<double>();
  const auto w = want.to(kHost).to(DType::F64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << w[i];
  return ::testing::AssertionSuccess();
}

// Values with ties, NaN and both zeros, in dtype t.
Tensor tricky(const Shape& s, DType t) {
  Tensor x = randint(-4, 5, s).to(kF32) * 0.5;
  if (is_floating(t)) {
    const Tensor r = rand(s);
    x = where(r < 0.1, full(s, double(NAN)), where(r < 0.2, full(s, -0.0), x));
  }
  if (t == DType::Bool) x = x > 0;
  if (t == DType::U8) x = abs(x) * 2;
  return x.to(t);
}

TEST(CudaSort, SortAndArgsortMatchTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  for (DType t : {kF32, kF16, kBF16, kF64, DType::I32, DType::I64, DType::I16, DType::I8, DType::U8,
                  DType::Bool})
    for (const Shape& s : {Shape{5, 37, 3}, Shape{1000}, Shape{3, 1}, Shape{}})
      for (int64_t dim = -1; dim < std::max<int64_t>(1, int64_t(s.size())); ++dim)
        for (bool desc : {false, true}) {
          const Tensor x = tricky(s, t);
          auto [vg, ig] = sort(x.to(g), dim, desc);
          auto [vh, ih] = sort(x, dim, desc);
          EXPECT_TRUE(same(vg, vh)) << dtype_name(t) << shape_str(s) << " dim " << dim << desc;
          EXPECT_TRUE(same(ig, ih)) << dtype_name(t) << shape_str(s) << " dim " << dim << desc;
          EXPECT_TRUE(same(argsort(x.to(g), dim, desc), ih)) << dtype_name(t) << shape_str(s);
        }
  EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats()[0].first;
}

TEST(CudaSort, LongAndManyLanes) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  for (const Shape& s : {Shape{1 << 20}, Shape{4096, 300}, Shape{300, 4096}})
    for (int64_t dim : {0, -1}) {
      const Tensor x = randn(s);
      auto [vg, ig] = sort(x.to(g), dim, true);
      auto [vh, ih] = sort(x, dim, true);
      EXPECT_TRUE(same(vg, vh)) << shape_str(s) << dim;
      EXPECT_TRUE(same(ig, ih)) << shape_str(s) << dim;
    }
}

TEST(CudaSort, TopkMatchesTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  for (DType t : {kF32, kBF16, kF64, DType::I64, DType::U8})
    for (int64_t k : {0, 1, 3, 17})
      for (int64_t dim : {0, 1, -1})
        for (bool largest : {true, false}) {
          const Tensor x = tricky({19, 23, 5}, t);
          const int64_t kk = std::min<int64_t>(k, x.size(dim));
          auto [vg, ig] = topk(x.to(g), kk, dim, largest, true);
          auto [vh, ih] = topk(x, kk, dim, largest, true);
          EXPECT_TRUE(same(vg, vh)) << dtype_name(t) << " k " << kk << " dim " << dim << largest;
          EXPECT_TRUE(same(ig, ih)) << dtype_name(t) << " k " << kk << " dim " << dim << largest;
        }
}

TEST(CudaScan, CumsumAndCumprodMatchTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  for (DType t : {kF32, kF64, kF16, kBF16, DType::I32, DType::I64, DType::U8, DType::Bool})
    for (const Shape& s : {Shape{4, 33, 5}, Shape{70000}, Shape{}})
      for (int64_t dim = -1; dim < std::max<int64_t>(1, int64_t(s.size())); ++dim) {
        if (t == kF16 && s.size() == 1) continue;  // 70000 sums pass f16's largest value
        Tensor x = is_floating(t) ? (rand(s) + 0.5).to(t) : randint(0, 3, s).to(t);
        if (t == DType::Bool) x = randint(0, 2, s).to(t);
        const double tl = t == kF16 ? 2e-3 : t == kBF16 ? 1e-2 : 1e-6;
        EXPECT_LT(rel_error(cumsum(x.to(g), dim), cumsum(x, dim)), tl) << dtype_name(t) << dim;
        if (s.size() == 1) continue;  // 70000 factors overflow
        EXPECT_LT(rel_error(cumprod(x.to(g), dim), cumprod(x, dim)), tl) << dtype_name(t) << dim;
      }
  // A result dtype: cast first, then scanned; integers wrap like the host's.
  Tensor xi = randint(-1000, 1000, {8, 50});
  EXPECT_TRUE(same(cumsum(xi.to(g), 1, DType::I32), cumsum(xi, 1, DType::I32)));
  EXPECT_TRUE(same(cumprod(xi.to(g), 1), cumprod(xi, 1)));
  EXPECT_LT(rel_error(cumsum(xi.to(g), 0, kF32), cumsum(xi, 0, kF32)), 1e-6);
  // NaN propagates along the lane.
  Tensor xn = tensor({1.f, NAN, 2.f});
  EXPECT_TRUE(same(cumsum(xn.to(g), 0), cumsum(xn, 0)));
  EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats()[0].first;
}

TEST(CudaIndex, GatherScatterAndIndexOpsMatchTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  for (DType t : {kF32, kBF16, kF64, DType::I64, DType::I32}) {
    const Tensor x = (randn({6, 7, 5}) * 4).to(t);
    for (int64_t dim : {0, 1, 2}) {
      const int64_t n = x.size(dim);
      // gather: an index shaped [4, 3, 2] (smaller than x).
      const Tensor gi = randint(0, n, {4, 3, 2});
      EXPECT_TRUE(same(gather(x.to(g), dim, gi.to(g)), gather(x, dim, gi))) << dtype_name(t);
      // index_select, with repeats; a strided view as input.
      const Tensor si = randint(0, n, {9});
      EXPECT_TRUE(same(index_select(x.to(g), dim, si.to(g)), index_select(x, dim, si)));
      const Tensor xt = x.transpose(0, 2);
      EXPECT_TRUE(same(index_select(xt.to(g).contiguous().transpose(0, 2), dim, si.to(g)),
                       index_select(x, dim, si)));
      // scatter_add and index_add: repeated targets add up.
      const Tensor src = (randn({4, 3, 2}) * 4).to(t);
      const double tl = t == kBF16 ? 1e-2 : 1e-6;
      EXPECT_LT(
          rel_error(scatter_add(x.to(g), dim, gi.to(g), src.to(g)), scatter_add(x, dim, gi, src)),
          tl)
          << dtype_name(t) << dim;
      Shape ss = x.shape();
      ss[size_t(dim)] = 9;
      const Tensor src2 = (randn(ss) * 4).to(t);
      EXPECT_LT(rel_error(index_add(x.to(g), dim, si.to(g), src2.to(g), 2),
                          index_add(x, dim, si, src2, 2)),
                tl)
          << dtype_name(t) << dim;
    }
  }
  EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats()[0].first;
}

TEST(CudaIndex, BadIndexRaisesAtTheSync) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  const Tensor x = randn({4, 5}).to(g);
  Tensor y = gather(x, 1, tensor(std::vector<int64_t>{0, 7, 1, 2}, {2, 2}, DType::I64, g));
  try {
    (void)y.to(kHost);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[gather]"), std::string::npos) << m;
    EXPECT_NE(m.find("index 7 is out of bounds"), std::string::npos) << m;
  }
  // The device goes on.
  EXPECT_TRUE(same(index_select(x, 0, tensor(std::vector<int64_t>{3, 0}, {2}, DType::I64, g)),
                   index_select(x.to(kHost), 0, tensor(std::vector<int64_t>{3, 0}, {2}))));
}

TEST(CudaIndex, MaxPoolWithIndicesMatchesTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  for (DType t : {kF32, kF16, kBF16}) {
    Tensor x = randn({2, 3, 11, 9}).to(t);
    x = where(rand(x.shape()) < 0.05, full(x.shape(), double(NAN)).to(t),
              x);                                                 // NaN wins and sticks
    x = where(rand(x.shape()) < 0.2, zeros(x.shape()).to(t), x);  // ties: the first
    const PoolOptions cases[] = {
        {.kernel_size = {3}, .stride = {2}, .padding = {1}},
        {.kernel_size = {2}},
        {.kernel_size = {3, 2}, .stride = {1, 2}, .padding = {1, 0}, .dilation = {2, 1}},
        {.kernel_size = {2}, .stride = {2}, .ceil_mode = true}};
    for (const PoolOptions& o : cases) {
      auto [yg, ig] = max_pool2d_with_indices(x.to(g), o);
      auto [yh, ih] = max_pool2d_with_indices(x, o);
      EXPECT_TRUE(same(yg, yh)) << dtype_name(t);
      EXPECT_TRUE(same(ig, ih)) << dtype_name(t);
      EXPECT_TRUE(same(max_pool2d(x.to(g), o), max_pool2d(x, o))) << dtype_name(t);
    }
    Tensor x1 = randn({2, 5, 13}).to(t);
    const PoolOptions o1{.kernel_size = {4}, .stride = {3}, .padding = {2}, .dilation = {2}};
    EXPECT_TRUE(same(max_pool1d(x1.to(g), o1), max_pool1d(x1, o1)));
  }
  EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats()[0].first;
}

// conv -> batch norm -> relu -> max pool -> conv, sum of squares: every gradient on cuda:0 as on
// the host, and nothing but batch norm's backward reductions went through the host fallback.
TEST(CudaIndex, MaxPoolConvnetTrainsOnTheDevice) {
  EMBER_REQUIRE_GPU();
  if (!cuda::cudnn_loaded()) GTEST_SKIP() << cuda::cudnn_missing_reason();
  manual_seed(11);
  Tensor x0 = randn({4, 3, 12, 12}), w1 = randn({8, 3, 3, 3}) * 0.3;
  Tensor bnw = rand({8}) + 0.5, bnb = randn({8}) * 0.1, w2 = randn({6, 8, 3, 3}) * 0.2;
  auto run = [&](Device d, DType dt) {
    std::vector<Tensor> p;
    for (const Tensor& t : {w1, bnw, bnb, w2}) p.push_back(t.to(dt).to(d).set_requires_grad(true));
    Tensor rm = zeros({8}, {dt, d}), rv = ones({8}, {dt, d});
    Tensor h = conv2d(x0.to(dt).to(d), p[0], Tensor(), {.padding = {1}});
    h = nn::functional::batch_norm(h, rm, rv, p[1], p[2], true, 0.1, 1e-5);
    h = max_pool2d(relu(h), {.kernel_size = {3}, .stride = {2}, .padding = {1}});
    h = conv2d(h, p[3], Tensor(), {.stride = {2}, .padding = {1}});
    Gradients gr = (h * h).mean().backward();
    std::vector<Tensor> out;
    for (const Tensor& t : p) out.push_back(gr.get(t).to(kHost));
    return out;
  };
  cuda::reset_fallback_stats();
  auto got = run(Device::cuda(0).autodiff(), kF32);
  const auto fell = cuda::fallback_stats();
  auto want = run(Device::flex().autodiff(), kF64);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel_error(got[i], want[i]), 1e-4) << i;
  // Max pooling and its gradient's scatter stay on the device. Batch norm's backward still
  // reduces over (N, H, W) through the host fallback: the row template cannot walk reduced
  // dims that are not adjacent, and the cuda backend has no other kernel for them yet.
  for (const auto& [op, n] : fell)
    if (op != "sum" && op != "mean") ADD_FAILURE() << op << " took the host fallback " << n << "x";
}

}  // namespace
}  // namespace ember
