// ember::distributed in one process: a world of one, argument errors, the sampler, the autodiff
// leaf hook DDP uses, and the torchrun-style TCP rendezvous between two threads.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ember/data/loader.h>
#include <ember/data/sampler.h>
#include <set>
#include <thread>

#include "distributed/mlp.h"
#include "ember/autodiff/hooks.h"
#include "ember/distributed/comm.h"

namespace ember {
namespace {
namespace dist = distributed;

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

TEST(DistLocal, WorldOfOne) {
  auto& w = dist::init();
  EXPECT_EQ(w.rank(), 0);
  EXPECT_EQ(w.size(), 1);
  EXPECT_EQ(w.host_transport(), dist::Transport::Local);
  Tensor t = tensor({1.f, 2.f, 3.f}, {}, Device::flex());
  dist::all_reduce(t, dist::ReduceOp::Avg).wait();
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  Tensor out = zeros({3}, {.device = Device::flex()});
  dist::all_gather(out, t).wait();
  EXPECT_EQ(out.to_vector<float>(), t.to_vector<float>());
  Tensor s = zeros({3}, {.device = Device::flex()});
  dist::reduce_scatter(s, t).wait();
  EXPECT_EQ(s.to_vector<float>(), t.to_vector<float>());
  dist::barrier();
}

TEST(DistLocal, ErrorsNameTheCollective) {
  dist::init();
  Tensor t = zeros({2, 3}, {.device = Device::flex()});
  Tensor bad_out = zeros({3, 3}, {.device = Device::flex()});
  EXPECT_EQ(error_of<ShapeError>([&] { (void)dist::all_gather(bad_out, t); }),
            "[all_gather] expected `out` of shape [2, 3] (1 times `in` [2, 3] along dim 0), "
            "found [3, 3]");
  EXPECT_EQ(error_of<IndexError>([&] { (void)dist::broadcast(t, 1); }),
            "[broadcast] root 1 is not a rank of a group of size 1");
  Tensor i = zeros({2}, {.dtype = DType::I32, .device = Device::flex()});
  EXPECT_EQ(error_of<DTypeError>([&] { (void)dist::all_reduce(i, dist::ReduceOp::Avg); }),
            "[all_reduce] ReduceOp::Avg needs a floating tensor, found int32 (use Sum and divide)");
  Tensor undefined;
  EXPECT_EQ(error_of<ValueError>([&] { (void)dist::all_reduce(undefined); }),
            "[all_reduce] expected a defined tensor for `t`");
  EXPECT_NE(error_of<ValueError>([] { dist::new_group({0, 0}); }).find("sorted, distinct"),
            std::string::npos);
}

TEST(DistLocal, LaunchInfoFromTorchrunVariables) {

  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "1", 1);
  unsetenv("MASTER_ADDR");
  EXPECT_EQ(error_of<ValueError>([] { dist::launch_info(); }),
            "[init] WORLD_SIZE > 1 needs MASTER_ADDR (rank 0's address)");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("LOCAL_RANK", "1", 1);
  auto l = dist::launch_info();
  EXPECT_EQ(l.launcher, "torchrun");
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.world_size, 2);
  EXPECT_EQ(l.master_port, 29500);
  setenv("RANK", "2", 1);
  EXPECT_EQ(error_of<ValueError>([] { dist::launch_info(); }),
            "[init] rank 2 is not below the world size 2");
  for (const char* v : {"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"})
    unsetenv(v);
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(DistLocal, TcpRendezvous) {
  const int port = free_port();
  std::vector<uint8_t> blob(128);
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = uint8_t(i * 7);
  std::vector<std::vector<uint8_t>> got(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      dist::LaunchInfo l{.rank = r, .world_size = 3, .local_rank = r, .launcher = "torchrun",
                         .master_addr = "127.0.0.1", .master_port = port};
      got[size_t(r)] = dist::detail::tcp_broadcast(l, r == 0 ? blob : std::vector<uint8_t>{},
                                                   128, std::chrono::seconds(10));
    });
  for (auto& t : ranks) t.join();
  for (auto& g : got) EXPECT_EQ(g, blob);
}

