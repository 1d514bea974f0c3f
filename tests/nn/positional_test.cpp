// Positional encodings against torch (tests/data/modules/positional.json, from
// tests/gen/gen_positional.py): sinusoidal tables and outputs, a learned table, rotary embeddings
// in both pairing conventions with offsets and gradients; non-persistent tables; errors.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "golden.h"
#include "nn/module_golden.h"

namespace ember {
namespace {

using test::json;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

class PositionalGolden : public ::testing::Test {
 protected:
  void SetUp() override { g = test::load_module_golden("positional"); }
  Tensor t(const json& spec) { return test::make_tensor(spec, Device::flex()); }
  json g;
};

TEST_F(PositionalGolden, Sinusoidal) {
  const json& s = g["sinusoidal"];
  nn::SinusoidalPositionalEncoding enc({.d_model = 6, .max_len = 10});
  EXPECT_EQ(test::compare(enc.pe, s["pe"], 1e-6, 1e-6), "");
  EXPECT_EQ(test::compare(enc(t(s["x"]), 3), s["y_offset3"], 1e-6, 1e-6), "");
  nn::SinusoidalPositionalEncoding bf({.d_model = 6, .max_len = 10, .batch_first = true});
  EXPECT_EQ(test::compare(bf(t(s["xb"])), s["yb"], 1e-6, 1e-6), "");
  nn::SinusoidalPositionalEncoding ts({.d_model = 6, .max_len = 4, .max_timescale = 100.0});
  EXPECT_EQ(test::compare(ts.pe, s["pe_timescale100"], 1e-6, 1e-6), "");
  // [S, E] without a batch dim takes rows 0..S-1.
  Tensor x2 = t(s["x"]).select(1, 0);
  EXPECT_TRUE(allclose(enc(x2), x2 + enc.pe.narrow(0, 0, 4)));

  // The table is a non-persistent buffer: listed and moved, but not saved.
  EXPECT_TRUE(enc.state_dict().empty());
  ASSERT_EQ(enc.named_buffers().size(), 1u);
  EXPECT_EQ(enc.named_buffers()[0].first, "pe");
  enc.load_state_dict({});
  enc.to(kF64);
  EXPECT_EQ(enc.pe.dtype(), kF64);
  EXPECT_EQ(enc.repr(),
            "SinusoidalPositionalEncoding(d_model=6, max_len=10, max_timescale=10000.0, "
            "batch_first=False)");
}

TEST_F(PositionalGolden, Learned) {
  const json& l = g["learned"];
  nn::LearnedPositionalEncoding enc({.max_len = 8, .d_model = 4});
  ASSERT_EQ(enc.state_dict().size(), 1u);
  EXPECT_EQ(enc.state_dict()[0].first, "weight");
  enc.load_state_dict({{"weight", t(l["weight"])}});
  Tensor y = enc(t(l["x"]), 2);
  EXPECT_EQ(test::compare(y.detach(), l["y_offset2"], 1e-6, 1e-6), "");
  // Only the rows used get a gradient: each row once per batch element.
  Tensor gw = enc.weight.grad(y.sum().backward());
  std::vector<float> v = gw.to_vector<float>();
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(v[size_t(r * 4 + c)], (r >= 2 && r < 5) ? 2.f : 0.f);
}

TEST_F(PositionalGolden, RotaryBothConventions) {
  const json& r = g["rotary"];
  for (bool interleaved : {true, false}) {
    const json& want = r[interleaved ? "interleaved" : "half"];
    SCOPED_TRACE(interleaved ? "interleaved" : "half");
    nn::RotaryEncoding rope({.d_model = 8, .max_sequence_length = 16, .interleaved = interleaved});
    Tensor x = t(r["x"]).requires_grad_();
    Tensor y = rope(x);
    EXPECT_EQ(test::compare(y.detach(), want["y"], 1e-5, 1e-6), "");
    EXPECT_EQ(test::compare(rope(x, 7).detach(), want["y_offset7"], 1e-5, 1e-6), "");
    Gradients gr = (y * t(r["w"])).sum().backward();
    EXPECT_EQ(test::compare(x.grad(gr), want["grad"], 1e-5, 1e-6), "");
    nn::RotaryEncoding r500(
        {.d_model = 8, .max_sequence_length = 5, .theta = 500.0, .interleaved = interleaved});
    EXPECT_EQ(test::compare(r500(x).detach(), want["y_theta500"], 1e-5, 1e-6), "");
  }
}

TEST(RotaryEncoding, CacheOffsetAndRelativePositions) {
  manual_seed(1);
  nn::RotaryEncoding rope({.d_model = 4, .max_sequence_length = 32});
  Tensor x = randn({2, 6, 4});
  // Decoding step by step with an offset gives the rows of the whole-sequence result.
  Tensor whole = rope(x);
  EXPECT_TRUE(allclose(rope(x.narrow(1, 3, 3), 3), whole.narrow(1, 3, 3), 1e-6, 1e-6));
  // A rotation keeps norms, and q_m . k_n depends only on m - n.
  EXPECT_TRUE(allclose(square(whole).sum({-1}), square(x).sum({-1}), 1e-5, 1e-6));
  Tensor q = randn({1, 4}), k = randn({1, 4});
  auto dot_at = [&](int64_t m, int64_t n) {
    return (rope(q, m) * rope(k, n)).sum().item<double>();
  };
  EXPECT_NEAR(dot_at(5, 2), dot_at(13, 10), 1e-5);
  EXPECT_NEAR(dot_at(0, 0), (q * k).sum().item<double>(), 1e-6);
  // f16 and f64 inputs keep their dtype; f64 agrees with f32 to the table's precision.
  EXPECT_EQ(rope(x.to(kF16)).dtype(), kF16);
  Tensor whole64 = rope(x.to(kF64));
  EXPECT_EQ(whole64.dtype(), kF64);
  EXPECT_TRUE(allclose(whole64.to(kF32), whole, 1e-5, 1e-6));
  nn::SinusoidalPositionalEncoding sin_pe({.d_model = 4, .max_len = 8});
  EXPECT_EQ(sin_pe(x.to(kF16)).dtype(), kF16);
  EXPECT_TRUE(rope.state_dict().empty());
  EXPECT_EQ(rope.named_buffers().size(), 2u);
  auto copy = std::dynamic_pointer_cast<nn::RotaryEncoding>(rope.clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(allclose((*copy)(x), whole));
}

TEST(PositionalEncodings, Errors) {
  EXPECT_THROW(nn::RotaryEncoding({.d_model = 7, .max_sequence_length = 8}), ValueError);
  EXPECT_NE(message_of([] {
              nn::RotaryEncoding({.d_model = 7, .max_sequence_length = 8});
            }).find("[RotaryEncoding] expected an even d_model > 0, found 7"),
            std::string::npos);
  EXPECT_THROW(nn::RotaryEncoding({.d_model = 8}), ValueError);  // no max_sequence_length
  nn::RotaryEncoding rope({.d_model = 8, .max_sequence_length = 4});
  EXPECT_THROW(rope(randn({3, 6})), ShapeError);
  EXPECT_THROW(rope(randn({8})), ShapeError);
  EXPECT_THROW(rope(randn({5, 8})), ShapeError);  // longer than max_sequence_length
  EXPECT_THROW(rope(randn({2, 8}), 3), ShapeError);
  EXPECT_THROW(rope(randn({2, 8}), -1), ShapeError);
  EXPECT_NE(message_of([&] {
              rope(randn({2, 3, 6}));
            }).find("[RotaryEncoding] expected x [..., S, 8], found [2, 3, 6]"),
            std::string::npos);

  EXPECT_THROW(nn::SinusoidalPositionalEncoding({.d_model = 5}), ValueError);
  nn::SinusoidalPositionalEncoding sin({.d_model = 4, .max_len = 3});
  EXPECT_THROW(sin(randn({4, 1, 4})), ShapeError);
  EXPECT_THROW(sin(randn({2, 1, 6})), ShapeError);
  EXPECT_THROW(sin(randn({2, 1, 1, 4})), ShapeError);
  EXPECT_NE(message_of([&] {
              sin(randn({2, 1, 6}));
            }).find("[SinusoidalPositionalEncoding]"),
            std::string::npos);
  EXPECT_THROW(nn::LearnedPositionalEncoding({.max_len = 0, .d_model = 4}), ValueError);
  nn::LearnedPositionalEncoding learned({.max_len = 3, .d_model = 4, .batch_first = true});
  EXPECT_THROW(learned(randn({1, 4, 4})), ShapeError);
}

}  // namespace
}  // namespace ember
