// Complex linalg beyond the forward goldens (tests/data/linalg_complex.json): gradients of
// gauge-invariant losses against torch 1.13 (tests/data/linalg_complex/grads.json, from
// tests/gen/gen_linalg_complex.py) on every golden device and against central differences in
// each real coordinate (PyTorch's convention: dL/dx + i dL/dy), result dtypes, and errors that
// name the op, the batch element and the failing minor. The complex composites (trace, diag,
// cross, norms, matrix_power, lstsq, pinv) and lu_solve, matrix_exp are in the same files.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "ember/complex.h"
#include "golden.h"

namespace ember::test {
namespace {

const json& grads() {
  static const json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA) + "/linalg_complex/grads.json");
    return json::parse(in);
  }();
  return j;
}

Tensor mH(const Tensor& x) { return conj(x).transpose(-2, -1); }
// The generator's f (complex) and g (real) reductions.
Tensor f(const Tensor& z) { return real(z).sum() + square(imag(z)).sum(); }
Tensor g(const Tensor& x) { return (x + x * x * 0.5).sum(); }
Tensor from_x(const Tensor& x) { return matmul(x, mH(x)) + eye(x.size(-1), {}, real(x).options()) * 3.0; }
Tensor h_of(const Tensor& x) { return (x + mH(x)) * 0.5; }

Tensor svd_loss(const Tensor& a) {
  auto [u, s, vh] = linalg::svd(a, false);
  return g(s) + f(matmul(u, vh)) + g(abs(u));
}
Tensor eigh_loss(const Tensor& a, const std::string& uplo = "L") {
  auto [w, v] = linalg::eigh(a, uplo);
  return g(w) + g(abs(v)) + f(matmul(v * w.unsqueeze(-2), mH(v)) * 0.5);
}
// The generator's ones_c (1 - 0.5i everywhere) and lower3 (a fixed lower-triangular matrix).
Tensor ones_c(const Shape& s, const Tensor& like) {
  Tensor o = ones(s, real(like).options());
  return complex(o, o * -0.5);
}
Tensor lower3(const Tensor& like) {
  TensorOptions o = real(like).options();
  Tensor f = full({3, 3}, 1.0, o);
  return complex(tril(f * 0.5, -1) + eye(3, {}, o) * 3.0, tril(f * 0.25, -1));
}
// The generator's LU3 (its well((3, 3))) is read from the lu_solve_LU case; pivots 1, 2, 3.
Tensor identity_pivots(const Tensor& like) {
  return tensor(std::vector<int32_t>{1, 2, 3}, {3}).to(like.device());
}
Tensor lu3(const Tensor& like) {
  for (const json& c : grads()["grads"])
    if (c["grad"] == "lu_solve_LU") return make_tensor(c["inputs"][0], like.device());
  return Tensor();
}
Tensor qr_loss(const Tensor& a) {
  auto [q, r] = linalg::qr(a);
  return f(q) + f(r);
}

