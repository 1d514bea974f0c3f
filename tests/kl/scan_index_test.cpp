// The scan, gather/scatter and multi-tensor templates against flex: cumsum/cumprod/cummax/cummin
// bit for bit, gather/index_select/take/embedding and scatter/scatter_add/index_add with bounds
// checks, and an AdamW step plus gradient-norm partial sums over tensors of different sizes.
#include <gtest/gtest.h>

#include <optional>

#include "ember/kl/elementwise.h"
#include "ember/kl/templates/index.h"
#include "ember/kl/templates/multi_tensor.h"
#include "ember/kl/templates/scan.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

struct Later {
  Batch batch;
  std::vector<std::function<void()>> checks;
  void add(std::function<void()> f) { checks.push_back(std::move(f)); }
  void run() {
    batch.run();
    for (auto& f : checks) f();
    checks.clear();
  }
};

// --- scan ---
void scan_job(Later& t, const Tensor& x, int64_t dim, ScanOp op, DType acc, DType out, const Tensor& want,
              const Tensor& want_idx = {}) {
  const bool extreme = op == ScanOp::Max || op == ScanOp::Min;
  Tensor vals = empty(x.shape(), {.dtype = extreme ? x.dtype() : out});
  Tensor idx = extreme ? empty(x.shape(), {.dtype = kI64}) : Tensor();
  std::vector<std::vector<int64_t>> strides = {strides_of(x), strides_of(vals)};
  if (extreme) strides.push_back(strides_of(idx));
  RowLayout l = row_layout(std::span<const int64_t>(x.shape()), strides, std::vector<int64_t>{dim});
  ScanKey key = scan_key(l, x.dtype(), acc, out, op, extreme, cpp_host_target());
  Kernel k = scan_kernel("scan", key);
  Kernel copy = k;
  t.batch.add(std::move(k), [=](KernelFn f) {
    std::vector<const void*> bufs = {x.raw_data(), vals.raw_data()};
    if (extreme) bufs.push_back(idx.raw_data());
    launch_pieces(f, scan_args(copy, key, l, bufs), scan_items(key, l), 2);
  });
  const std::string what = key.str();
  t.add([=] {
    EXPECT_EQ(diff_exact(vals, want), "") << what;
    if (extreme) EXPECT_EQ(diff_exact(idx, want_idx), "") << what;
  });
}

TEST(KlScan, CumulativeOpsMatchFlexBitwise) {
  manual_seed(21);
  Later t;
  std::set<std::string> modes;
  for (Shape shape : {Shape{5, 37}, Shape{40, 9}, Shape{3, 20, 17}, Shape{1}, Shape{64}}) {
    for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
      // flex accumulates f32 in double, f16 in float and integers in int64.
      Tensor f = randn(shape) * 0.7 + 1;
      scan_job(t, f, dim, ScanOp::Sum, kF64, kF32, cumsum(f, dim));
      scan_job(t, f, dim, ScanOp::Prod, kF64, kF32, cumprod(f, dim));
      Tensor h = f.to(kF16);
      scan_job(t, h, dim, ScanOp::Sum, kF32, kF16, cumsum(h, dim));
      Tensor i = randint(-3, 4, shape).to(kI32);
      scan_job(t, i, dim, ScanOp::Sum, kI64, kI64, cumsum(i, dim));
      scan_job(t, i, dim, ScanOp::Prod, kI64, kI64, cumprod(i, dim));
      Tensor withnan = where(f > 1.8, full({1}, NAN), f);
      for (const Tensor& x : {withnan, i, h}) {
        auto [mv, mi] = cummax(x, dim);
        scan_job(t, x, dim, ScanOp::Max, x.dtype(), x.dtype(), mv, mi);
        auto [nv, ni] = cummin(x, dim);
        scan_job(t, x, dim, ScanOp::Min, x.dtype(), x.dtype(), nv, ni);
      }
      Tensor tr = randn({shape.back(), shape[0]}).t();  // a transposed input
      if (shape.size() == 2) scan_job(t, tr, dim, ScanOp::Sum, kF64, kF32, cumsum(tr, dim));
    }
  }
  t.run();
}

