// ember::fft against torch.fft (tests/data/fft/fft.json, from tests/gen/gen_fft.py) on every
// golden device: lengths with small and large prime factors, n, dims, norms and gradients.
#include <gtest/gtest.h>

#include <fstream>

#include "ember/fft.h"
#include "golden.h"

namespace ember::test {
namespace {

const json& fft_data() {
  static const json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA) + "/fft/fft.json");
    return json::parse(in);
  }();
  return j;
}

Tensor run(const json& c, const Tensor& x) {
  const std::string fn = c["fn"].get<std::string>();
  std::optional<int64_t> n;
  if (!c["n"].is_null()) n = c["n"].get<int64_t>();
  const int64_t dim = c["dim"].get<int64_t>();
  const std::string norm = c["norm"].get<std::string>();
  if (fn == "fft") return fft::fft(x, n, dim, norm);
  if (fn == "ifft") return fft::ifft(x, n, dim, norm);
  if (fn == "rfft") return fft::rfft(x, n, dim, norm);
  return fft::irfft(x, n, dim, norm);
}

TEST(Fft, MatchesTorchOnEveryDevice) {
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : fft_data()["cases"]) {
      Tensor x = make_tensor(c["input"], gd.device);
      const bool single = x.dtype() == kC64 || x.dtype() == kF32;
      Tensor y = run(c, x);
      EXPECT_EQ(compare(y, c["output"], single ? 1e-4 : 1e-9, single ? 1e-4 : 1e-10), "")
          << c["fn"] << " of " << shape_str(x.shape()) << " n=" << c["n"] << " dim=" << c["dim"]
          << " norm=" << c["norm"] << " on " << gd.name;
      EXPECT_EQ(y.device().backend(), gd.device.backend());
    }
}

TEST(Fft, GradientsMatchTorch) {
  const std::map<std::string, std::function<Tensor(const Tensor&)>> losses = {
      {"fft_abs",
       [](const Tensor& z) {
         return abs(fft::fft(z)).sum() + real(fft::ifft(z, {}, -1, "ortho")).sum();
       }},
      {"fft_bluestein", [](const Tensor& z) { return pow(abs(fft::fft(z, 70)), 2).sum(); }},
      {"rfft_abs", [](const Tensor& x) { return abs(fft::rfft(x)).sum(); }},
      {"irfft_square",
       [](const Tensor& z) { return pow(fft::irfft(z, 9), 2).sum() + fft::irfft(z).sum(); }},
  };
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : fft_data()["grads"]) {
      const std::string name = c["grad"].get<std::string>();
      SCOPED_TRACE(name + " on " + gd.name);
      Tensor x = make_tensor(c["inputs"][0], gd.device).requires_grad_();
      Tensor loss = losses.at(name)(x);
      EXPECT_NEAR(loss.item<double>(), c["loss"].get<double>(), 1e-8);
      Gradients g = loss.backward();
      EXPECT_EQ(compare(x.grad(g), c["grads"][0], 1e-8, 1e-9), "");
    }
}

TEST(Fft, RoundTripsAndRefusesBadArguments) {
  Tensor x = randn({3, 1000}, TensorOptions{kF64});  // 1000 = 2^3 5^3
  EXPECT_TRUE(allclose(fft::ifft(fft::fft(x)), x.to(kC128), 1e-10, 1e-12));
  EXPECT_TRUE(allclose(fft::irfft(fft::rfft(x), 1000), x, 1e-10, 1e-12));
  Tensor p = randn({1009}, TensorOptions{kF64});  // a prime: Bluestein
  EXPECT_TRUE(allclose(fft::irfft(fft::rfft(p), 1009), p, 1e-9, 1e-11));
  EXPECT_THROW(fft::fft(x, 0), ValueError);
  EXPECT_THROW(fft::fft(x, {}, -1, "sideways"), ValueError);
  EXPECT_THROW(fft::rfft(x.to(kC64)), DTypeError);
  EXPECT_THROW(fft::fft(scalar_tensor(1.0)), ShapeError);
  EXPECT_THROW(fft::fft(x, {}, 2), IndexError);
}

}  // namespace
}  // namespace ember::test