// new_group under a torchrun-style launch: rounds of one rendezvous carry each sub-group's id
// from its first rank to its members (here {1, 2}, then {0, 2}), without MPI or a GPU.
TEST(DistLocal, TcpRendezvousCarriesSubgroupIds) {
  const int port = free_port();
  std::vector<std::vector<std::vector<uint8_t>>> got(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      dist::LaunchInfo l{.rank = r, .world_size = 3, .local_rank = r, .launcher = "torchrun",
                         .master_addr = "127.0.0.1", .master_port = port};
      dist::detail::TcpRendezvous rdv(l);
      auto id_of = [r] { return std::vector<uint8_t>(128, uint8_t(10 + r)); };
      const auto t = std::chrono::seconds(10);
      got[size_t(r)].push_back(rdv.all_gather(std::vector<uint8_t>(4, uint8_t(r)), t));
      got[size_t(r)].push_back(dist::detail::subgroup_blob(rdv, {1, 2}, 128, id_of, t));
      got[size_t(r)].push_back(dist::detail::subgroup_blob(rdv, {0, 2}, 128, id_of, t));
    });
  for (auto& t : ranks) t.join();
  const std::vector<uint8_t> table = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[size_t(r)][0], table);
  EXPECT_TRUE(got[0][1].empty());
  EXPECT_EQ(got[1][1], std::vector<uint8_t>(128, 11));
  EXPECT_EQ(got[2][1], std::vector<uint8_t>(128, 11));
  EXPECT_EQ(got[0][2], std::vector<uint8_t>(128, 10));
  EXPECT_TRUE(got[1][2].empty());
  EXPECT_EQ(got[2][2], std::vector<uint8_t>(128, 10));
}

