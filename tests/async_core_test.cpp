// What the core gives lazy and asynchronous devices: pending storage materialised on host reads,
// scalar operands as graph constants, random state drawn when an op is called, checks deferred
// to the next sync, placed outputs, hashable attrs, and the eager/lazy device forms.
#include <gtest/gtest.h>

#include <deque>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/ops/modes.h"
#include "ember/tensor_impl.h"

namespace ember {
namespace {

// A deferring layer that queues nothing itself: it only makes a device lazy for Device tests.
class DeferringLayer : public Layer {
 public:
  const char* name() const override { return "defer"; }
  TensorList call(const OpCall& c, const Next& next) override { return next(c); }
  bool defers() const override { return true; }
  void sync(Device) override { ++syncs; }
  int syncs = 0;
};

// A toy queue: storages it marks pending are written (filled with `value`) when materialised.
class ToyQueue : public PendingWrite {
 public:
  void materialize(Storage& s) override {
    ++materialized;
    auto* p = static_cast<float*>(s.data);
    for (size_t i = 0; i < s.nbytes / sizeof(float); ++i) p[i] = value;
    s.pending.store(nullptr);
    for (auto& f : after) f();
    after.clear();
  }
  void on_ready(Storage&, std::function<void()> fn) override { after.push_back(std::move(fn)); }
  float value = 7;
  int materialized = 0;
  std::vector<std::function<void()>> after;
};

TEST(AsyncCore, HostReadsMaterialisePendingStorage) {
  ToyQueue q;
  Tensor t = empty({4});
  t.impl()->storage->pending.store(&q);
  EXPECT_TRUE(detail::is_pending(t));
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, 7.f));
  EXPECT_EQ(q.materialized, 1);
  EXPECT_FALSE(detail::is_pending(t));
  // A kernel's input is readied by the dispatcher before the kernel runs.
  Tensor u = empty({3});
  u.impl()->storage->pending.store(&q);
  q.value = 2;
  Tensor v = u + 1;
  EXPECT_EQ(v.to_vector<float>(), std::vector<float>(3, 3.f));
  EXPECT_EQ(q.materialized, 2);
  // Raw data access and item() are sync points too.
  Tensor w = empty({});
  w.impl()->storage->pending.store(&q);
  q.value = 5;
  EXPECT_EQ(*w.data_ptr<float>(), 5.f);
}

TEST(AsyncCore, ScalarOperandsAllocateNoDeviceBuffer) {
  Tensor x = ones({1024});
  Tensor warm = x * 0.5;  // the allocator's first use of this size
  warm = Tensor();
  const int64_t before = detail::live_storage_bytes();
  Tensor y = x * 0.5 + 3;  // two scalar operands, one intermediate
  EXPECT_EQ(detail::live_storage_bytes() - before, int64_t(y.nbytes()));
  EXPECT_EQ(y.to_vector<float>()[0], 3.5f);
  // Promotion still treats them as weak types: f16 stays f16, ints become the default float.
  EXPECT_EQ((ones({2}, {kF16}) * 0.5).dtype(), kF16);
  EXPECT_EQ((arange(3) * 0.5).dtype(), kF32);
  EXPECT_EQ((arange(3) + 2).dtype(), kI64);
}

TEST(AsyncCore, ConstantsFoldThroughCasts) {
  Tensor c = detail::constant_tensor(2.75, kF64, Device::flex(), true);
  Tensor i = cast(c, kI32);
  EXPECT_TRUE(detail::is_constant(i));
  EXPECT_FALSE(i.impl()->wrapped_number);  // a cast result is a plain 0-d tensor
  EXPECT_EQ(i.item<int32_t>(), 2);
  EXPECT_EQ(cast(i, kF32).item<float>(), 2.f);  // the value as the dtype holds it
}

// Records the attrs of every random op, so a call can be replayed later.
class RecordingLayer : public Layer {
 public:
  const char* name() const override { return "record"; }
  TensorList call(const OpCall& c, const Next& next) override {
    if (op_def(c.op).category == OpCategory::Random) calls.push_back({c.op, c.attrs});
    return next(c);
  }
  std::vector<std::pair<OpId, Attrs>> calls;
};

TEST(AsyncCore, RandomOpsDrawTheirStateWhenCalled) {
  auto rec = std::make_shared<RecordingLayer>();
  Device dev = Device::flex().with_layer(rec);
  manual_seed(11);
  Tensor a = rand({5}, {.device = dev});
  Tensor b = randn({5}, {.device = dev});
  ASSERT_EQ(rec->calls.size(), 2u);
  EXPECT_NE(rec->calls[0].second.offset, rec->calls[1].second.offset);
  // Replaying a recorded call after other draws gives exactly the eager values: the state is in
  // the call, not taken from the generator when the kernel runs.
  Tensor more = rand({100}, {.device = dev});
  Tensor again = dispatch1(rec->calls[0].first, rec->calls[0].second, {});
  EXPECT_TRUE(equal(again.to(Device::flex()), a.to(Device::flex())));
  // dropout draws once when called, and its mask uses that state.
  manual_seed(3);
  Tensor x = ones({64});
  Tensor d1 = nn::functional::dropout(x, 0.5, true);
  manual_seed(3);
  Tensor d2 = nn::functional::dropout(x, 0.5, true);
  EXPECT_TRUE(equal(d1, d2));
}