// --- gather ---
void gather_job(Later& t, const Tensor& src, int64_t dim, const Tensor& index_view, const Shape& out_shape,
                bool wrap, const Tensor& want, std::optional<int64_t> bad = {}) {
  GatherKey key{src.dtype(), index_view.dtype(), int(out_shape.size()), int(dim), wrap};
  Tensor out = empty(out_shape, {.dtype = src.dtype()});
  Tensor err = zeros({kErrorSlots}, {.dtype = kI64});
  std::vector<int64_t> ss = strides_of(src), is = strides_of(index_view), os = strides_of(out);
  std::vector<int64_t> shape = out_shape.vec();
  const int64_t size = src.shape()[size_t(dim)];
  Kernel k = gather_kernel("gather", key);
  Kernel copy = k;
  t.batch.add(std::move(k), [=](KernelFn f) {
    ArgPack a = gather_args(copy, key, shape, ss, is, os, size, src.raw_data(), index_view.raw_data(),
                            out.raw_data(), static_cast<int64_t*>(err.raw_data()));
    launch(f, a, gather_items(shape), 1000);
  });
  const std::string what = key.str();
  t.add([=] {
    const int64_t* e = static_cast<const int64_t*>(err.raw_data());
    if (!bad) {
      EXPECT_EQ(e[0], 0) << what;
      EXPECT_EQ(diff_exact(out, want), "") << what;
    } else {
      EXPECT_EQ(e[0], 1) << what;
      EXPECT_EQ(e[1], *bad) << what;
      EXPECT_THROW(check_index_error("gather", e, dim, size), IndexError);
    }
  });
}

TEST(KlIndex, GatherFamilyMatchesFlexAndChecksBounds) {
  manual_seed(22);
  Later t;
  Tensor x = randn({6, 5, 4});
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape is = {3, 5, 4};
    is[size_t(dim)] = 7;
    is[0] = dim == 0 ? 7 : 6;
    Tensor idx = randint(0, x.shape()[size_t(dim)], is);
    gather_job(t, x, dim, idx, is, false, gather(x, dim, idx));
    gather_job(t, x, dim, idx.to(kI32), is, false, gather(x, dim, idx));
  }
  // index_select: a 1-d index viewed over the output with zero strides elsewhere.
  Tensor sel = randint(0, 5, {9});
  Shape os = {6, 9, 4};
  Tensor view = sel.reshape({1, 9, 1}).expand(os);
  gather_job(t, x, 1, view, os, false, index_select(x, 1, sel));
  // embedding: rows of a weight table.
  Tensor w = randn({10, 8}), ids = randint(0, 10, {3, 5});
  Tensor ids_view = ids.reshape({15, 1}).expand({15, 8});
  gather_job(t, w, 0, ids_view, {15, 8}, false, nn::functional::embedding(ids, w).reshape({15, 8}));
  // take: flat, negative indices wrap.
  Tensor flat = x.reshape({-1}), tk = randint(-120, 120, {50});
  gather_job(t, flat, 0, tk, {50}, true, take(x, tk));
  // Out of range: flagged, nothing read out of bounds; the bad index is reported.
  Tensor bad = tensor(std::vector<int64_t>{0, 3, 6, 1}, {4});
  gather_job(t, x.select(1, 0).select(1, 0), 0, bad, {4}, false, {}, 6);
  Tensor neg = tensor(std::vector<int64_t>{-1, 2}, {2});
  gather_job(t, x.select(1, 0).select(1, 0), 0, neg, {2}, false, {}, -1);  // gather does not wrap
  t.run();
}

