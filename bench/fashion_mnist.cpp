// One training epoch of the Fashion-MNIST example (the CNN, Adam, batch 64, the real data)
// through the Learner, as `scripts/demo.sh` runs it; bench/peers/torch_fashion_peer.py times the same
// epoch of examples/fashion_mnist/reference.py. About half a minute per call on 2 threads, so the
// row runs only when asked for:
//   build/tools/ember-bench/ember-bench train --device cpu --rounds 3 --filter fashion_mnist_epoch \
//       --peer torch_fashion
#include "ember/data/fashion_mnist.h"

#include <memory>
#include <stdexcept>

#include "bench.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/models/fashion_cnn.h"
#include "ember/train/learner.h"

namespace {
using namespace ember;

struct EpochRun {
  std::shared_ptr<data::FashionMNIST> train_set;
  std::unique_ptr<data::DataLoader<data::Example>> loader;
  models::FashionCnn net;
  std::unique_ptr<optim::Adam> opt;
  int64_t epoch = 0;

  EpochRun() {
    if (!data::FashionMNIST::available(data::FashionMNIST::kDefaultRoot))
      throw std::runtime_error("fashion_mnist_epoch needs Debian's dataset-fashion-mnist");
    train_set = std::make_shared<data::FashionMNIST>(data::FashionMNIST::kDefaultRoot, true);
    loader = std::make_unique<data::DataLoader<data::Example>>(
        train_set,
        data::LoaderOptions{
            .batch_size = 64, .shuffle = true, .seed = 0, .drop_last = true, .workers = 1});
    opt = std::make_unique<optim::Adam>(net.parameters(), optim::AdamOptions{.lr = 1e-3});
  }
  // The next epoch of the same model: a Learner whose fit runs exactly one more epoch.
  void run() {
    ++epoch;
    train::Learner learner(net, *opt, {.epochs = 1, .renderer = train::silent_renderer()});
    learner.add_metric(train::accuracy());
    learner.fit(*loader, train::classification_step(net));
  }
};

EMBER_BENCH({.name = "fashion_mnist_epoch",
             .setup =
                 [] {
                   auto r = std::make_shared<EpochRun>();
                   return [r] { r->run(); };
                 },
             .warmup = 0,
             .iters = 1,
             .on_request = true,
             .suite = "train"});

}  // namespace
