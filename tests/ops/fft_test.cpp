// ember::fft against torch.fft (tests/data/fft/fft.json, from tests/gen/gen_fft.py) on every
// golden device: lengths with small and large prime factors, n, dims, norms and gradients; the
// n-D transforms, frequencies, shifts, windows and stft/istft; long lengths (the six-step and
// Bluestein paths) against direct sums.
#include "ember/fft.h"
#include "ember/ops/fft_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

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
  if (fn == "hfft") return fft::hfft(x, n, dim, norm);
  if (fn == "ihfft") return fft::ihfft(x, n, dim, norm);
  return fft::irfft(x, n, dim, norm);
}

std::optional<Shape> shape_or_none(const json& j) {
  if (j.is_null()) return std::nullopt;
  return Shape(j.get<std::vector<int64_t>>());
}

Tensor run_nd(const json& c, const Tensor& x) {
  const std::string fn = c["fn"].get<std::string>(), norm = c["norm"].get<std::string>();
  const std::optional<Shape> s = shape_or_none(c["s"]), dim = shape_or_none(c["dim"]);
  const Shape d2 = dim.value_or(Shape{-2, -1});
  if (fn == "fft2") return fft::fft2(x, s, d2, norm);
  if (fn == "ifft2") return fft::ifft2(x, s, d2, norm);
  if (fn == "rfft2") return fft::rfft2(x, s, d2, norm);
  if (fn == "irfft2") return fft::irfft2(x, s, d2, norm);
  if (fn == "fftn") return fft::fftn(x, s, dim, norm);
  if (fn == "ifftn") return fft::ifftn(x, s, dim, norm);
  if (fn == "rfftn") return fft::rfftn(x, s, dim, norm);
  if (fn == "hfft2") return fft::hfft2(x, s, d2, norm);
  if (fn == "ihfft2") return fft::ihfft2(x, s, d2, norm);
  if (fn == "hfftn") return fft::hfftn(x, s, dim, norm);
  if (fn == "ihfftn") return fft::ihfftn(x, s, dim, norm);
  return fft::irfftn(x, s, dim, norm);
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

TEST(Fft, NdTransformsMatchTorch) {
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : fft_data()["nd"]) {
      Tensor x = make_tensor(c["input"], gd.device);
      const bool single = x.dtype() == kC64 || x.dtype() == kF32;
      EXPECT_EQ(compare(run_nd(c, x), c["output"], single ? 1e-4 : 1e-9, single ? 1e-4 : 1e-10), "")
          << c["fn"] << " of " << shape_str(x.shape()) << " s=" << c["s"] << " dim=" << c["dim"]
          << " on " << gd.name;
    }
}

TEST(Fft, FrequenciesShiftsAndWindowsMatchTorch) {
  for (const json& c : fft_data()["misc"]) {
    const std::string fn = c["fn"].get<std::string>();
    SCOPED_TRACE(fn + " " + c.value("args", json::object()).dump());
    Tensor y;
    if (fn == "fftshift" || fn == "ifftshift") {
      Tensor x = make_tensor(c["input"], Device::flex());
      y = fn == "fftshift" ? fft::fftshift(x, shape_or_none(c["dim"]))
                           : fft::ifftshift(x, shape_or_none(c["dim"]));
    } else {
      const json& a = c["args"];
      const int64_t n = a["n"].get<int64_t>();
      const TensorOptions f64{kF64};
      if (fn == "fftfreq")
        y = fft::fftfreq(n, a["d"].get<double>(), f64);
      else if (fn == "fftfreq_f32")
        y = fft::fftfreq(n);
      else if (fn == "rfftfreq")
        y = fft::rfftfreq(n, a["d"].get<double>(), f64);
      else {
        const bool periodic = a["periodic"].get<bool>();
        if (fn == "hann_window")
          y = hann_window(n, periodic, f64);
        else if (fn == "hamming_window")
          y = hamming_window(n, periodic, 0.54, 0.46, f64);
        else if (fn == "hamming_window_ab")
          y = hamming_window(n, periodic, 0.5, 0.3, f64);
        else if (fn == "blackman_window")
          y = blackman_window(n, periodic, f64);
        else if (fn == "kaiser_window")
          y = kaiser_window(n, periodic, 12.0, f64);
        else
          y = kaiser_window(n, periodic, 5.0, f64);
      }
    }
    EXPECT_EQ(compare(y, c["output"], 1e-6, 1e-12), "");
  }
  EXPECT_EQ(hann_window(4).dtype(), kF32);
  EXPECT_THROW(hann_window(-1), ValueError);
}