// --- scatter ---
void scatter_job(Later& t, const Tensor& self, int64_t dim, const Tensor& index_view, const Tensor& src_view,
                 ScatterReduce reduce, const Tensor& want, bool exact = true) {
  Tensor out = self.clone();
  Tensor err = zeros({kErrorSlots}, {.dtype = kI64});
  ScatterKey key{src_view.dtype(), index_view.dtype(), out.dtype(), reduce, int(out.dim()), int(dim), false};
  std::vector<int64_t> shape = index_view.shape().vec(), ss = strides_of(src_view), is = strides_of(index_view),
                       os = strides_of(out);
  const int64_t size = out.shape()[size_t(dim)];
  Kernel k = scatter_kernel("scatter", key);
  Kernel copy = k;
  t.batch.add(std::move(k), [=](KernelFn f) {
    ArgPack a = scatter_args(copy, key, shape, ss, is, os, size, src_view.raw_data(), index_view.raw_data(),
                             out.raw_data(), static_cast<int64_t*>(err.raw_data()));
    launch(f, a, scatter_items(key, shape), 3);
  });
  const std::string what = key.str();
  t.add([=] {
    EXPECT_EQ(static_cast<const int64_t*>(err.raw_data())[0], 0) << what;
    if (exact) EXPECT_EQ(diff_exact(out, want), "") << what;
    else EXPECT_EQ(diff_close(out, want, 1e-6, 1e-6), "") << what;
  });
}

TEST(KlIndex, ScatterFamilyMatchesFlex) {
  manual_seed(23);
  Later t;
  Tensor self = randn({5, 6});
  for (int64_t dim = 0; dim < 2; ++dim) {
    Tensor idx = randint(0, self.shape()[size_t(dim)], {4, 3});
    Tensor src = randn({4, 3});
    // Distinct indices along dim make assignment order-independent.
    Tensor perm = dim == 0 ? tensor(std::vector<int64_t>{3, 0, 4, 1}, {4, 1}).expand({4, 3}).contiguous()
                           : tensor(std::vector<int64_t>{5, 2, 0}, {1, 3}).expand({4, 3}).contiguous();
    scatter_job(t, self, dim, perm, src, ScatterReduce::Assign, scatter(self, dim, perm, src));
    scatter_job(t, self, dim, idx, src, ScatterReduce::Sum, scatter_add(self, dim, idx, src), false);
    scatter_job(t, self, dim, idx, src, ScatterReduce::Max, scatter_reduce(self, dim, idx, src, "amax"));
    scatter_job(t, self, dim, idx, src, ScatterReduce::Min, scatter_reduce(self, dim, idx, src, "amin"));
    Tensor iself = randint(-9, 9, {5, 6}), isrc = randint(-9, 9, {4, 3});
    scatter_job(t, iself, dim, idx, isrc, ScatterReduce::Sum, scatter_add(iself, dim, idx, isrc));
    scatter_job(t, iself, dim, idx, isrc, ScatterReduce::Prod, scatter_reduce(iself, dim, idx, isrc, "prod"));
  }
  // index_add: a 1-d index viewed over src's shape.
  Tensor src = randint(-9, 9, {5, 4}), index = tensor(std::vector<int64_t>{2, 0, 2, 5}, {4});
  Tensor iself = randint(-9, 9, {5, 6});
  scatter_job(t, iself, 1, index.reshape({1, 4}).expand({5, 4}), src, ScatterReduce::Sum,
              index_add(iself, 1, index, src));
  t.run();
}

TEST(KlIndex, ScatterFlagsOutOfRangeAndWritesNothingThere) {
  Later t;
  Tensor self = zeros({3, 2});
  Tensor idx = tensor(std::vector<int64_t>{0, 7, 2, 1}, {2, 2});
  Tensor src = ones({2, 2});
  Tensor out = self.clone(), err = zeros({kErrorSlots}, {.dtype = kI64});
  ScatterKey key{kF32, kI64, kF32, ScatterReduce::Sum, 2, 0, false};
  Kernel k = scatter_kernel("s", key);
  Kernel copy = k;
  t.batch.add(std::move(k), [=](KernelFn f) {
    std::vector<int64_t> shape = {2, 2};
    ArgPack a = scatter_args(copy, key, shape, strides_of(src), strides_of(idx), strides_of(out), 3,
                             src.raw_data(), idx.raw_data(), out.raw_data(), static_cast<int64_t*>(err.raw_data()));
    launch(f, a, scatter_items(key, shape), 1);
  });
  t.run();
  const int64_t* e = static_cast<const int64_t*>(err.raw_data());
  EXPECT_EQ(e[0], 1);
  EXPECT_EQ(e[1], 7);
  EXPECT_EQ(diff_exact(out, tensor(std::vector<float>{1, 0, 0, 1, 1, 0}, {3, 2})), "");
}

