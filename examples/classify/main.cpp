// Classifies an image with a zoo model from a PyTorch (.pt) or safetensors checkpoint, or a
// model folder (config.json + weights), and prints the top-5 classes: "index label probability".
// The image is read with stb_image (PNG, JPEG, BMP, PPM, ...) and preprocessed as torchvision's
// ImageNet evaluation transform does (resize 256, center crop 224, normalise).
// Usage: classify IMAGE WEIGHTS [--arch resnet50] [--labels FILE] [--top 5] [--resize 256]
//                 [--crop 224] [--device cpu|flex]
#include <ember/ember.h>
#include <ember/models/vision.h>
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "preprocess.h"

using namespace ember;

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string arch, labels_path, device_name = "cpu";
  int64_t top = 5, resize = 256, crop = 224;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--arch" && has_value) arch = argv[++i];
    else if (a == "--labels" && has_value) labels_path = argv[++i];
    else if (a == "--device" && has_value) device_name = argv[++i];
    else if (a == "--top" && has_value) top = std::atoll(argv[++i]);
    else if (a == "--resize" && has_value) resize = std::atoll(argv[++i]);
    else if (a == "--crop" && has_value) crop = std::atoll(argv[++i]);
    else if (a.rfind("--", 0) == 0) positional.clear(), positional.resize(3);  // usage below
    else positional.push_back(a);
  }
  if (positional.size() != 2 || top <= 0 || crop <= 0 || resize < crop) {
    std::cerr << "usage: classify IMAGE WEIGHTS [--arch NAME] [--labels FILE] [--top K] "
                 "[--resize 256] [--crop 224] [--device cpu|flex]\n"
                 "  WEIGHTS: a .pt/.pth/.bin or .safetensors file (give --arch), or a folder "
                 "with config.json\n";
    return 2;
  }
  int width = 0, height = 0, channels = 0;
  uint8_t* pixels = stbi_load(positional[0].c_str(), &width, &height, &channels, 3);
  if (!pixels) {
    std::cerr << positional[0] << ": cannot read the image (" << stbi_failure_reason() << ")\n";
    return 1;
  }
  Tensor x = classify::preprocess(pixels, height, width, resize, crop);
  stbi_image_free(pixels);

  std::vector<std::string> labels;
  if (!labels_path.empty()) {
    std::ifstream in(labels_path);
    if (!in) {
      std::cerr << labels_path << ": cannot open the labels file\n";
      return 1;
    }
    for (std::string line; std::getline(in, line);) labels.push_back(line);
  }
  try {
    Device device = device_name == "flex" ? Device::flex() : Device::cpu();
    auto model = models::load_vision_model(positional[1], arch);
    model->to(device);
    NoGradGuard no_grad;
    Tensor p = softmax((*model)(x.to(device)), 1).to(Device::flex());
    top = std::min<int64_t>(top, p.shape()[1]);
    auto [values, indices] = topk(p[0], top);
    for (int64_t i = 0; i < top; ++i) {
      int64_t k = indices[i].item<int64_t>();
      std::string label = k < int64_t(labels.size()) ? labels[k] : std::to_string(k);
      std::printf("%lld %s %.4f\n", (long long)k, label.c_str(), values[i].item<float>());
    }
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
