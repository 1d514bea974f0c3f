// The NCCL transport on CUDA tensors, in a world of one process (a NCCL communicator of one
// rank) or, under mpirun/torchrun on a machine with a GPU a rank, across ranks. Skipped without a
// GPU or without NCCL in the build.
#include <gtest/gtest.h>

#include <ember/cuda.h>

#include "distributed/mlp.h"

namespace ember {
namespace {
namespace dist = distributed;

#define NEED_GPU()                                                 \
  if (cuda::device_count() < 1) GTEST_SKIP() << "needs a CUDA GPU"

Device gpu() { return Device::cuda(cuda::device_count() > 0 ? dist::launch_info().local_rank % cuda::device_count() : 0); }

TEST(Nccl, Collectives) {
  NEED_GPU();
  auto& w = dist::init();
  const int n = w.size(), r = w.rank();
  Tensor t = full({5}, double(r + 1), {.dtype = DType::F32, .device = gpu()});
  w.all_reduce(t).wait();
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(5, float(n * (n + 1) / 2)));
  Tensor a = full({5}, double(r + 1), {.dtype = DType::BF16, .device = gpu()});
  w.all_reduce(a, dist::ReduceOp::Max).wait();
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(5, float(n)));
  Tensor v = arange(6, {.dtype = DType::F64, .device = gpu()}).reshape({2, 3}).transpose(0, 1);
  w.all_reduce(v, dist::ReduceOp::Avg).wait();  // a non-contiguous view, reduced in place
  EXPECT_EQ(v.contiguous().to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor b = full({3}, double(r), {.device = gpu()});
  w.broadcast(b, n - 1).wait();
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(3, float(n - 1)));
  Tensor in = full({2}, double(r), {.device = gpu()});
  Tensor out = zeros({2 * n}, {.device = gpu()});
  w.all_gather(out, in).wait();
  for (int k = 0; k < n; ++k) EXPECT_EQ(out.to_vector<float>()[size_t(2 * k)], float(k));
  Tensor big = ones({2 * n}, {.device = gpu()});
  Tensor mine = zeros({2}, {.device = gpu()});
  w.reduce_scatter(mine, big).wait();
  EXPECT_EQ(mine.to_vector<float>(), std::vector<float>(2, float(n)));
  Tensor s = arange(n * 2, {.dtype = DType::F32, .device = gpu()});
  Tensor d = zeros({n * 2}, {.device = gpu()});
  w.all_to_all(d, s).wait();
  if (n == 1) EXPECT_EQ(d.to_vector<float>(), s.to_vector<float>());
  w.barrier().wait();
}

TEST(Nccl, DdpOnGpu) {
  NEED_GPU();
  dist::init();
  manual_seed(1);
  test::Mlp model(DType::F32);
  model.to(gpu());
  dist::DDP ddp(model);
  auto [x, y] = test::batch(0, 4, DType::F32);
  Gradients g = ddp.backward(mse_loss(ddp(x.to(gpu())), y.to(gpu())));
  EXPECT_TRUE(g.contains(model.fc1.weight));
  EXPECT_TRUE(g.get(model.fc1.weight).is_cuda());
}

// A sub-group's own NCCL communicator (made nonblocking, with the init deadline).
TEST(Nccl, SubGroup) {
  NEED_GPU();
  auto& w = dist::init();
  std::vector<int> all(size_t(w.size()));
  for (int r = 0; r < w.size(); ++r) all[size_t(r)] = r;
  std::optional<dist::ProcessGroup> g = dist::new_group(all);
  ASSERT_TRUE(g.has_value());
  Tensor t = full({4}, 1.0, {.dtype = DType::F32, .device = gpu()});
  g->all_reduce(t).wait();
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, float(w.size())));
}

// FSDP over CUDA buffers: the gather-on-use swap of a freed unit's block, against plain Adam.
TEST(Nccl, FsdpOnGpu) {
  NEED_GPU();
  auto& w = dist::init();
  manual_seed(6);
  test::Mlp model(DType::F32);
  model.to(gpu());
  manual_seed(6);
  test::Mlp ref(DType::F32);
  ref.to(gpu());
  dist::FSDP fsdp(model);
  dist::DDP ddp(ref);
  optim::Adam opt(fsdp.parameters(), {.lr = 0.01});
  optim::Adam ref_opt(ref.parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = test::batch(4 * (w.rank() % 2), 4, DType::F32);
    opt.step(fsdp.backward(mse_loss(fsdp(x.to(gpu())), y.to(gpu()))));
    ref_opt.step(ddp.backward(mse_loss(ddp(x.to(gpu())), y.to(gpu()))));
  }
  EXPECT_EQ(fsdp.gathered_bytes(), 0);
  auto a = fsdp.state_dict(), b = ref.state_dict();
  for (size_t i = 0; i < a.size(); ++i) {
    auto va = a[i].second.to_vector<float>(), vb = b[i].second.to_vector<float>();
    for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(va[k], vb[k], 1e-5) << a[i].first;
  }
}

}  // namespace
}  // namespace ember
