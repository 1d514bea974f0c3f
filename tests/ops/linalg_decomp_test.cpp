// linalg beyond the goldens: gradients through the tape checked by central differences in f64
// (symmetric inputs parametrised as (X + X^T)/2, so a perturbation stays symmetric), error
// messages naming the op and the batch element, and the Tensor method forms.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ember/ember.h"

namespace ember {
namespace {

using Fn = std::function<Tensor(const Tensor&)>;

Tensor f64(const Shape& s, uint64_t seed, double shift = 0) {
  manual_seed(seed);
  Tensor x = randn(s, {.dtype = DType::F64});
  if (shift != 0) x = x + eye(s.back(), {}, {.dtype = DType::F64}) * shift;
  return x;
}

// Largest |autodiff - central difference| of <W, f(x)> over x's elements, W random.
double grad_error(const Fn& f, const Tensor& x0, const Device& dev) {
  Tensor x = x0.to(dev.autodiff()).clone().requires_grad_();
  Tensor y = f(x);
  manual_seed(99);
  Tensor w = randn(y.shape(), {.dtype = DType::F64}).to(dev);
  Gradients g = (y * w).sum().backward();
  std::vector<double> ga = g.get(x).to(Device::flex()).to_vector<double>();
  std::vector<double> xv = x0.to_vector<double>();
  const double eps = 1e-6;
  double worst = 0;
  auto at = [&](const std::vector<double>& v) {
    NoGradGuard ng;
    return (f(tensor(v, x0.shape()).to(dev)) * w).sum().item<double>();
  };
  for (size_t i = 0; i < xv.size(); ++i) {
    std::vector<double> p = xv, m = xv;
    p[i] += eps;
    m[i] -= eps;
    const double fd = (at(p) - at(m)) / (2 * eps);
    worst = std::max(worst, std::abs(fd - ga[i]) / std::max(1.0, std::abs(fd)));
  }
  return worst;
}

Tensor sym(const Tensor& x) { return (x + x.transpose(-2, -1)) * 0.5; }
Tensor spd(const Tensor& x) {
  return matmul(x, x.transpose(-2, -1)) + eye(x.size(-1), {}, x.options()) * 3.0;
}

struct GradCase {
  const char* name;
  Fn f;
  Tensor x;
};

std::vector<GradCase> grad_cases() {
  const Tensor sq = f64({2, 3, 3}, 1, 3.0), tall = f64({5, 3}, 2), wide = f64({3, 5}, 3);
  const Tensor b = f64({3, 2}, 4);
  return {
      {"inv", [](const Tensor& a) { return linalg::inv(a); }, sq},
      {"solve_A", [b](const Tensor& a) { return linalg::solve(a, b.to(a.device())); }, sq},
      {"solve_B", [sq](const Tensor& x) { return linalg::solve(sq.to(x.device()), x); }, f64({2, 3, 2}, 5)},
      {"solve_right", [](const Tensor& a) { return linalg::solve(a, ones({2, 3}, a.options()), false); }, sq},
      {"det", [](const Tensor& a) { return linalg::det(a); }, sq},
      {"slogdet", [](const Tensor& a) { return std::get<1>(linalg::slogdet(a)); }, sq},
      {"logdet", [](const Tensor& a) { return logdet(spd(a)); }, sq},
      {"cholesky", [](const Tensor& x) { return linalg::cholesky(spd(x)); }, sq},
      {"cholesky_upper", [](const Tensor& x) { return linalg::cholesky(spd(x), true); }, sq},
      {"qr_tall_Q", [](const Tensor& a) { return std::get<0>(linalg::qr(a)); }, tall},
      {"qr_tall_R", [](const Tensor& a) { return std::get<1>(linalg::qr(a)); }, tall},
      {"qr_wide", [](const Tensor& a) { auto [q, r] = linalg::qr(a); return cat({q.flatten(), r.flatten()}); }, wide},
      {"qr_complete_wide", [](const Tensor& a) { auto [q, r] = linalg::qr(a, "complete"); return cat({q.flatten(), r.flatten()}); }, wide},
      {"qr_square_both", [](const Tensor& a) { auto [q, r] = linalg::qr(a); return q + r; }, sq},
      {"svd_tall", [](const Tensor& a) { auto [u, s, vh] = linalg::svd(a, false); return cat({u.flatten(), s, vh.flatten()}); }, tall},
      {"svd_wide", [](const Tensor& a) { auto [u, s, vh] = linalg::svd(a, false); return cat({u.flatten(), s, vh.flatten()}); }, wide},
      {"svd_square", [](const Tensor& a) { auto [u, s, vh] = linalg::svd(a); return cat({u.flatten(), s.flatten(), vh.flatten()}); }, sq},
      {"svd_full_tall_S", [](const Tensor& a) { return std::get<1>(linalg::svd(a, true)); }, tall},
      {"svdvals", [](const Tensor& a) { return linalg::svdvals(a); }, wide},
      {"eigh", [](const Tensor& x) { auto [w, v] = linalg::eigh(sym(x)); return cat({w.flatten(), v.flatten()}); }, sq},
      {"eigh_upper", [](const Tensor& x) { auto [w, v] = linalg::eigh(sym(x), "U"); return v; }, sq},
      {"eigvalsh", [](const Tensor& x) { return linalg::eigvalsh(sym(x)); }, sq},
      {"lstsq", [](const Tensor& a) { return std::get<0>(linalg::lstsq(a, ones({5, 2}, a.options()))); }, tall},
      {"lstsq_gelsd_residuals", [](const Tensor& a) { return std::get<1>(linalg::lstsq(a, ones({5, 2}, a.options()), std::nullopt, std::string("gelsd"))); }, tall},
      {"pinv_tall", [](const Tensor& a) { return linalg::pinv(a); }, tall},
      {"pinv_wide", [](const Tensor& a) { return linalg::pinv(a); }, wide},
      {"pinv_hermitian", [](const Tensor& x) { return linalg::pinv(sym(x), std::nullopt, std::nullopt, true); }, sq},
      {"lu_solve_LU", [piv = std::get<1>(linalg::lu_factor(sq))](const Tensor& lu) {
         return linalg::lu_solve(lu, piv.to(lu.device()), ones({2, 3, 2}, lu.options()));
       }, std::get<0>(linalg::lu_factor(sq))},
      {"lu_solve_B_adjoint", [sq](const Tensor& x) {
         auto [lu, piv] = linalg::lu_factor(sq.to(x.device()));
         return linalg::lu_solve(lu, piv, x, true, true);
       }, f64({2, 3, 2}, 6)},
      {"lu_solve_right", [sq](const Tensor& x) {
         auto [lu, piv] = linalg::lu_factor(sq.to(x.device()));
         return linalg::lu_solve(lu, piv, x, false);
       }, f64({2, 2, 3}, 7)},
      {"solve_triangular_A", [b](const Tensor& a) { return linalg::solve_triangular(a, b.to(a.device()), true); }, sq.select(0, 0)},
      {"solve_triangular_unit_right", [](const Tensor& a) { return linalg::solve_triangular(a, ones({2, 3}, a.options()), false, false, true); }, sq.select(0, 1)},
      {"solve_triangular_B", [sq](const Tensor& x) { return linalg::solve_triangular(sq.to(x.device()), x, false); }, f64({2, 3, 2}, 8)},
      {"matrix_norm_fro", [](const Tensor& a) { return linalg::matrix_norm(a); }, sq},
      {"matrix_norm_nuc", [](const Tensor& a) { return linalg::matrix_norm(a, "nuc"); }, tall},
      {"matrix_norm_2", [](const Tensor& a) { return linalg::matrix_norm(a, 2.0); }, tall},
      {"matrix_norm_1", [](const Tensor& a) { return linalg::matrix_norm(a, 1.0); }, tall},
      {"matrix_norm_inf", [](const Tensor& a) { return linalg::matrix_norm(a, INFINITY); }, wide},
      {"vector_norm", [](const Tensor& x) { return linalg::vector_norm(x, 3.0, {1}); }, tall},
      {"cross", [](const Tensor& x) { return linalg::cross(x, ones({5, 3}, x.options()) * 2.0 - x.flip({0})); }, tall},
      {"trace", [](const Tensor& a) { return trace(a); }, wide},
      {"diag", [](const Tensor& a) { return diag(a, 1); }, wide},
      {"diag_vector", [](const Tensor& x) { return diag(x, -1); }, f64({4}, 9)},
      {"diag_embed", [](const Tensor& x) { return diag_embed(x, 1, 0, 2); }, tall},
      {"matrix_power_3", [](const Tensor& a) { return linalg::matrix_power(a, 3); }, sq},
      {"matrix_power_-2", [](const Tensor& a) { return linalg::matrix_power(a, -2); }, sq},
      {"matrix_exp", [](const Tensor& a) { return linalg::matrix_exp(a); }, sq * 0.5},
      // eig's losses must not depend on the eigenvectors' phases (torch refuses those): |V|
      {"eig", [](const Tensor& a) { auto [w, v] = linalg::eig(a); return cat({view_as_real(w).flatten(), abs(v).flatten()}); }, sq},
      {"eigvals", [](const Tensor& a) { return view_as_real(linalg::eigvals(a)).flatten(); }, sq},
      {"eig_complex", [](const Tensor& x) {
         auto [w, v] = linalg::eig(complex(x.select(0, 0), x.select(0, 1)));
         return cat({view_as_real(w).flatten(), abs(v).flatten()});
       }, f64({2, 3, 3}, 10)},
      {"solve_complex", [](const Tensor& x) {
         Tensor a = complex(x.select(0, 0), x.select(0, 1)), b = complex(x.select(0, 1), x.select(0, 0));
         return view_as_real(linalg::solve(a, b.narrow(-1, 0, 2))).flatten();
       }, f64({2, 3, 3}, 11, 3.0)},
      {"inv_complex", [](const Tensor& x) { return view_as_real(linalg::inv(complex(x.select(0, 0), x.select(0, 1)))).flatten(); }, f64({2, 3, 3}, 12, 3.0)},
  };
}

class LinalgGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(LinalgGrad, MatchesFiniteDifferences) {
  const Device dev = GetParam() == "cpu" ? Device::cpu() : Device::flex();
  for (const GradCase& c : grad_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_LT(grad_error(c.f, c.x, dev), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, LinalgGrad, ::testing::Values("flex", "cpu"));

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LinalgErrors, SingularAndNotPositiveDefiniteNameTheOpAndTheBatchElement) {
  for (Device dev : {Device::flex(), Device::cpu()}) {
    Tensor singular = tensor(std::vector<double>{1, 0, 0, 1, 1, 2, 2, 4}, {2, 2, 2}).to(dev);
    EXPECT_THROW(linalg::inv(singular), ValueError);
    const std::string m = message_of([&] { linalg::inv(singular); });
    EXPECT_NE(m.find("linalg_inv"), std::string::npos) << m;
    EXPECT_NE(m.find("batch element 1"), std::string::npos) << m;
    EXPECT_NE(m.find("singular"), std::string::npos) << m;
    EXPECT_THROW(linalg::solve(singular, ones({2, 2, 1}, {.dtype = DType::F64}).to(dev)), ValueError);
    const std::string c = message_of([&] { linalg::cholesky(-eye(3, {}, {.dtype = DType::F64}).to(dev)); });
    EXPECT_NE(c.find("leading minor of order 1"), std::string::npos) << c;
    EXPECT_THROW(linalg::lu_factor(singular), ValueError);
    // det of a singular matrix is 0, not an error (torch's behaviour).
    EXPECT_EQ(linalg::det(singular).to_vector<double>()[1], 0.0);
  }
  EXPECT_THROW(linalg::solve(eye(3), ones({4})), ShapeError);
  EXPECT_THROW(linalg::inv(ones({2, 3})), ShapeError);
  EXPECT_THROW(linalg::inv(ones({2, 2}, {.dtype = DType::I64})), DTypeError);
  EXPECT_THROW(linalg::qr(ones({3, 3}), "thin"), ValueError);
  EXPECT_THROW(linalg::lstsq(ones({3, 3}), ones({3, 1}), std::nullopt, std::string("gelsx")), ValueError);
  EXPECT_THROW(linalg::matrix_norm(ones({3, 3}), 3.0), ValueError);
  EXPECT_THROW(linalg::lu_factor(ones({3, 3}), false), NotImplementedError);
}

TEST(LinalgMethods, LibtorchNamesAndDefaults) {
  Tensor a = tensor(std::vector<double>{4, 1, 1, 3}, {2, 2});
  EXPECT_NEAR(a.det().item<double>(), 11.0, 1e-12);
  EXPECT_NEAR(a.logdet().item<double>(), std::log(11.0), 1e-12);
  EXPECT_NEAR(matmul(a, a.inverse()).trace().item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(a.cholesky().to_vector<double>()[0], 2.0, 1e-12);
  EXPECT_NEAR(a.matrix_power(2).to_vector<double>()[0], 17.0, 1e-12);
  EXPECT_NEAR(a.pinverse().to_vector<double>()[0], a.inverse().to_vector<double>()[0], 1e-12);
  EXPECT_EQ(a.diag().to_vector<double>(), (std::vector<double>{4, 3}));
  EXPECT_EQ(a.diag_embed().shape(), Shape({2, 2, 2}));
  EXPECT_NEAR(zeros({2, 2}).matrix_exp().to_vector<float>()[0], 1.0f, 1e-6);
  auto [sgn, logabs] = a.slogdet();
  EXPECT_EQ(sgn.item<double>(), 1.0);
  Tensor u = tensor(std::vector<float>{1, 0, 0, 0, 1, 0}, {2, 3});
  EXPECT_EQ(u[0].cross(u[1]).to_vector<float>(), (std::vector<float>{0, 0, 1}));
}

}  // namespace
}  // namespace ember
