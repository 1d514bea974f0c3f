#pragma once
// A small classification task for the Learner's tests and the kill-and-resume probe: Gaussian
// blobs and an MLP with dropout (so the RNG state matters to an exact resume).
#include <memory>
#include <vector>

#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/ember.h>

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

}  // namespace ember::test
