// Complex tensors: ember::complex/polar/real/imag/conj/angle, printing and gradients against
// torch (tests/data/complex/functions.json, from tests/gen/gen_complex.py) on every golden
// device, plus element access, creation, promotion, views, casts, errors and safetensors. The
// registry ops' complex cases (tests/data/complex.json) run in the conformance suite; their
// view_as_real / view_as_complex runners are here.
#include <gtest/gtest.h>

#include <complex>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ember/complex.h"
#include "ember/store/safetensors.h"
#include "golden.h"

namespace ember::test {
namespace {

using cf = std::complex<float>;
using cd = std::complex<double>;

EMBER_RUNNER(view_as_real) { return {view_as_real(make_tensor(c.inputs.at(0), dev))}; }
EMBER_RUNNER(view_as_complex) { return {view_as_complex(make_tensor(c.inputs.at(0), dev))}; }

const json& functions() {
  static const json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA) + "/complex/functions.json");
    return json::parse(in);
  }();
  return j;
}

TensorList specs(const json& list, Device dev) {
  TensorList v;
  for (const auto& s : list) v.push_back(make_tensor(s, dev));
  return v;
}

Tensor run_fn(const std::string& fn, const TensorList& in) {
  if (fn == "complex") return complex(in[0], in[1]);
  if (fn == "polar") return polar(in[0], in[1]);
  if (fn == "real") return real(in[0]);
  if (fn == "imag") return imag(in[0]);
  if (fn == "conj") return conj(in[0]);
  if (fn == "angle") return angle(in[0]);
  throw std::runtime_error("unknown function " + fn);
}

TEST(Complex, FunctionsMatchTorchOnEveryDevice) {
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : functions()["functions"]) {
      const std::string fn = c["fn"].get<std::string>();
      Tensor got = run_fn(fn, specs(c["inputs"], gd.device));
      EXPECT_EQ(compare(got, c["output"], 1e-5, 1e-6), "") << fn << " on " << gd.name;
      EXPECT_EQ(got.device().backend(), gd.device.backend());
    }
}

TEST(Complex, PrintsLikeTorch) {
  for (const json& p : functions()["prints"]) {
    std::ostringstream os;
    os << make_tensor(p["input"], Device::flex());
    EXPECT_EQ(os.str(), p["str"].get<std::string>());
  }
}

// The losses of the gradient cases, as the generator wrote them in torch.
using Loss = std::function<Tensor(const TensorList&)>;
const std::map<std::string, Loss>& losses() {
  static const std::map<std::string, Loss> m = {
      {"abs_mul", [](const TensorList& t) { return abs(t[0] * t[1]).sum(); }},
      {"exp_div_real", [](const TensorList& t) { return real(exp(t[0]) / (t[0] + 3)).sum(); }},
      {"log_imag",
       [](const TensorList& t) { return imag(log(t[0])).sum() + real(log(t[0])).sum(); }},
      {"sqrt_view_as_real", [](const TensorList& t) { return view_as_real(sqrt(t[0])).sum(); }},
      {"matmul_abs2", [](const TensorList& t) { return pow(abs(matmul(t[0], t[1])), 2).sum(); }},
      {"real_param", [](const TensorList& t) { return abs(t[0] * t[1] - t[1]).sum(); }},
      {"conj_mul",
       [](const TensorList& t) {
         return real(t[0] * conj(t[0])).sum() + imag(conj(t[0]) * Scalar(cd(0, 2))).sum();
       }},
      {"angle_mean", [](const TensorList& t) { return angle(t[0]).sum() + abs(t[0].mean()); }},
      {"tanh_prod_cumprod",
       [](const TensorList& t) {
         return abs(tanh(t[0])).sum() + real(prod(t[0])) + imag(cumprod(t[0], 0)).sum();
       }},
      {"sum_broadcast", [](const TensorList& t) { return abs((t[0] + t[1]).sum({0})).sum(); }},
      {"slices",
       [](const TensorList& t) {
         return abs(slice(t[0], 0, 1, 3, 1)).sum() + abs(slice(t[0], 0, 0, 4, 2)).sum() +
                real(t[0].select(0, 0));
       }},
      {"inverse_trig",
       [](const TensorList& t) {
         Tensor l;
         using F = Tensor (*)(const Tensor&);
         for (F f : {F(asin), F(acos), F(atan), F(asinh), F(acosh), F(atanh)}) {
           Tensor y = f(t[0]), term = (real(y) + square(imag(y))).sum();
           l = l.defined() ? l + term : term;
         }
         return l;
       }},
      {"complex_polar",
       [](const TensorList& t) {
         return imag(polar(t[0], t[1])).sum() + abs(complex(t[0], t[1])).sum();
       }},
  };
  return m;
}

