// Fashion-MNIST end to end: a small CNN trained with Adam on Debian's dataset-fashion-mnist,
// evaluated on the test split, saved to safetensors, reloaded into a fresh model, and used to
// predict a few test images. examples/fashion_mnist/reference.py is the same model in PyTorch.
// The Learner runs the loop: metrics, the terminal dashboard (plain lines when the output is a
// file or a pipe), optional checkpoints and a metric log.
// Usage: fashion_mnist [epochs = 3] [data root] [--checkpoints DIR] [--log metrics.csv] [--seed N]
//        [--device cpu|cpu_eager|flex|cuda|cuda:N|cuda_eager]
#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/ember.h>
#include <ember/models/fashion_cnn.h>
#include <ember/store/load.h>
#include <ember/store/safetensors.h>
#include <ember/train/learner.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using namespace ember;
using Net = models::FashionCnn;

// Test accuracy in percent (no history recorded).
double test_accuracy(Net& net, const data::DatasetPtr<data::Example>& test, Device device) {
  NoGradGuard no_grad;
  net.eval();
  data::DataLoader<data::Example> loader(test, {.batch_size = 1000});
  int64_t correct = 0;
  for (auto& [x, y] : loader)  // the loader's batches are host tensors: move them to the model
    correct += sum(eq(argmax(net(x.to(device)), 1), y.to(device))).item<int64_t>();
  net.train();
  return 100.0 * double(correct) / double(test->size());
}

int main(int argc, char** argv) {
  int64_t epochs = 3;
  uint64_t seed = 0;
  std::string root = data::FashionMNIST::kDefaultRoot, checkpoints, log, device_name = "cpu";
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--checkpoints" || a == "--log") && i + 1 < argc) {
      (a == "--log" ? log : checkpoints) = argv[++i];
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--device" && i + 1 < argc) {
      device_name = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      std::cerr << "usage: fashion_mnist [epochs] [data root] [--checkpoints DIR] [--log FILE] "
                   "[--seed N] [--device cpu|cpu_eager|flex|cuda|cuda:N|cuda_eager]\n";
      return 2;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() > 0) epochs = std::atoll(positional[0].c_str());
  if (positional.size() > 1) root = positional[1];
  if (!data::FashionMNIST::available(root)) {
    std::cerr << "Fashion-MNIST not found in " << root
              << " (install Debian's dataset-fashion-mnist)\n";
    return 1;
  }
  // Everything below is made on this device: the native CPU backend, lazy and fused, unless
  // --device says otherwise (a GPU: "cuda" is cuda:0; Device::cuda throws a clear DeviceError
  // when this build or machine has none).
  Device device = Device::cpu();
  try {
    if (device_name == "flex") {
      device = Device::flex();
    } else if (device_name == "cpu_eager") {
      device = Device::cpu().eager();
    } else if (device_name == "cuda" || device_name == "cuda_eager") {
      device = device_name == "cuda" ? Device::cuda(0) : Device::cuda(0).eager();
    } else if (device_name.rfind("cuda:", 0) == 0 && device_name.size() > 5 &&
               device_name.find_first_not_of("0123456789", 5) == std::string::npos) {
      device = Device::cuda(std::atoi(device_name.c_str() + 5));
    } else if (device_name != "cpu") {
      std::cerr << "unknown device '" << device_name
                << "' (cpu, cpu_eager, flex, cuda, cuda:N or cuda_eager)\n";
      return 2;
    }
  } catch (const Error& e) {  // e.g. no GPU, or a build without CUDA
    std::cerr << e.what() << "\n";
    return 1;
  }
  DeviceGuard on_device(device);
  std::cout << "device " << device << "\n";
  manual_seed(seed);
  auto train_set = std::make_shared<data::FashionMNIST>(root, true);
  auto test_set = std::make_shared<data::FashionMNIST>(root, false);
  std::cout << "train " << train_set->size() << " images, test " << test_set->size() << " images\n";

  Net net;
  std::cout << net.repr() << "\n" << net.num_parameters() << " parameters\n";
  optim::Adam opt(net.parameters(), {.lr = 1e-3});
  data::DataLoader<data::Example> train_loader(
      train_set,
      {.batch_size = 64, .shuffle = true, .seed = seed, .drop_last = true, .workers = 1});
  data::DataLoader<data::Example> test_loader(test_set, {.batch_size = 1000});

  // Checkpoints (with --checkpoints) let an interrupted run continue where it stopped: run the
  // same command again. Ctrl-C (or q in the dashboard) saves one after the current step.
  train::Learner learner(net, opt,
                         {.epochs = epochs, .checkpoint_dir = checkpoints, .log_path = log});
  learner.add_metric(train::accuracy());
  learner.add_valid_metric(train::f1_score({.num_classes = 10}));
  learner.add_train_metric(train::learning_rate());
  learner.add_train_metric(train::throughput());
  train::FitResult result =
      learner.fit(train_loader, &test_loader, train::classification_step(net));
  if (result.interrupted) {
    std::cout << "interrupted"
              << (checkpoints.empty() ? "" : "; run the same command again to resume") << "\n";
    return 130;
  }

  const std::string path = "fashion_mnist.safetensors";
  store::save_safetensors(path, net.state_dict());
  Net restored;
  store::load_into(restored.state_dict(), path);
  std::printf("test accuracy %.2f%%; saved to %s; reloaded model's test accuracy %.2f%%\n",
              test_accuracy(net, test_set, device), path.c_str(),
              test_accuracy(restored, test_set, device));

  NoGradGuard no_grad;
  restored.eval();
  std::cout << "predictions on the first test images:\n";
  for (int64_t i = 0; i < 8; ++i) {
    auto [img, label] = test_set->get(i);
    int64_t pred = argmax(restored(img.unsqueeze(0).to(device)), 1).item<int64_t>();
    std::printf("  #%lld: predicted %-12s true %-12s %s\n", (long long)i,
                data::FashionMNIST::kClasses[size_t(pred)],
                data::FashionMNIST::kClasses[size_t(label.item<int64_t>())],
                pred == label.item<int64_t>() ? "ok" : "miss");
  }
  return 0;
}
