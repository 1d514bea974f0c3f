// A tour of ember's tensors: creation, broadcasting maths, views, reductions, printing, timing.
#include <chrono>
#include <iostream>

#include <ember/ember.h>
using namespace ember;

int main() {
  manual_seed(0);
  Tensor x = arange(12, {kF32}).reshape({3, 4});
  std::cout << "x =\n" << x << "\n\n";
  std::cout << "x.T (a view, no copy) =\n" << x.t() << "\n\n";
  Tensor y = exp(x / 10.0) * 2 - x.mean({1}, /*keepdim=*/true);
  std::cout << "exp(x / 10) * 2 - row means =\n" << y << "\n\n";
  std::cout << "sum over rows: " << y.sum({0}) << "\n";
  std::cout << "every other column: " << x.slice(1, 0, 4, 2) << "\n\n";

  Tensor big = randn({1 << 22});
  auto t0 = std::chrono::steady_clock::now();
  Tensor r = sqrt(abs(big) + 1).sum();
  auto t1 = std::chrono::steady_clock::now();
  std::cout << "sqrt(|z| + 1).sum() over 4M normals = " << r.item<double>() << " in "
            << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms\n";

  // Gradients are a property of the device: requires_grad_() puts w on flex().autodiff().
  Tensor w = (randn({4, 3}) * 0.1).requires_grad_();
  Tensor target = tensor({0, 2, 1});
  for (int step = 0; step < 8; ++step) {
    Tensor loss = nn::functional::cross_entropy(matmul(x / 11.0, w), target);
    Gradients g = loss.backward();
    std::cout << "step " << step << " loss " << loss.item<float>() << "\n";
    NoGradGuard no_grad;
    w.sub_(w.grad(g) * 2.0);
  }
  return 0;
}