TEST(Fft, StftAndIstftMatchTorch) {
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : fft_data()["stft"]) {
      Tensor x = make_tensor(c["input"], gd.device);
      const bool single = x.dtype() == kF32;
      StftOptions o;
      IstftOptions io;
      if (!c["hop"].is_null()) o.hop_length = io.hop_length = c["hop"].get<int64_t>();
      if (!c["win"].is_null()) o.win_length = io.win_length = c["win"].get<int64_t>();
      if (!c["window"].is_null()) o.window = io.window = make_tensor(c["window"], gd.device);
      o.center = io.center = c["center"].get<bool>();
      o.normalized = io.normalized = c["normalized"].get<bool>();
      if (!c["onesided"].is_null()) o.onesided = io.onesided = c["onesided"].get<bool>();
      if (!c["length"].is_null()) io.length = c["length"].get<int64_t>();
      const int64_t n_fft = c["n_fft"].get<int64_t>();
      Tensor y = stft(x, n_fft, o);
      SCOPED_TRACE(shape_str(x.shape()) + " n_fft " + std::to_string(n_fft) + " on " + gd.name);
      EXPECT_EQ(compare(y, c["output"], single ? 1e-4 : 1e-9, single ? 1e-4 : 1e-10), "");
      o.return_complex = false;  // torch 1.13's real form: [..., freq, frames, 2]
      EXPECT_EQ(compare(stft(x, n_fft, o), c["output_real"], single ? 1e-4 : 1e-9,
                        single ? 1e-4 : 1e-10),
                "");
      EXPECT_EQ(
          compare(istft(y, n_fft, io), c["inverse"], single ? 1e-4 : 1e-9, single ? 1e-4 : 1e-10),
          "");
    }
}

// Lengths past the six-step threshold, a prime whose Bluestein convolution runs six-step, and
// a long real transform, against direct sums at a few frequencies.
TEST(Fft, LongLengthsMatchDirectSums) {
  for (int64_t n : {int64_t(1) << 16, int64_t(65537), int64_t(3) << 15}) {
    SCOPED_TRACE(n);
    Tensor x = randn({n}, TensorOptions{kF64});
    Tensor y = fft::rfft(x), z = fft::fft(x);
    EXPECT_TRUE(allclose(fft::irfft(y, n), x, 1e-9, 1e-11));
    EXPECT_TRUE(allclose(narrow(z, 0, 0, n / 2 + 1), y, 1e-9, 1e-9));
    Tensor j = arange(n, TensorOptions{kF64});
    for (int64_t k : {int64_t(1), int64_t(12345), n / 2}) {
      Tensor ang = j * (double(k) * -2.0 * 3.14159265358979323846 / double(n));
      Tensor re = (x * cos(ang)).sum(), im = (x * sin(ang)).sum();
      Tensor got = view_as_real(narrow(z, 0, k, 1).contiguous());
      EXPECT_NEAR(got.to_vector<double>()[0], re.item<double>(), 1e-8 * std::sqrt(double(n)));
      EXPECT_NEAR(got.to_vector<double>()[1], im.item<double>(), 1e-8 * std::sqrt(double(n)));
    }
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
      {"hfft_ihfft",
       [](const Tensor& z) {
         return pow(fft::hfft(z, 8), 2).sum() + abs(fft::ihfft(real(z))).sum();
       }},
      {"fft2_rfftn",
       [](const Tensor& x) {
         return abs(fft::fft2(x)).sum() + abs(fft::rfftn(x, Shape{4, 6})).sum();
       }},
      {"hfftn_ihfftn",
       [](const Tensor& z) {
         return pow(fft::hfftn(z, Shape{3, 6}), 2).sum() +
                abs(fft::ihfft2(real(z), {}, {-2, -1}, "ortho")).sum();
       }},
      {"irfftn_fftn",
       [](const Tensor& z) {
         return pow(fft::irfftn(z, Shape{4, 5}), 2).sum() +
                abs(fft::fftn(z, {}, Shape{0, 1}, "forward")).sum();
       }},
      {"stft_istft",
       [](const Tensor& x) {
         const Tensor w = hann_window(8, true, {.dtype = kF64, .device = x.device()});
         Tensor s = stft(x, 8, {.hop_length = 2, .window = w});
         return abs(s).sum() +
                pow(istft(s, 8, {.hop_length = 2, .window = w, .length = 20}), 2).sum();
       }},
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
  // the registry ops themselves (complex inputs off the host are refused first, so not goldens)
  EXPECT_THROW(fft::detail::r2c(x.to(kC128), {1}, 0, true), DTypeError);
  EXPECT_THROW(fft::detail::c2r(x.to(kC128), {1}, 0, 10), ShapeError);
}

}  // namespace
}  // namespace ember::test