using Loss = std::function<Tensor(const Tensor&)>;
const std::map<std::string, Loss>& losses() {
  static const std::map<std::string, Loss> m = {
      {"inv", [](const Tensor& a) { return f(linalg::inv(a)); }},
      {"solve_A", [](const Tensor& a) { return f(linalg::solve(a, ones_c({3, 2}, a))); }},
      {"solve_B_right",
       [](const Tensor& b) { return f(linalg::solve(lower3(b) + mH(lower3(b)), b, false)); }},
      {"det", [](const Tensor& a) { return f(linalg::det(a)); }},
      {"slogdet", [](const Tensor& a) {
         auto [s, l] = linalg::slogdet(a);
         return f(s) + g(l);
       }},
      {"cholesky_of_x", [](const Tensor& x) { return f(linalg::cholesky(from_x(x))); }},
      {"cholesky_upper_of_x", [](const Tensor& x) { return f(linalg::cholesky(from_x(x), true)); }},
      {"cholesky_direct", [](const Tensor& a) { return f(linalg::cholesky(a)); }},
      {"qr_tall", qr_loss},
      {"qr_square_batched", qr_loss},
      {"qr_wide", qr_loss},
      {"svd_tall", svd_loss},
      {"svd_wide_batched", svd_loss},
      {"svd_square", svd_loss},
      {"svdvals", [](const Tensor& a) { return g(linalg::svdvals(a)); }},
      {"eigh_of_x", [](const Tensor& x) { return eigh_loss(h_of(x)); }},
      {"eigh_upper_of_x", [](const Tensor& x) { return eigh_loss(h_of(x), "U"); }},
      {"solve_triangular_A",
       [](const Tensor& a) { return f(linalg::solve_triangular(a, ones_c({3, 2}, a), true)); }},
      {"solve_triangular_B_right",
       [](const Tensor& b) { return f(linalg::solve_triangular(lower3(b), b, false, false)); }},
      {"eigvalsh_of_x", [](const Tensor& x) { return g(linalg::eigvalsh(h_of(x))); }},
      {"trace", [](const Tensor& a) { return f(trace(a)); }},
      {"diag_vector", [](const Tensor& x) { return f(diag(x, 1)); }},
      {"diag_embed", [](const Tensor& x) { return f(diag_embed(x, -1, 0, 2)); }},
      {"cross",
       [](const Tensor& a) { return f(linalg::cross(a, ones_c({4, 3}, a) + a.flip({0}))); }},
      {"vector_norm_2", [](const Tensor& x) { return g(linalg::vector_norm(x, 2, {1})); }},
      {"vector_norm_3.5", [](const Tensor& x) { return g(linalg::vector_norm(x, 3.5)); }},
      {"vector_norm_inf",
       [](const Tensor& x) { return g(linalg::vector_norm(x, INFINITY, {-1})); }},
      {"matrix_norm_fro", [](const Tensor& a) { return g(linalg::matrix_norm(a, "fro")); }},
      {"matrix_norm_nuc", [](const Tensor& a) { return g(linalg::matrix_norm(a, "nuc")); }},
      {"matrix_norm_1", [](const Tensor& a) { return g(linalg::matrix_norm(a, 1.0)); }},
      {"matrix_norm_-inf",
       [](const Tensor& a) { return g(linalg::matrix_norm(a, -double(INFINITY))); }},
      {"matrix_norm_2", [](const Tensor& a) { return g(linalg::matrix_norm(a, 2.0)); }},
      {"matrix_norm_-2", [](const Tensor& a) { return g(linalg::matrix_norm(a, -2.0)); }},
      {"matrix_power_3", [](const Tensor& a) { return f(linalg::matrix_power(a, 3)); }},
      {"matrix_power_-2", [](const Tensor& a) { return f(linalg::matrix_power(a, -2)); }},
      {"lstsq_A",
       [](const Tensor& a) {
         return f(std::get<0>(linalg::lstsq(a, ones_c({5, 2}, a), std::nullopt, "gelsd")));
       }},
      {"lstsq_B", [](const Tensor& b) { return f(std::get<0>(linalg::lstsq(lower3(b), b))); }},
      {"lu_solve_LU",
       [](const Tensor& l) {
         return f(linalg::lu_solve(l, identity_pivots(l), ones_c({3, 2}, l)));
       }},
      {"lu_solve_LU_adjoint_right",
       [](const Tensor& l) {
         return f(linalg::lu_solve(l, identity_pivots(l), ones_c({2, 3}, l), false, true));
       }},
      {"lu_solve_B",
       [](const Tensor& b) {
         return f(linalg::lu_solve(lu3(b), identity_pivots(b), b, true, true));
       }},
      {"matrix_exp", [](const Tensor& a) { return f(linalg::matrix_exp(a)); }},
      {"pinv_tall", [](const Tensor& a) { return f(linalg::pinv(a)); }},
      {"pinv_wide_batched", [](const Tensor& a) { return f(linalg::pinv(a)); }},
      {"norm_3", [](const Tensor& x) { return g(norm(x, 3, {1})); }},
      {"var", [](const Tensor& x) { return g(var(x, {1})); }},
      {"std", [](const Tensor& x) { return g(ember::std(x, {0})); }},
      {"einsum",
       [](const Tensor& a) {
         Tensor d = einsum("bii->b", {a.narrow(-1, 0, 3)}).unsqueeze(-1).unsqueeze(-1);
         return f(einsum("bij,jk->bik", {a, ones_c({3, 2}, a)}) + d);
       }},
      {"tril_triu",
       [](const Tensor& a) {
         return f(tril(a, -1) * 2.0 + triu(a, 1) * std::complex<double>(1, 1));
       }},
      {"pinv_hermitian_of_x",
       [](const Tensor& x) {
         Tensor h = h_of(x) + eye(3, {}, real(x).options()) * 3.0;
         return f(linalg::pinv(h, std::nullopt, std::nullopt, true));
       }},
  };
  return m;
}