TEST(Complex, GradientsMatchTorchOnEveryDevice) {
  for (const GoldenDevice& gd : golden_devices())
    for (const json& c : functions()["grads"]) {
      const std::string name = c["grad"].get<std::string>();
      SCOPED_TRACE(name + " on " + gd.name);
      TensorList in = specs(c["inputs"], gd.device);
      for (Tensor& t : in) t.requires_grad_();
      Tensor loss = losses().at(name)(in);
      EXPECT_NEAR(loss.item<double>(), c["loss"].get<double>(), 1e-9);
      Gradients g = loss.backward();
      for (size_t i = 0; i < in.size(); ++i)
        EXPECT_EQ(compare(in[i].grad(g), c["grads"][i], 1e-8, 1e-10), "") << "input " << i;
    }
}

// Central differences of the loss in each real coordinate: for a complex input the gradient is
// dL/dx + i dL/dy (PyTorch's convention for a real loss).
TEST(Complex, GradientsMatchFiniteDifferences) {
  const double h = 1e-6;
  for (const json& c : functions()["grads"]) {
    const std::string name = c["grad"].get<std::string>();
    SCOPED_TRACE(name);
    const Loss& f = losses().at(name);
    TensorList in = specs(c["inputs"], Device::flex());
    for (Tensor& t : in) t = t.contiguous();
    TensorList leaves;
    for (const Tensor& t : in) leaves.push_back(t.detach().clone().requires_grad_());
    Gradients g = f(leaves).backward();
    for (size_t i = 0; i < in.size(); ++i) {
      const bool cplx = in[i].is_complex();
      Tensor pairs = cplx ? view_as_real(in[i]).contiguous() : in[i].reshape({-1, 1});
      Tensor grad = leaves[i].grad(g);
      std::vector<double> want = (cplx ? view_as_real(grad) : grad).to_vector<double>();
      std::vector<double> base = pairs.to_vector<double>();
      for (size_t k = 0; k < base.size(); ++k) {
        auto at = [&](double d) {
          std::vector<double> v = base;
          v[k] += d;
          Tensor p = tensor(v, pairs.shape(), DType::F64);
          TensorList args = in;
          args[i] = cplx ? view_as_complex(p) : p.reshape(in[i].shape());
          return f(args).item<double>();
        };
        const double fd = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(want[k], fd, 1e-5 + 1e-5 * std::fabs(fd))
            << "input " << i << " coordinate " << k;
      }
    }
  }
}

TEST(Complex, ElementAccessThroughStdComplex) {
  Tensor z = tensor(std::vector<cf>{{1, 2}, {3, -4}}, {2});
  EXPECT_EQ(z.dtype(), kC64);
  EXPECT_EQ(z.itemsize(), 8u);
  EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{{1, 2}, {3, -4}}));
  EXPECT_EQ(z.to_vector<cd>(), (std::vector<cd>{{1, 2}, {3, -4}}));
  EXPECT_EQ(z.select(0, 1).item<cf>(), cf(3, -4));
  Scalar s = z.select(0, 0).item();
  EXPECT_TRUE(s.is_complex());
  EXPECT_EQ(s.to_double(), 1);
  EXPECT_EQ(s.imag(), 2);
  Tensor w = tensor({cd(0.5, -1)});
  EXPECT_EQ(w.dtype(), kC128);
  EXPECT_EQ(w.itemsize(), 16u);
  EXPECT_THROW(z.select(0, 0).item<float>(), DTypeError);  // 1+2j does not fit a float
  EXPECT_EQ(tensor(std::vector<cf>{{2, 0}}, {1}).item<float>(), 2.f);
  EXPECT_EQ(dtype_from_name("complex64"), kComplexFloat);
  EXPECT_EQ(dtype_from_name("c128"), kComplexDouble);
  EXPECT_EQ(dtype_name(kC128), "complex128");
}

