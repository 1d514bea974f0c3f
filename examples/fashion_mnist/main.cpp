// Fashion-MNIST end to end: a small CNN trained with Adam on Debian's dataset-fashion-mnist,
// evaluated on the test split, saved to safetensors, reloaded into a fresh model, and used to
// predict a few test images. examples/fashion_mnist/reference.py is the same model in PyTorch.
// Usage: fashion_mnist [epochs = 3] [data root]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <unistd.h>

#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/ember.h>
#include <ember/store/load.h>
#include <ember/store/safetensors.h>

using namespace ember;
namespace F = ember::nn::functional;

struct Net : nn::Module {
  nn::Conv2d conv1{{.in = 1, .out = 32, .kernel = 3, .padding = 1}};
  nn::Conv2d conv2{{.in = 32, .out = 64, .kernel = 3, .padding = 1}};
  nn::Linear fc1{{.in = 64 * 7 * 7, .out = 128}}, fc2{{.in = 128, .out = 10}};
  Net() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override {
    Tensor h = F::max_pool2d(relu(conv1(x)), {.kernel_size = {2}});
    h = F::max_pool2d(relu(conv2(h)), {.kernel_size = {2}});
    return fc2(relu(fc1(h.flatten(1))));
  }
};

// Test accuracy in percent (no history recorded).
double accuracy(Net& net, const data::DatasetPtr<data::Example>& test) {
  NoGradGuard no_grad;
  net.eval();
  data::DataLoader<data::Example> loader(test, {.batch_size = 1000});
  int64_t correct = 0;
  for (auto& [x, y] : loader) correct += sum(eq(argmax(net(x), 1), y)).item<int64_t>();
  net.train();
  return 100.0 * double(correct) / double(test->size());
}

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string root = argc > 2 ? argv[2] : data::FashionMNIST::kDefaultRoot;
  if (!data::FashionMNIST::available(root)) {
    std::cerr << "Fashion-MNIST not found in " << root
              << " (install Debian's dataset-fashion-mnist)\n";
    return 1;
  }
  manual_seed(0);
  auto train = std::make_shared<data::FashionMNIST>(root, true);
  auto test = std::make_shared<data::FashionMNIST>(root, false);
  std::cout << "train " << train->size() << " images, test " << test->size() << " images\n";

  Net net;
  std::cout << net.repr() << "\n" << net.num_parameters() << " parameters\n";
  optim::Adam opt(net.parameters(), {.lr = 1e-3});
  data::DataLoader<data::Example> loader(
      train, {.batch_size = 64, .shuffle = true, .seed = 0, .drop_last = true, .workers = 1});

  const bool interactive = isatty(1);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t steps = 0;
    for (auto& [x, y] : loader) {
      Tensor loss = F::cross_entropy(net(x), y);
      opt.step(loss.backward());
      loss_sum += loss.item<double>();
      if (++steps % 200 == 0 && interactive) {  // a live line on a terminal only
        std::printf("\r  epoch %d  step %4lld/%lld  loss %.4f", epoch, (long long)steps,
                    (long long)loader.size(), loss_sum / double(steps));
        std::fflush(stdout);
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%sepoch %d: loss %.4f, %.1f s, test accuracy %.2f%%\n",
                interactive ? "\r" : "", epoch, loss_sum / double(std::max<int64_t>(steps, 1)),
                secs, accuracy(net, test));
  }

  const std::string path = "fashion_mnist.safetensors";
  store::save_safetensors(path, net.state_dict());
  Net restored;
  store::load_into(restored.state_dict(), path);
  std::printf("saved to %s; reloaded model's test accuracy %.2f%%\n", path.c_str(),
              accuracy(restored, test));

  NoGradGuard no_grad;
  restored.eval();
  std::cout << "predictions on the first test images:\n";
  for (int64_t i = 0; i < 8; ++i) {
    auto [img, label] = test->get(i);
    int64_t pred = argmax(restored(img.unsqueeze(0)), 1).item<int64_t>();
    std::printf("  #%lld: predicted %-12s true %-12s %s\n", (long long)i,
                data::FashionMNIST::kClasses[size_t(pred)],
                data::FashionMNIST::kClasses[size_t(label.item<int64_t>())],
                pred == label.item<int64_t>() ? "ok" : "miss");
  }
  return 0;
}
