// The web demo's data, made natively: the Fashion-MNIST CNN's weights (the ones the README demo
// trained, or freshly initialised from a seed when there are none), the first N test images and
// labels, and what ember's native flex backend predicts for them (softmax probabilities), which
// the browser test (tests/web) requires the WebAssembly build to match within 1e-5.
// Usage: web OUT_DIR [--weights fashion_mnist.safetensors] [--count N] [--seed S] [--root DIR]
// Writes OUT_DIR/model.safetensors, images.u8 (N x 784), labels.u8 (N), expected.f32 (N x 10).
#include <ember/data/fashion_mnist.h>
#include <ember/ember.h>
#include <ember/models/fashion_cnn.h>
#include <ember/store/safetensors.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace ember;

namespace {
void write(const std::filesystem::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(n));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}
}  // namespace

int main(int argc, char** argv) {
  std::string out, weights, root = data::FashionMNIST::kDefaultRoot;
  int64_t count = 100;
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--weights" && i + 1 < argc) weights = argv[++i];
    else if (a == "--count" && i + 1 < argc) count = std::atoll(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--root" && i + 1 < argc) root = argv[++i];
    else if (out.empty() && a.rfind("--", 0) != 0) out = a;
    else {
      std::cerr << "usage: web OUT_DIR [--weights FILE] [--count N] [--seed S] [--root DIR]\n";
      return 2;
    }
  }
  if (out.empty() || count < 1) {
    std::cerr << "usage: web OUT_DIR [--weights FILE] [--count N] [--seed S] [--root DIR]\n";
    return 2;
  }
  if (!data::FashionMNIST::available(root, false)) {
    std::cerr << "Fashion-MNIST not found in " << root << " (Debian's dataset-fashion-mnist)\n";
    return 1;
  }
  try {
    std::filesystem::create_directories(out);
    DeviceGuard on(Device::flex());  // the backend the WebAssembly build runs
    manual_seed(seed);
    models::FashionCnn net;
    if (!weights.empty()) {
      net.load_state_dict(store::load_safetensors(weights));
    }
    net.eval();
    store::save_safetensors((std::filesystem::path(out) / "model.safetensors").string(),
                            net.state_dict());
    data::FashionMNIST test(root, false);
    count = std::min<int64_t>(count, test.size());
    std::vector<uint8_t> images, labels;
    std::vector<Tensor> xs;
    for (int64_t i = 0; i < count; ++i) {
      auto [img, label] = test.get(i);
      for (float v : img.to_vector<float>()) images.push_back(uint8_t(v * 255.0f + 0.5f));
      labels.push_back(uint8_t(label.item<int64_t>()));
      xs.push_back(img.unsqueeze(0));
    }
    // One image at a time, as the page runs them (batch 1).
    std::vector<float> expected;
    NoGradGuard no_grad;
    int64_t correct = 0;
    for (int64_t i = 0; i < count; ++i) {
      Tensor p = softmax(net(xs[size_t(i)]), 1);
      for (float v : p.to_vector<float>()) expected.push_back(v);
      correct += argmax(p, 1).item<int64_t>() == labels[size_t(i)];
    }
    write(std::filesystem::path(out) / "images.u8", images.data(), images.size());
    write(std::filesystem::path(out) / "labels.u8", labels.data(), labels.size());
    write(std::filesystem::path(out) / "expected.f32", expected.data(),
          expected.size() * sizeof(float));
    std::printf("wrote %lld images to %s (%s weights; native accuracy on them %.1f%%)\n",
                (long long)count, out.c_str(), weights.empty() ? "seeded" : weights.c_str(),
                100.0 * double(correct) / double(count));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
