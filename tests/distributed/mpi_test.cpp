// ember::distributed over MPI: run by ctest as `mpirun -np 2 distributed_tests
// --gtest_filter=Mpi*`. Each collective's result, sub-groups, asynchronous work, lazy and
// non-contiguous inputs, DDP against single-process training, and the sampler across ranks.
#include <gtest/gtest.h>

#include <ember/data/loader.h>
#include <ember/data/sampler.h>
#include <ember/train/learner.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "distributed/mlp.h"

namespace ember {
namespace {
namespace dist = distributed;

dist::ProcessGroup& world() {
  auto& w = dist::init();
  if (w.size() != 2) ADD_FAILURE() << "run these tests with mpirun -np 2";
  return w;
}
Device host() { return Device::flex(); }

TEST(Mpi, AllReduceOps) {
  auto& w = world();
  const float r = float(w.rank());
  for (auto [op, want] : std::vector<std::pair<dist::ReduceOp, std::vector<float>>>{
           {dist::ReduceOp::Sum, {1, 3, 5}}, {dist::ReduceOp::Avg, {0.5f, 1.5f, 2.5f}},
           {dist::ReduceOp::Max, {1, 2, 3}}, {dist::ReduceOp::Min, {0, 1, 2}}}) {
    Tensor t = tensor({r, r + 1, r + 2}, {}, host());
    w.all_reduce(t, op).wait();
    EXPECT_EQ(t.to_vector<float>(), want);
  }
  Tensor i = tensor({int64_t(w.rank()) * 10 + 1}, DType::I32, host());
  w.all_reduce(i).wait();
  EXPECT_EQ(i.to_vector<int32_t>(), std::vector<int32_t>{12});
  Tensor h = tensor({0.5f + r}, DType::F16, host());  // f16: reduced through f32
  w.all_reduce(h).wait();
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.to_vector<float>(), std::vector<float>{2.f});
  Tensor b = tensor(std::vector<uint8_t>{uint8_t(w.rank()), 0}, {2}, DType::Bool, host());
  w.all_reduce(b, dist::ReduceOp::Max).wait();  // logical or
  EXPECT_EQ(b.to(DType::U8).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0}));
}

TEST(Mpi, NonContiguousAndLazyInputs) {
  auto& w = world();
  // A transposed view: reduced in place through the view, the base sees it.
  Tensor base = arange(6, {.dtype = DType::F64, .device = host()}).reshape({2, 3});
  Tensor view = base.transpose(0, 1);
  ASSERT_FALSE(view.is_contiguous());
  w.all_reduce(view).wait();
  EXPECT_EQ(base.to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  // A pending tensor on the lazy cpu device is materialised before its bytes are sent.
  Tensor x = full({4}, 1.0 + w.rank(), {.dtype = DType::F32, .device = Device::cpu()});
  Tensor y = mul(add(x, x), x);  // queued, not yet run
  w.all_reduce(y).wait();
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4, 2.f + 8.f));
}

TEST(Mpi, BroadcastGatherScatterAllToAll) {
  auto& w = world();
  const double r = w.rank();
  Tensor t = full({2, 2}, r + 5, {.dtype = DType::F64, .device = host()});
  w.broadcast(t, 1).wait();
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(4, 6));

  Tensor in = tensor({r, r + 10}, {}, host()).reshape({1, 2});
  Tensor out = zeros({2, 2}, {.dtype = DType::F64, .device = host()});
  w.all_gather(out, in).wait();
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{0, 10, 1, 11}));
  Tensor scalars = zeros({2}, {.dtype = DType::F64, .device = host()});
  w.all_gather(scalars, scalar_tensor(r * 3, DType::F64, host())).wait();
  EXPECT_EQ(scalars.to_vector<double>(), (std::vector<double>{0, 3}));

  Tensor big = tensor({1.0 + r, 2.0 + r, 3.0 + r, 4.0 + r}, {}, host());
  Tensor mine = zeros({2}, {.dtype = DType::F64, .device = host()});
  w.reduce_scatter(mine, big).wait();
  EXPECT_EQ(mine.to_vector<double>(),
            w.rank() == 0 ? (std::vector<double>{3, 5}) : (std::vector<double>{7, 9}));

  Tensor send = tensor({10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3}, {}, host());
  Tensor recv = zeros({4}, {.dtype = DType::F64, .device = host()});
  w.all_to_all(recv, send).wait();
  EXPECT_EQ(recv.to_vector<double>(), w.rank() == 0 ? (std::vector<double>{0, 1, 10, 11})
                                                     : (std::vector<double>{2, 3, 12, 13}));
  w.barrier().wait();
}

