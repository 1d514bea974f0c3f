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

}  // namespace
}  // namespace ember