TEST(DistLocal, TcpRendezvousTimesOut) {
  dist::LaunchInfo l{.rank = 0, .world_size = 2, .local_rank = 0, .launcher = "torchrun",
                     .master_addr = "127.0.0.1", .master_port = free_port()};
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error_of<dist::DistributedError>([&] {
    dist::detail::tcp_broadcast(l, std::vector<uint8_t>(128), 128, std::chrono::milliseconds(300));
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(e.find("1 of 1 ranks never connected"), std::string::npos) << e;
}

TEST(DistLocal, LeafHookFiresOncePerLeafWhenFinal) {
  Tensor w = ones({3}, {.device = Device::flex().autodiff()}).requires_grad_();
  Tensor b = ones({3}, {.device = Device::flex().autodiff()}).requires_grad_();
  struct Seen {
    const AutogradMeta* w;
    std::vector<std::pair<bool, std::vector<float>>> calls;  // (is w, w's gradient then)
    Tensor wt;
  } seen{autodiff::leaf_key(w), {}, w};
  auto fn = [](void* ctx, const AutogradMeta* leaf, Gradients& g) {
    auto& s = *static_cast<Seen*>(ctx);
    s.calls.push_back({leaf == s.w, leaf == s.w ? g.get(s.wt).to_vector<float>()
                                                : std::vector<float>{}});
  };
  Gradients g;
  {
    autodiff::ScopedLeafHook hook(fn, &seen);
    // w is used twice: the hook must wait for both contributions (2 * w * x + 3).
    Tensor y = add(mul(mul(w, w), b), mul(w, full({3}, 3.0, {.device = Device::flex()})));
    g = sum(y).backward();
  }
  ASSERT_EQ(seen.calls.size(), 2u);
  int w_calls = 0;
  for (auto& [is_w, v] : seen.calls)
    if (is_w) {
      ++w_calls;
      EXPECT_EQ(v, (std::vector<float>{5, 5, 5}));
    }
  EXPECT_EQ(w_calls, 1);
  EXPECT_EQ(g.get(w).to_vector<float>(), (std::vector<float>{5, 5, 5}));
}

TEST(DistLocal, DdpInAWorldOfOneIsPlainTraining) {
  dist::init();
  manual_seed(0);
  test::Mlp a;
  manual_seed(0);
  test::Mlp b;
  dist::DDP ddp(a, {.bucket_cap_mb = 0});
  EXPECT_EQ(ddp.buckets().size(), 8u);  // one parameter a bucket at this cap
  EXPECT_EQ(ddp.buckets_started_in_backward(), 0);
  auto [x, y] = test::batch(0, 8);
  Gradients ga = ddp.backward(test::sq_error_sum(ddp(x), y));
  Gradients gb = test::sq_error_sum(b(x), y).backward();
  EXPECT_EQ(ddp.buckets_started_in_backward(), 8);
  for (auto& [name, p] : a.named_parameters()) {
    Tensor q;
    for (auto& [n2, p2] : b.named_parameters())
      if (n2 == name) q = p2;
    ASSERT_EQ(ga.contains(p), gb.contains(q)) << name;
    if (gb.contains(q)) EXPECT_EQ(ga.get(p).to_vector<double>(), gb.get(q).to_vector<double>());
  }
  EXPECT_EQ(ddp.unused_parameters(),
            (std::vector<std::string>{"head_b.weight", "head_b.bias", "never.weight",
                                      "never.bias"}));
}

TEST(DistLocal, SamplerCoversEachItemOncePerEpoch) {
  for (bool drop : {false, true})
    for (int64_t n : {0, 1, 9, 10, 12}) {
      const int64_t R = 3;
      std::multiset<int64_t> all;
      std::vector<int64_t> first_epoch;
      for (uint64_t epoch : {0u, 1u}) {
        all.clear();
        for (int64_t r = 0; r < R; ++r) {
          data::DistributedSampler s(n, {.num_replicas = R, .rank = r, .seed = 7, .drop_last = drop});
          s.set_epoch(epoch);
          EXPECT_EQ(int64_t(s.indices().size()), s.num_samples());
          for (int64_t i : s.indices()) all.insert(i);
          if (r == 0 && epoch == 0) first_epoch = s.indices();
          if (r == 0 && epoch == 1 && n > 3) EXPECT_NE(s.indices(), first_epoch);
        }
        const int64_t total = drop ? n / R * R : (n + R - 1) / R * R;
        EXPECT_EQ(int64_t(all.size()), total);
        std::set<int64_t> distinct(all.begin(), all.end());
        EXPECT_EQ(int64_t(distinct.size()), std::min(n, total)) << n << " " << drop;
        for (int64_t i : distinct) EXPECT_TRUE(i >= 0 && i < n);
      }
    }
  EXPECT_NE(error_of<ValueError>([] { data::DistributedSampler(4, {.num_replicas = 2, .rank = 2}); })
                .find("expected a rank in [0, 2), found 2"),
            std::string::npos);
}

TEST(DistLocal, ShardFeedsTheDataLoader) {
  std::vector<int64_t> items(10);
  for (int64_t i = 0; i < 10; ++i) items[size_t(i)] = 100 + i;
  auto ds = data::in_memory(items);
  auto s = std::make_shared<data::DistributedSampler>(10, data::DistributedSamplerOptions{
                                                              .num_replicas = 2, .rank = 1,
                                                              .shuffle = false});
  data::DataLoader<int64_t, data::VectorBatcher> loader(data::distributed_shard(ds, s),
                                                        {.batch_size = 2});
  std::vector<int64_t> seen;
  for (auto& b : loader)
    for (int64_t v : b) seen.push_back(v);
  EXPECT_EQ(seen, (std::vector<int64_t>{101, 103, 105, 107, 109}));
  // SamplerEpochs sets the sampler's epoch from the loader's (as the Learner asks for epochs).
  auto shuffled = std::make_shared<data::DistributedSampler>(
      10, data::DistributedSamplerOptions{.num_replicas = 2, .rank = 0, .seed = 4});
  data::DataLoader<int64_t, data::VectorBatcher> l2(data::distributed_shard(ds, shuffled),
                                                    {.batch_size = 5});
  data::SamplerEpochs epochs(l2, shuffled);
  std::vector<std::vector<int64_t>> orders;
  for (uint64_t e : {0u, 1u, 0u}) {
    orders.emplace_back();
    for (auto& b : epochs.epoch(e)) orders.back() = b;
    EXPECT_EQ(shuffled->epoch(), e);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_EQ(orders[0], orders[2]);
}

}  // namespace
}  // namespace ember