TEST(Mpi, SendRecvAndAsyncWork) {
  auto& w = world();
  const int peer = 1 - w.rank();
  Tensor mine = full({3}, double(w.rank() + 1), {.dtype = DType::F64, .device = host()});
  Tensor theirs = zeros({3}, {.dtype = DType::F64, .device = host()});
  dist::Work r = w.recv(theirs, peer, 7);
  dist::Work s = w.send(mine, peer, 7);
  s.wait();
  r.wait();
  EXPECT_EQ(theirs.to_vector<double>(), std::vector<double>(3, peer + 1));
  // Several collectives in flight at once; is_completed polls without writing the result.
  std::vector<Tensor> ts;
  std::vector<dist::Work> works;
  for (int k = 0; k < 4; ++k) ts.push_back(full({1000}, double(k), {.dtype = DType::F64, .device = host()}));
  for (auto& t : ts) works.push_back(w.all_reduce(t));
  for (int spin = 0; spin < 100000 && !works.back().is_completed(); ++spin) {}
  for (auto& wk : works) wk.wait();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ts[size_t(k)].to_vector<double>()[999], 2.0 * k);
}

TEST(Mpi, SubGroups) {
  auto& w = world();
  auto solo = dist::new_group({1});
  EXPECT_EQ(solo.has_value(), w.rank() == 1);
  if (solo) {
    EXPECT_EQ(solo->size(), 1);
    Tensor t = full({2}, 4.0, {.device = host()});
    solo->all_reduce(t).wait();
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(2, 4.f));
  }
  auto both = dist::new_group({0, 1});
  ASSERT_TRUE(both.has_value());
  Tensor t = full({2}, 1.0 + w.rank(), {.device = host()});
  both->all_reduce(t, dist::ReduceOp::Max).wait();
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(2, 2.f));
}

TEST(Mpi, SamplerCoversTheDataOncePerEpoch) {
  auto& w = world();
  for (int64_t n : {10, 11}) {
    data::DistributedSampler s(n, {.num_replicas = w.size(), .rank = w.rank(), .seed = 3});
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      s.set_epoch(epoch);
      Tensor mine = tensor(s.indices(), {s.num_samples()}, DType::I64, host());
      Tensor all = zeros({s.total_size()}, {.dtype = DType::I64, .device = host()});
      w.all_gather(all, mine).wait();
      std::vector<int64_t> v = all.to_vector<int64_t>();
      std::set<int64_t> distinct(v.begin(), v.end());
      EXPECT_EQ(int64_t(distinct.size()), n);  // every item, and (n even) each exactly once
      EXPECT_EQ(int64_t(v.size()), (n + 1) / 2 * 2);
    }
  }
}

// DDP against single-process training on the same global batch of 8 rows (4 a rank). With a
// summed loss and Sum reduction in f64 the gradients are exactly shard 0's plus shard 1's, which
// the single process forms by accumulating the two shards' gradients the same way: bitwise.
TEST(Mpi, DdpEqualsSingleProcessBitwiseF64) {
  auto& w = world();
  manual_seed(100 + w.rank());  // different initial weights: DDP must broadcast rank 0's
  test::Mlp model;
  manual_seed(100);
  test::Mlp ref;
  dist::DDP ddp(model, {.bucket_cap_mb = 0.0005, .reduce = dist::ReduceOp::Sum});
  EXPECT_GT(ddp.buckets().size(), 1u);
  optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  optim::SGD ref_opt(ref.parameters(), {.lr = 0.01, .momentum = 0.9});
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = test::batch(4 * w.rank(), 4);
    opt.step(ddp.backward(test::sq_error_sum(ddp(x), y)));
    // Every bucket started before backward ended (unused head_b and `never` count as final).
    EXPECT_EQ(ddp.buckets_started_in_backward(), int(ddp.buckets().size()));
    Gradients acc0 = test::sq_error_sum(ref(test::batch(0, 4).first), test::batch(0, 4).second).backward();
    Gradients acc1 = test::sq_error_sum(ref(test::batch(4, 4).first), test::batch(4, 4).second).backward();
    Gradients total;
    for (Tensor& p : ref.parameters())
      if (acc0.contains(p)) total.set(p, add(acc0.get(p), acc1.get(p)));
    ref_opt.step(total);
  }
  auto a = model.state_dict(), b = ref.state_dict();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].second.to_vector<double>(), b[i].second.to_vector<double>()) << a[i].first;
}