TEST(Complex, CreationOnEveryDevice) {
  for (const GoldenDevice& gd : golden_devices()) {
    SCOPED_TRACE(gd.name);
    const Device d = gd.device;
    EXPECT_EQ(zeros({2}, {kC64, d}).to_vector<cf>(), (std::vector<cf>{0, 0}));
    EXPECT_EQ(ones({2, 1}, {kC128, d}).to_vector<cd>(), (std::vector<cd>{1, 1}));
    Tensor f = full({3}, cd(1, -1), {{}, d});
    EXPECT_EQ(f.dtype(), kC64);  // a complex value gives the default complex dtype
    EXPECT_EQ(f.to_vector<cf>(), (std::vector<cf>(3, cf(1, -1))));
    EXPECT_EQ(full({2}, 3.0, {kC128, d}).to_vector<cd>(), (std::vector<cd>(2, cd(3, 0))));
    EXPECT_EQ(scalar_tensor(cd(1, 2), {}, d).to_vector<cf>(), (std::vector<cf>{{1, 2}}));
    Tensor z = full({2, 2}, cd(0, 1), {kC128, d});
    EXPECT_EQ(zeros_like(z).dtype(), kC128);
    EXPECT_EQ(ones_like(z).to_vector<cd>(), (std::vector<cd>(4, 1)));
    EXPECT_EQ(full_like(z, cd(2, 2)).to_vector<cd>(), (std::vector<cd>(4, cd(2, 2))));
    EXPECT_EQ(empty({2, 3}, {kC64, d}).shape(), Shape({2, 3}));
    EXPECT_EQ(empty_like(z).dtype(), kC128);
    EXPECT_EQ(zeros({0}, {kC64, d}).numel(), 0);
  }
}

TEST(Complex, PromotionFollowsTorch) {
  EXPECT_EQ(promote_types(kC64, kF64), kC128);
  EXPECT_EQ(promote_types(kF16, kC64), kC64);
  EXPECT_EQ(promote_types(kI64, kC64), kC64);
  EXPECT_EQ(promote_types(kBool, kC128), kC128);
  EXPECT_EQ(promote_types(kC64, kC128), kC128);
  const cd j(0, 1);
  EXPECT_EQ((ones({2}) + j).dtype(), kC64);
  EXPECT_EQ((ones({2}, kF64) + j).dtype(), kC128);
  EXPECT_EQ((ones({2}, kI64) * j).dtype(), kC64);
  EXPECT_EQ((ones({2}, kC64) + 2.5).dtype(), kC64);
  EXPECT_EQ((ones({2}, kC64) + ones({2}, kF64)).dtype(), kC128);
  EXPECT_EQ((ones({2}, kC64) + scalar_tensor(1.0, kF64)).dtype(), kC64);  // a 0-d f64 is weak
  EXPECT_EQ((ones({2}) + scalar_tensor(j, kC128)).dtype(), kC128);  // higher category, 0-d
  EXPECT_EQ((ones({2}, kC64) / 2).dtype(), kC64);
}

TEST(Complex, PartsAreWritableViews) {
  for (const GoldenDevice& gd : golden_devices()) {
    SCOPED_TRACE(gd.name);
    Tensor z = zeros({3}, {kC64, gd.device});
    Tensor re = real(z), im = z.imag();
    EXPECT_TRUE(re.is_alias_of(z));
    EXPECT_EQ(re.dtype(), kF32);
    EXPECT_EQ(re.strides(), Shape({2}));
    re.fill_(2);
    im.copy_(tensor({1.f, 2.f, 3.f}).to(gd.device));
    EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{{2, 1}, {2, 2}, {2, 3}}));
    Tensor pairs = view_as_real(z);
    EXPECT_TRUE(pairs.is_alias_of(z));
    pairs.select(1, 1).mul_(-1);
    EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{{2, -1}, {2, -2}, {2, -3}}));
    // in-place arithmetic and copies from real tensors
    z.add_(cd(1, 1));
    EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{{3, 0}, {3, -1}, {3, -2}}));
    z.mul_(2);
    EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{{6, 0}, {6, -2}, {6, -4}}));
    z.copy_(tensor({1.f, 2.f, 3.f}).to(gd.device));
    EXPECT_EQ(z.to_vector<cf>(), (std::vector<cf>{1, 2, 3}));
    // a transposed complex tensor's parts are views too
    Tensor t = full({2, 3}, cd(1, 2), {kC128, gd.device}).transpose(0, 1);
    EXPECT_EQ(real(t).shape(), Shape({3, 2}));
    EXPECT_EQ(imag(t).to_vector<double>(), std::vector<double>(6, 2));
  }
}

TEST(Complex, CastsAndTheirDocumentedChoices) {
  Tensor z = tensor(std::vector<cf>{{1.5f, 2}, {-3, 4}}, {2});
  EXPECT_EQ(z.to(kF32).to_vector<float>(), (std::vector<float>{1.5f, -3}));  // drops imag
  EXPECT_EQ(z.to(kI64).to_vector<int64_t>(), (std::vector<int64_t>{1, -3}));
  EXPECT_FALSE(z.to(kF32).is_alias_of(z));
  EXPECT_EQ(tensor({1.f, 2.f}).to(kC128).to_vector<cd>(), (std::vector<cd>{1, 2}));
  // in place: a complex result cannot be written into a real tensor (torch's can_cast)
  Tensor x = ones({2});
  EXPECT_THROW(x.add_(z), DTypeError);
  EXPECT_NO_THROW(z.add_(x));
}