// --- multi-tensor: AdamW over parameters of different sizes, and gradient-norm partials ---
TEST(KlMultiTensor, AdamWStepAndGradNormPartialsMatchFlex) {
  manual_seed(24);
  const std::vector<int64_t> sizes = {1, 7, 100, 1000, 70001};
  std::vector<Tensor> p, g, m, v;
  for (int64_t n : sizes) {
    p.push_back(randn({n}));
    g.push_back(randn({n}));
    m.push_back(randn({n}) * 0.1);
    v.push_back(rand({n}) * 0.01);
  }
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  const int step = 3;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  // AdamW as written with ember ops (the reference).
  std::vector<Tensor> want_p, want_m, want_v;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor pp = p[i] * (1 - lr * wd);
    Tensor mm = m[i] * b1 + g[i] * (1 - b1);
    Tensor vv = v[i] * b2 + g[i] * g[i] * (1 - b2);
    Tensor denom = sqrt(vv / bc2) + eps;
    want_p.push_back(pp - (mm / bc1) / denom * lr);
    want_m.push_back(mm);
    want_v.push_back(vv);
  }
  MultiTensorKey key = multi_tensor_key({{kF32, Access::ReadWrite}, {kF32, Access::Read}, {kF32, Access::ReadWrite},
                                         {kF32, Access::ReadWrite}},
                                        std::vector<DType>(9, kF32), kF64, cpp_host_target());
  // The hyper-parameters are parameters, derived on the host in double (as an optimizer does):
  // lr, beta1, 1 - beta1, beta2, 1 - beta2, eps, 1 - lr * wd, bias corrections 1 and 2.
  Kernel k = multi_tensor_kernel("adamw", key, [](std::span<const Expr> in, std::span<const Expr> s) {
    const Expr& pp = in[0], &gg = in[1], &mm = in[2], &vv = in[3];
    Expr p2 = pp * s[6];
    Expr m2 = mm * s[1] + gg * s[2];
    Expr v2 = vv * s[3] + gg * gg * s[4];
    Expr denom = sqrt(v2 / s[8]) + s[5];
    return std::vector<Expr>{p2 - (m2 / s[7]) / denom * s[0], m2, v2, cast(gg, DType::F64) * cast(gg, DType::F64)};
  });
  std::vector<std::vector<const void*>> ptrs(4);
  for (size_t i = 0; i < sizes.size(); ++i) {
    ptrs[0].push_back(p[i].raw_data());
    ptrs[1].push_back(g[i].raw_data());
    ptrs[2].push_back(m[i].raw_data());
    ptrs[3].push_back(v[i].raw_data());
  }
  MultiTensorPlan plan = multi_tensor_plan(sizes, ptrs, 4096);
  Tensor partials = zeros({plan.items()}, {.dtype = kF64});
  std::vector<Scalar> scalars = {lr, b1, 1 - b1, b2, 1 - b2, eps, 1 - lr * wd, bc1, bc2};
  Batch batch;
  Kernel copy = k;
  batch.add(std::move(k), [&](KernelFn f) {
    launch(f, multi_tensor_args(copy, key, plan, scalars, partials.raw_data()), plan.items(), 1);
  });
  batch.run();
  double norm2 = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(diff_close(p[i], want_p[i], 1e-6, 1e-7), "") << "param " << i;
    EXPECT_EQ(diff_close(m[i], want_m[i], 1e-6, 1e-7), "") << "exp_avg " << i;
    EXPECT_EQ(diff_close(v[i], want_v[i], 1e-6, 1e-9), "") << "exp_avg_sq " << i;
    norm2 += sum(g[i].to(kF64) * g[i].to(kF64)).item<double>();
  }
  EXPECT_NEAR(sum(partials).item<double>(), norm2, 1e-9 * norm2);
  EXPECT_EQ(plan.items(), 1 + 1 + 1 + 1 + (70001 + 4095) / 4096);
}

}  // namespace
}  // namespace ember::kl::test