// f32, mean loss, Avg reduction, against one forward over the whole global batch.
TEST(Mpi, DdpMatchesFullBatchTrainingF32) {
  auto& w = world();
  manual_seed(7);
  test::Mlp model(DType::F32);
  manual_seed(7);
  test::Mlp ref(DType::F32);
  dist::DDP ddp(model);
  optim::Adam opt(model.parameters(), {.lr = 0.01});
  optim::Adam ref_opt(ref.parameters(), {.lr = 0.01});
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = test::batch(4 * w.rank(), 4, DType::F32);
    opt.step(ddp.backward(mse_loss(ddp(x), y)));
    auto [gx, gy] = test::batch(0, 8, DType::F32);
    ref_opt.step(mse_loss(ref(gx), gy).backward());
  }
  auto a = model.state_dict(), b = ref.state_dict();
  for (size_t i = 0; i < a.size(); ++i) {
    auto va = a[i].second.to_vector<float>(), vb = b[i].second.to_vector<float>();
    for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(va[k], vb[k], 1e-5) << a[i].first;
  }
}

TEST(Mpi, DdpNoSyncAccumulates) {
  auto& w = world();
  manual_seed(3);
  test::Mlp model;
  manual_seed(3);
  test::Mlp ref;
  dist::DDP ddp(model, {.reduce = dist::ReduceOp::Sum});
  // Two micro-batches of 2 rows a rank: the first under no_sync, the second synchronises.
  Gradients acc;
  {
    auto guard = ddp.no_sync();
    auto [x, y] = test::batch(4 * w.rank(), 2);
    ddp.backward(test::sq_error_sum(ddp(x), y), {.accumulate_into = &acc});
  }
  auto [x, y] = test::batch(4 * w.rank() + 2, 2);
  Gradients g = ddp.backward(test::sq_error_sum(ddp(x), y), {.accumulate_into = &acc});
  std::vector<Gradients> shard(2);
  for (int r = 0; r < 2; ++r)
    for (int m = 0; m < 2; ++m) {
      auto [bx, by] = test::batch(4 * r + 2 * m, 2);
      test::sq_error_sum(ref(bx), by).backward({.accumulate_into = &shard[size_t(r)]});
    }
  auto mp = model.parameters(), rp = ref.parameters();
  for (size_t i = 0; i < mp.size(); ++i) {
    ASSERT_EQ(g.contains(mp[i]), shard[0].contains(rp[i]));
    if (!g.contains(mp[i])) continue;
    auto want = add(shard[0].get(rp[i]), shard[1].get(rp[i])).to_vector<double>();
    EXPECT_EQ(g.get(mp[i]).to_vector<double>(), want);
    EXPECT_EQ(acc.get(mp[i]).to_vector<double>(), want);
  }
}

// head_b is used on rank 1 only and `never` on no rank: no deadlock, rank 0 gets rank 1's
// gradient for head_b (averaged with its zeros), and `never` gets none.
TEST(Mpi, DdpUnusedParameters) {
  auto& w = world();
  manual_seed(5);
  test::Mlp model;
  dist::DDP ddp(model, {.bucket_cap_mb = 0});
  auto [x, y] = test::batch(0, 4);
  Tensor out = w.rank() == 1 ? model.forward_both(x) : ddp(x);
  Gradients g = ddp.backward(test::sq_error_sum(out, y));
  EXPECT_TRUE(g.contains(model.head_b.weight));
  EXPECT_FALSE(g.contains(model.never.weight));
  EXPECT_EQ(ddp.unused_parameters(), (std::vector<std::string>{"never.weight", "never.bias"}));
  Tensor hb = g.get(model.head_b.weight).clone();
  Tensor other = hb.clone();
  w.broadcast(other, 1).wait();
  EXPECT_EQ(hb.to_vector<double>(), other.to_vector<double>());  // the same on both ranks
  EXPECT_GT(sum(abs(hb)).item<double>(), 0.0);
}

// On the lazy cpu device the gradients a bucket reads are pending when the hook fires: they are
// materialised mid-backward, and the result is the same as on flex.
TEST(Mpi, DdpOnTheLazyCpuDevice) {
  auto& w = world();
  manual_seed(9);
  test::Mlp lazy(DType::F32);
  lazy.to(Device::cpu());
  manual_seed(9);
  test::Mlp eager(DType::F32);
  dist::DDP dl(lazy), de(eager);
  auto [x, y] = test::batch(4 * w.rank(), 4, DType::F32);
  Gradients gl = dl.backward(mse_loss(dl(x.to(Device::cpu())), y.to(Device::cpu())));
  Gradients ge = de.backward(mse_loss(de(x), y));
  EXPECT_EQ(dl.buckets_started_in_backward(), int(dl.buckets().size()));
  auto pl = lazy.parameters(), pe = eager.parameters();
  for (size_t i = 0; i < pl.size(); ++i) {
    ASSERT_EQ(gl.contains(pl[i]), ge.contains(pe[i]));
    if (!ge.contains(pe[i])) continue;
    auto a = gl.get(pl[i]).to_vector<float>(), b = ge.get(pe[i]).to_vector<float>();
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5);
  }
}

