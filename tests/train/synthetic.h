#pragma once
// A small classification task for the Learner's tests and the kill-and-resume probe: Gaussian
// blobs and an MLP with dropout (so the RNG state matters to an exact resume), and a Learner
// set up on them.
#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/ember.h>
#include <ember/train/learner.h>

#include <memory>
#include <vector>

namespace ember::test {

/// `n` points of dimension `dim` around `classes` centres (the same for every seed), labels
/// 0..classes-1; `seed` picks the points.
inline data::DatasetPtr<data::Example> blobs(int64_t n, int64_t classes, int64_t dim,
                                             uint64_t seed) {
  manual_seed(1234);
  Tensor centres = randn({classes, dim}) * 2.0;
  manual_seed(seed);
  Tensor labels = randint(0, classes, {n});
  Tensor x = index_select(centres, 0, labels) + randn({n, dim});
  std::vector<data::Example> items;
  for (int64_t i = 0; i < n; ++i) items.emplace_back(x[i].clone(), labels[i].clone());
  return data::in_memory(std::move(items));
}

struct BlobNet : nn::Module {
  nn::Linear fc1, fc2;
  nn::Dropout drop;
  explicit BlobNet(int64_t dim = 8, int64_t classes = 4, double dropout = 0.2)
      : fc1({.in = dim, .out = 32}), fc2({.in = 32, .out = classes}), drop(dropout) {
    register_modules({{"fc1", fc1}, {"drop", drop}, {"fc2", fc2}});
  }
  Tensor forward(const Tensor& x) override { return fc2(drop(relu(fc1(x)))); }
};

// One training setup: the same seed gives the same model, optimizer and data every time.
struct TrainRun {
  data::DatasetPtr<data::Example> train = blobs(256, 4, 8, 11);
  data::DatasetPtr<data::Example> valid = blobs(96, 4, 8, 12);
  data::DataLoader<data::Example> train_loader{train,
                                               {.batch_size = 16, .shuffle = true, .seed = 3}};
  data::DataLoader<data::Example> valid_loader{valid, {.batch_size = 32}};
  std::unique_ptr<BlobNet> net;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<optim::StepLR> sched;
  std::unique_ptr<train::Learner> learner;

  explicit TrainRun(train::LearnerOptions o, bool with_scheduler = true) {
    manual_seed(5);
    net = std::make_unique<BlobNet>();
    opt = std::make_unique<optim::Adam>(net->parameters(), optim::AdamOptions{.lr = 1e-2});
    if (!o.renderer) o.renderer = train::silent_renderer();
    learner = std::make_unique<train::Learner>(*net, *opt, std::move(o));
    if (with_scheduler) {
      sched = std::make_unique<optim::StepLR>(*opt, 2, 0.5);
      learner->set_scheduler(*sched);
    }
    learner->add_metric(train::accuracy());
  }
  train::FitResult fit() {
    return learner->fit(train_loader, &valid_loader, train::classification_step(*net));
  }
};

}  // namespace ember::test
