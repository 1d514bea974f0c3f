// Fine-tunes the head of a zoo ResNet-18 on Fashion-MNIST through the Learner: the backbone
// (optionally loaded from a torchvision checkpoint, its fc left out) is frozen and only a new
// 10-class fc is trained. Images are made 3-channel and resized to --size pixels.
// Usage: finetune [--weights resnet18.pt|folder] [--images 512] [--epochs 2] [--size 32]
//                 [--root /usr/share/datasets/fashion-mnist]
#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/data/transforms.h>
#include <ember/ember.h>
#include <ember/models/vision.h>
#include <ember/train/learner.h>

#include <cstdlib>
#include <iostream>
#include <string>

using namespace ember;

int main(int argc, char** argv) {
  std::string weights, root = data::FashionMNIST::kDefaultRoot;
  int64_t images = 512, epochs = 2, size = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--weights") weights = v;
    else if (a == "--root") root = v;
    else if (a == "--images") images = std::atoll(v.c_str());
    else if (a == "--epochs") epochs = std::atoll(v.c_str());
    else if (a == "--size") size = std::atoll(v.c_str());
    else {
      std::cerr << "usage: finetune [--weights FILE|FOLDER] [--images N] [--epochs N] "
                   "[--size PIXELS] [--root DIR]\n";
      return 2;
    }
  }
  if (!data::FashionMNIST::available(root, true) || !data::FashionMNIST::available(root, false)) {
    std::cerr << "Fashion-MNIST not found in " << root
              << " (install Debian's dataset-fashion-mnist)\n";
    return 1;
  }
  manual_seed(0);
  auto model = models::resnet18({.num_classes = 10});
  if (!weights.empty()) {
    // A 1000-class torchvision checkpoint: everything but its classifier.
    store::LoadReport r = models::load_checkpoint(
        *model, weights, {.exclude = {"^fc\\."}, .allow_unexpected = true});
    std::cout << "loaded " << r.loaded.size() << " tensors from " << weights << "\n";
  }
  model->freeze();
  model->fc.unfreeze();
  std::cout << "trainable parameters: " << model->num_parameters(true) << " of "
            << model->num_parameters() << "\n";

  // Grey 28x28 -> RGB size x size, normalised like the ImageNet inputs the backbone expects.
  auto to_rgb = [size](data::Example e) {
    Tensor x = e.first.to(kF32).reshape({1, 1, 28, 28});
    x = interpolate(x, {.size = {size, size}, .mode = "bilinear", .align_corners = false});
    x = ((x.expand({1, 3, size, size}) - 0.449) / 0.226).reshape({3, size, size}).contiguous();
    return data::Example{x, e.second};
  };
  auto train_set = data::map(
      data::partial<data::Example>(std::make_shared<data::FashionMNIST>(root, true), 0, images), to_rgb);
  auto valid_set = data::map(
      data::partial<data::Example>(std::make_shared<data::FashionMNIST>(root, false), 0, images / 2), to_rgb);
  data::DataLoader<data::Example> train_loader(train_set,
                                               {.batch_size = 32, .shuffle = true, .seed = 0});
  data::DataLoader<data::Example> valid_loader(valid_set, {.batch_size = 128});

  optim::Adam opt(model->fc.parameters(), {.lr = 5e-2});
  train::Learner learner(*model, opt, {.epochs = epochs});
  learner.add_metric(train::accuracy());
  // The frozen backbone stays in eval mode (its batch norms use their running statistics), so
  // the features the head learns on are the ones it sees when validating and predicting.
  auto step = train::classification_step(*model);
  train::FitResult result = learner.fit(train_loader, &valid_loader, [&](auto& batch) {
    model->eval();
    return step(batch);
  });
  for (const auto& e : result.history) {
    std::cout << "epoch " << e.epoch;
    for (const auto& [k, v] : e.valid) std::cout << " valid." << k << "=" << v;
    std::cout << "\n";
  }
  // Chance is 10%: even on the features of an untrained backbone a trained head does twice that.
  double acc = 0;
  for (const auto& [k, v] : result.history.back().valid)
    if (k == "accuracy") acc = v;
  std::cout << (acc > 0.2 ? "head trained" : "head did not learn") << "\n";
  return acc > 0.2 ? 0 : 1;
}