TEST(AsyncCore, DeferredChecksRunWhenTheirQueueRuns) {
  // Eager: checked at once.
  EXPECT_THROW(detail::deferred_check(tensor({1.f, -1.f}) > 0, "myop", "positive"), ValueError);
  EXPECT_NO_THROW(detail::deferred_check(tensor({1.f, 2.f}) > 0, "myop", "positive"));
  // (On a lazy device the check is queued with its input: tests/fusion covers it.)
}

TEST(AsyncCore, RepeatInterleaveWithOutputSizeNeedsNoSync) {
  Tensor x = tensor({1.f, 2.f, 3.f});
  Tensor r = tensor({2, 0, 3});
  Tensor want = tensor({1.f, 1.f, 3.f, 3.f, 3.f});
  EXPECT_TRUE(equal(repeat_interleave(x, r, 0, 5), want));
  EXPECT_TRUE(equal(repeat_interleave(x, r), want));
  EXPECT_TRUE(equal(repeat_interleave(x, tensor({2}), 0, 6), repeat_interleave(x, 2, 0)));
  try {
    repeat_interleave(x, r, 0, 4);
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[repeat_interleave]"), std::string::npos);
  }
  EXPECT_THROW(repeat_interleave(x, tensor({1, -1, 2})), ValueError);
}

TEST(AsyncCore, PlacedOutputsAreWrittenInPlace) {
  Tensor a = tensor({1.f, 2.f}), b = tensor({10.f, 20.f});
  Tensor out = empty({2});
  Attrs none;
  Tensor ins[] = {a, b};
  MetaList meta;
  meta.add({2}, kF32);
  Tensor placed[] = {out};
  OpCall call{OpId::add, none, ins, meta, Device::flex(), nullptr, placed};
  TensorList r = run_on_backend(call);
  EXPECT_EQ(r[0].impl(), out.impl());
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{11, 22}));
  // A kernel that makes its own result (clamp lowers to maximum/minimum) is copied in.
  MetaList m3;
  m3.add({2}, kF32);
  Tensor lo = detail::constant_tensor(15.0, kF64, Device::flex(), true);
  Tensor cins[] = {b, lo, Tensor()};
  OpCall clamp_call{OpId::clamp, none, cins, m3, Device::flex(), nullptr, placed};
  r = run_on_backend(clamp_call);
  EXPECT_EQ(r[0].impl(), out.impl());
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{15, 20}));
}

TEST(AsyncCore, AttrsAreHashableAndComparable) {
  Attrs a, b;
  a.ints = {1, 2};
  b.ints = {1, 2};
  a.s[0] = 0.5;
  b.s[0] = 0.5;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  b.mode = uint8_t(ops::Reduction::Sum);
  EXPECT_FALSE(a == b);
  EXPECT_NE(a.hash(), b.hash());
  b = a;
  b.s[0] = int64_t(0);  // same number, another kind: another call
  EXPECT_FALSE(a == b);
  b = a;
  b.offset = 1;
  EXPECT_FALSE(a == b);
}

TEST(AsyncCore, ModesAreParsedAtTheFrontEnd) {
  try {
    div(ones({2}), ones({2}), "round");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[div]"), std::string::npos);
  }
  // A hand-built call with an out-of-range mode is refused by inference, naming the op.
  Attrs bad;
  bad.mode = 9;
  EXPECT_THROW(dispatch1(OpId::div, bad, {ones({2}), ones({2})}), ValueError);
  EXPECT_TRUE(equal(einsum("ij,jk->ik", {eye(2), eye(2)}), eye(2)));
  EXPECT_THROW(einsum("ij,jk->i,k", {eye(2), eye(2)}), ValueError);
}

TEST(AsyncCore, EagerDropsDeferringLayersAndSyncReachesThem) {
  auto lazy = std::make_shared<DeferringLayer>();
  Device d = Device::flex().with_layer(lazy).autodiff();
  EXPECT_TRUE(d.is_lazy());
  EXPECT_FALSE(d.eager().is_lazy());
  EXPECT_TRUE(d.eager().has_autodiff());
  synchronize(d);
  EXPECT_EQ(lazy->syncs, 1);
  EXPECT_EQ(device_count(Backend::Flex), 1);
}

TEST(AsyncCore, SynchronizeThrowsErrorsKernelsDeferred) {
  detail::defer_error(Device::flex(), std::make_exception_ptr(IndexError("[gather] index 9")));
  EXPECT_THROW(synchronize(Device::flex()), IndexError);
  EXPECT_NO_THROW(synchronize(Device::flex()));  // reported once
}

TEST(AsyncCore, ClipOnTheDeviceMatchesTheHostForm) {
  Tensor a = tensor({3.0, 4.0}).requires_grad_();
  auto run = [&](bool device) {
    Gradients g = (a * a).sum().backward();
    double total = device ? optim::clip_grad_norm_on_device(g, {a}, 1.0).item<double>()
                          : optim::clip_grad_norm(g, {a}, 1.0);
    return std::make_pair(total, g.get(a).to_vector<double>());
  };
  EXPECT_EQ(run(true), run(false));
}

}  // namespace
}  // namespace ember