TEST(LinalgComplex, GradientsMatchTorchOnEveryDevice) {
  for (const GoldenDevice& gd : golden_devices()) {
    if (gd.device.backend() != Backend::Flex && gd.device.backend() != Backend::Cpu) continue;
    for (const json& c : grads()["grads"]) {
      const std::string name = c["grad"].get<std::string>();
      SCOPED_TRACE(name + " on " + gd.name);
      Tensor a = make_tensor(c["inputs"][0], gd.device.autodiff()).requires_grad_();
      Tensor loss = losses().at(name)(a);
      EXPECT_NEAR(loss.item<double>(), c["loss"].get<double>(), 1e-8 * (1 + std::fabs(c["loss"].get<double>())));
      Gradients gr = loss.backward();
      EXPECT_EQ(compare(a.grad(gr), c["grads"][0], 1e-7, 1e-9), "");
    }
  }
}

// Central differences in each real coordinate; cholesky_direct is left out (its torch gradient
// is not the derivative of a function that reads only one triangle).
TEST(LinalgComplex, GradientsMatchFiniteDifferences) {
  const double h = 1e-6;
  for (Device dev : {Device::flex(), Device::cpu()})
    for (const json& c : grads()["grads"]) {
      const std::string name = c["grad"].get<std::string>();
      if (name == "cholesky_direct") continue;
      SCOPED_TRACE(name + " on " + dev.str());
      const Loss& loss = losses().at(name);
      Tensor x = make_tensor(c["inputs"][0], dev).contiguous();
      Tensor leaf = x.to(dev.autodiff()).detach().clone().requires_grad_();
      Gradients gr = loss(leaf).backward();
      std::vector<double> want = view_as_real(leaf.grad(gr)).to_vector<double>();
      Tensor pairs = view_as_real(x).contiguous();
      std::vector<double> base = pairs.to_vector<double>();
      for (size_t k = 0; k < base.size(); ++k) {
        auto at = [&](double d) {
          std::vector<double> v = base;
          v[k] += d;
          return loss(view_as_complex(tensor(v, pairs.shape(), DType::F64).to(dev))).item<double>();
        };
        const double fd = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(want[k], fd, 1e-5 + 1e-5 * std::fabs(fd)) << "coordinate " << k;
      }
    }
}