// broadcast_buffers: every forward starts from rank 0's buffers (PyTorch's default); off, each
// rank keeps its own.
TEST(Mpi, DdpBroadcastsBuffersEachForward) {
  auto& w = world();
  struct Counting : test::Mlp {
    Tensor seen;
    Counting() { register_buffer("seen", seen = zeros({2}, {DType::F64, Device::flex()})); }
    Tensor forward(const Tensor& x) override {
      seen.add_(ones({2}, {DType::F64, Device::flex()}));  // a running statistic
      return test::Mlp::forward(x);
    }
  };
  for (bool on : {true, false}) {
    manual_seed(1);
    Counting m;
    dist::DDP ddp(m, {.broadcast_buffers = on});
    if (w.rank() == 1) m.seen.fill_(10.0);  // this rank's statistics drift
    auto [x, y] = test::batch(0, 2);
    ddp(x);
    const double want = on ? 1.0 : (w.rank() == 1 ? 11.0 : 1.0);
    EXPECT_EQ(m.seen.to_vector<double>(), std::vector<double>(2, want)) << on;
  }
}

// The Learner under DDP: each rank trains on its shard; the epoch metrics are over both shards
// (so equal on both ranks although the shards differ), the weights stay equal, and only rank 0
// writes its log and checkpoints.
TEST(Mpi, LearnerUnderDdp) {
  namespace fs = std::filesystem;
  auto& w = world();
  const fs::path dir = fs::temp_directory_path() /
                       ("ember_dist_learner_" + std::to_string(getppid())) /
                       ("rank" + std::to_string(w.rank()));
  fs::remove_all(dir);
  manual_seed(11 + w.rank());
  test::Mlp model;
  dist::DDP ddp(model);
  optim::SGD opt(model.parameters(), {.lr = 0.05});
  auto [x, y] = test::batch(0, 16);
  std::vector<std::pair<Tensor, Tensor>> items;
  for (int64_t i = 0; i < 16; ++i) items.push_back({x[i], y[i]});
  auto sampler = std::make_shared<data::DistributedSampler>(
      16, data::DistributedSamplerOptions{.num_replicas = 2, .rank = w.rank()});
  data::DataLoader<std::pair<Tensor, Tensor>> shard(
      data::distributed_shard(data::in_memory(items), sampler), {.batch_size = 4});
  data::SamplerEpochs loader(shard, sampler);  // a new shared order each epoch
  train::Learner learner(model, opt,
                         {.epochs = 2,
                          .grad_accumulation = 2,
                          .checkpoint_dir = (dir / "ckpt").string(),
                          .log_path = (dir / "log.csv").string(),
                          .handle_interrupt = false,
                          .renderer = std::shared_ptr<train::Renderer>(train::silent_renderer()),
                          .data_parallel = dist::data_parallel(ddp)});
  auto step = [&](std::pair<Tensor, Tensor>& b) {
    return train::StepOutput{.loss = mse_loss(model(b.first), b.second)};
  };
  train::FitResult r = learner.fit(loader, step);
  EXPECT_EQ(sampler->epoch(), 1u);
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.global_step, 2);
  for (const auto& rec : r.history) {
    Tensor mine = scalar_tensor(rec.train[0].second, DType::F64, host());
    Tensor rank0 = mine.clone();
    w.broadcast(rank0, 0).wait();
    EXPECT_EQ(rec.train[0].first, "loss");
    EXPECT_EQ(mine.item<double>(), rank0.item<double>());
  }
  for (Tensor& p : model.parameters()) {
    Tensor q = p.detach().clone();
    w.broadcast(q, 0).wait();
    EXPECT_EQ(p.to_vector<double>(), q.to_vector<double>());
  }
  EXPECT_EQ(fs::exists(dir / "log.csv"), w.rank() == 0);
  EXPECT_EQ(fs::exists(dir / "ckpt") && !fs::is_empty(dir / "ckpt"), w.rank() == 0);
  w.barrier().wait();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