TEST(Complex, UnsupportedOpsNameTheOpAndTheDtype) {
  Tensor z = ones({3}, kC64);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const DTypeError& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  for (auto [op, f] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"relu", [&] { relu(z); }},
           {"lt", [&] { lt(z, z); }},
           {"erf", [&] { erf(z); }},
           {"softmax", [&] { nn::functional::softmax(z, 0); }},
           {"randn", [&] { randn({2}, TensorOptions{kC64}); }},
           {"max", [&] { z.max(); }},
           {"cummax", [&] { cummax(z, 0); }}}) {
    const std::string m = message(f);
    EXPECT_NE(m.find("complex64"), std::string::npos) << op << ": " << m;
    EXPECT_NE(m.find("[" + op + "]"), std::string::npos) << op << ": " << m;
  }
  EXPECT_THROW(imag(ones({2})), DTypeError);
  EXPECT_THROW(complex(ones({2}), ones({2}, kF64)), DTypeError);
  EXPECT_THROW(complex(ones({2}, kI64), ones({2}, kI64)), DTypeError);
  EXPECT_THROW(sum(z, {}, false, kF32), DTypeError);
  EXPECT_THROW(div(z, z, "floor"), DTypeError);
  // lazy devices refuse in the same words, at the call
  EXPECT_THROW(relu(ones({3}, {kC64, Device::cpu()})), DTypeError);
}

TEST(Complex, LazyCpuMatchesFlex) {
  Tensor a = full({4, 3}, cd(0.5, -1.5), kC64), b = tensor({1.f, -2.f, 3.f});
  auto chain = [](const Tensor& x, const Tensor& y) {
    return (((x * y + 1) / (x - 2)).abs() + real(exp(x))).sum({1});
  };
  Tensor want = chain(a, b);
  Tensor got = chain(a.to(Device::cpu()), b.to(Device::cpu()));
  EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-5, 1e-6));
}

TEST(Complex, SafetensorsRoundTrip) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_complex_test.safetensors").string();
  Tensor a = tensor(std::vector<cf>{{1, 2}, {3, -4}, {0.5f, 0}}, {3});
  Tensor b = full({2, 3}, cd(-1, 0.25), kC128).transpose(0, 1);  // saved contiguous
  store::save_safetensors(path, {{"a", a}, {"b", b}});
  store::TensorMap m = store::load_safetensors(path);
  auto at = [&](const std::string& k) {
    for (const auto& [name, t] : m)
      if (name == k) return t;
    throw std::runtime_error("no tensor " + k);
  };
  EXPECT_EQ(at("a").dtype(), kC64);
  EXPECT_EQ(at("a").to_vector<cf>(), a.to_vector<cf>());
  EXPECT_EQ(at("b").dtype(), kC128);
  EXPECT_EQ(at("b").shape(), Shape({3, 2}));
  EXPECT_EQ(at("b").to_vector<cd>(), b.to_vector<cd>());
  EXPECT_EQ(store::safetensors_dtype_name(kC64), "C64");
  std::filesystem::remove(path);
}

TEST(Complex, ReadsSafetensorsOfAnotherWriter) {
  store::TensorMap m =
      store::load_safetensors(std::string(EMBER_TEST_DATA) + "/complex/complex.safetensors");
  ASSERT_EQ(m.size(), functions()["safetensors"].size());
  for (size_t i = 0; i < m.size(); ++i) {
    const json& want = functions()["safetensors"][i];
    EXPECT_EQ(m[i].first, want["name"].get<std::string>());
    EXPECT_EQ(compare(m[i].second, want["tensor"], 0, 0), "") << m[i].first;
  }
}

TEST(Complex, GradientsFlowToComplexLeaves) {
  Tensor z = tensor(std::vector<cd>{{1, 2}, {-3, 0.5}}, {2}).requires_grad_();
  Tensor w = tensor(std::vector<double>{2, -1}, {2}).requires_grad_();
  Gradients g = (abs(z * w) + real(z.transpose(0, 0))).sum().backward();
  // d|zw|/dz* convention: grad = w^2 z / |zw| + 1 for the real part
  std::vector<cd> gz = z.grad(g).to_vector<cd>();
  EXPECT_NEAR(gz[0].real(), 2 * 1 / std::sqrt(5.0) + 1, 1e-12);
  EXPECT_NEAR(gz[0].imag(), 2 * 2 / std::sqrt(5.0), 1e-12);
  EXPECT_EQ(w.grad(g).dtype(), kF64);
}

}  // namespace
}  // namespace ember::test