TEST(LinalgComplex, ResultDtypes) {
  for (Device dev : {Device::flex(), Device::cpu()})
    for (DType d : {DType::C64, DType::C128}) {
      const DType part = complex_part_dtype(d);
      Tensor a = (eye(3, {}, {.dtype = part}) * 2.0).to(d).to(dev);
      EXPECT_EQ(linalg::det(a).dtype(), d);
      auto [sgn, logabs] = linalg::slogdet(a);
      EXPECT_EQ(sgn.dtype(), d);
      EXPECT_EQ(logabs.dtype(), part);
      EXPECT_NEAR(logabs.item<double>(), 3 * std::log(2.0), 1e-6);
      auto [u, s, vh] = linalg::svd(a);
      EXPECT_EQ(u.dtype(), d);
      EXPECT_EQ(s.dtype(), part);
      EXPECT_EQ(linalg::svdvals(a).dtype(), part);
      auto [w, v] = linalg::eigh(a);
      EXPECT_EQ(w.dtype(), part);
      EXPECT_EQ(v.dtype(), d);
      EXPECT_EQ(linalg::eigvalsh(a).dtype(), part);
      EXPECT_EQ(linalg::cholesky(a).dtype(), d);
      EXPECT_EQ(std::get<1>(linalg::qr(a)).dtype(), d);
      // logdet of a complex matrix is complex: log|det| + i arg(det)
      EXPECT_EQ(logdet(a).dtype(), d);
      // the norms, lstsq's residuals and singular values, and matrix_rank are real
      EXPECT_EQ(linalg::vector_norm(a).dtype(), part);
      EXPECT_EQ(linalg::matrix_norm(a, -2.0).dtype(), part);
      Tensor tall = cat({a, a}, 0);
      auto [x, res, rank, sv] = linalg::lstsq(tall, tall, std::nullopt, "gelsd");
      EXPECT_EQ(x.dtype(), d);
      EXPECT_EQ(res.dtype(), part);
      EXPECT_EQ(rank.dtype(), DType::I64);
      EXPECT_EQ(sv.dtype(), part);
      EXPECT_EQ(linalg::matrix_rank(a).item<int64_t>(), 3);
      EXPECT_EQ(linalg::pinv(a).dtype(), d);
      EXPECT_EQ(trace(a).dtype(), d);
      EXPECT_NEAR(std::abs(trace(a).item<std::complex<double>>() - 6.0), 0.0, 1e-6);
      EXPECT_EQ(linalg::matrix_power(a, -1).dtype(), d);
      EXPECT_EQ(linalg::matrix_exp(a).dtype(), d);
      auto [lu, piv] = linalg::lu_factor(a);
      EXPECT_EQ(lu.dtype(), d);
      EXPECT_EQ(piv.dtype(), DType::I32);
    }
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LinalgComplex, ErrorsNameTheOpTheBatchElementAndTheMinor) {
  using cd = std::complex<double>;
  for (Device dev : {Device::flex(), Device::cpu()}) {
    // [[2, i, 0], [-i, 2, 3], [0, 3, 1]]: its leading minor of order 3 is not positive-definite
    Tensor bad = tensor(std::vector<cd>{2, {0, 1}, 0, {0, -1}, 2, 3, 0, 3, 1}, {3, 3}).to(dev);
    Tensor good = (eye(3, {}, {.dtype = DType::F64}) * 2.0).to(DType::C128).to(dev);
    const std::string m = message_of([&] { linalg::cholesky(stack({good, bad})); });
    EXPECT_NE(m.find("linalg_cholesky"), std::string::npos) << m;
    EXPECT_NE(m.find("batch element 1"), std::string::npos) << m;
    EXPECT_NE(m.find("leading minor of order 3"), std::string::npos) << m;
    EXPECT_THROW(linalg::cholesky(bad, true), ValueError);
    const std::string sq = message_of([&] { linalg::det(ones({2, 3}, {.dtype = DType::C64}).to(dev)); });
    EXPECT_NE(sq.find("linalg_det"), std::string::npos) << sq;
    EXPECT_NE(sq.find("square"), std::string::npos) << sq;
    EXPECT_THROW(linalg::eigh(ones({2, 3}, {.dtype = DType::C64}).to(dev)), ShapeError);
    EXPECT_THROW(linalg::slogdet(ones({3}, {.dtype = DType::C128}).to(dev)), ShapeError);
    // det of a singular complex matrix is 0 and slogdet's sign 0, logabsdet -inf (torch's)
    Tensor sing = tensor(std::vector<cd>{{1, 1}, {2, 2}, 1, 2}, {2, 2}).to(dev);
    EXPECT_EQ(std::abs(linalg::det(sing).item<cd>()), 0.0);
    auto [sg, la] = linalg::slogdet(sing);
    EXPECT_EQ(sg.item<cd>(), cd(0, 0));
    EXPECT_EQ(la.item<double>(), -INFINITY);
    Tensor eye2 = eye(2, {}, {.dtype = DType::F64}).to(DType::C128).to(dev);
    const std::string inv = message_of([&] { linalg::inv(stack({eye2, sing})); });
    EXPECT_NE(inv.find("linalg_inv"), std::string::npos) << inv;
    EXPECT_NE(inv.find("batch element 1"), std::string::npos) << inv;
    EXPECT_NE(inv.find("singular"), std::string::npos) << inv;
    // mixed real and complex operands are promoted (ember extends torch here)
    Tensor x = linalg::solve(good, ones({3, 1}, {.dtype = DType::F32}).to(dev));
    EXPECT_EQ(x.dtype(), DType::C128);
    EXPECT_NEAR(std::abs(x.to_vector<cd>()[0] - cd(0.5, 0)), 0.0, 1e-12);
    // lu_factor names the batch element and the zero pivot; lu_solve's operands share a dtype
    const std::string lu = message_of([&] { linalg::lu_factor(stack({eye2, sing})); });
    EXPECT_NE(lu.find("linalg_lu_factor"), std::string::npos) << lu;
    EXPECT_NE(lu.find("batch element 1"), std::string::npos) << lu;
    auto [LU, piv] = linalg::lu_factor(good);
    Tensor b64 = ones({3, 1}, {.dtype = DType::C64}).to(dev);
    EXPECT_THROW(linalg::lu_solve(LU, piv, b64), DTypeError);
    EXPECT_THROW(linalg::matrix_exp(ones({2, 3}, {.dtype = DType::C64}).to(dev)), ShapeError);
    // complex norms are real; a real dtype for a complex input is refused
    EXPECT_EQ(linalg::matrix_norm(good, "nuc").dtype(), DType::F64);
    EXPECT_THROW(linalg::vector_norm(good, 2, {}, false, DType::F64), DTypeError);
  }
}

}  // namespace
}  // namespace ember::test
