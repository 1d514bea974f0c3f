// The image input pipeline of a training run: read JPEG files, decode, RandomResizedCrop(224),
// RandomHorizontalFlip, scale to f32 and Normalize, batches of 64 from a DataLoader with 2
// worker threads. One call is one pass over 256 files (4 batches); images/s = 256 / time.
// bench/peers/torch_vision_peer.py times torchvision's DataLoader (2 worker processes, PIL
// decode, the same transforms) over the same files:
//   build/tools/ember-bench/ember-bench vision --device cpu --rounds 3
// The files (256 JPEGs, 300-500 x 250-450 pixels, quality 90, in two class folders) are written
// into $EMBER_BENCH_IMAGES (default /tmp/ember_bench_images) by whichever side runs first.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/vision/augment.h"
#include "ember/vision/image.h"

namespace {
using namespace ember;
namespace fs = std::filesystem;

constexpr int kImages = 256;

std::string images_dir() {
  const char* d = std::getenv("EMBER_BENCH_IMAGES");
  return d && *d ? d : "/tmp/ember_bench_images";
}

// Smooth colour fields with some texture and noise, so the JPEGs cost what photos cost.
Tensor synthetic_image(int64_t h, int64_t w, uint64_t seed) {
  Generator g(seed);
  Tensor y = arange(0, h, kF32).reshape({1, h, 1}), x = arange(0, w, kF32).reshape({1, 1, w});
  Tensor phase = rand({3, 1, 1}, g) * 6.0, freq = rand({3, 1, 1}, g) * 0.08 + 0.01;
  Tensor img = 127.5 + 90.0 * sin(x * freq + phase) * cos(y * freq * 0.7 - phase);
  img = img + randn({3, h, w}, g) * 12.0;
  return clamp(img, 0.0, 255.0).to(kU8);
}

/// The files, written once (with ember's encoder) when the folder lacks them.
std::vector<std::string> image_files() {
  const fs::path root = images_dir();
  std::vector<std::string> files;
  vision::Rng rng(2026);
  for (int i = 0; i < kImages; ++i) {
    const int64_t w = rng.randint(300, 501), h = rng.randint(250, 451);
    fs::path p = root / (i % 2 ? "b" : "a") / ("img" + std::to_string(i) + ".jpg");
    if (!fs::exists(p)) {
      fs::create_directories(p.parent_path());
      vision::write_image(p.string(), synthetic_image(h, w, uint64_t(i)), {.quality = 90});
    }
    files.push_back(p.string());
  }
  return files;
}

class Files final : public data::Dataset<data::Example> {
 public:
  explicit Files(std::vector<std::string> f) : files_(std::move(f)) {}
  data::Example get(int64_t i) const override {
    return {vision::read_image(files_[size_t(i)]), scalar_tensor(i % 2, kI64)};
  }
  int64_t size() const override { return int64_t(files_.size()); }

 private:
  std::vector<std::string> files_;
};

EMBER_BENCH({.name = "image_loader_b64_224",
             .setup =
                 [] {
                   using namespace vision;
                   auto files = std::make_shared<Files>(image_files());
                   Compose t{{RandomResizedCrop{.size = {224}}, RandomHorizontalFlip{},
                              ToDtype{kF32},
                              Normalize{{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}}}};
                   auto loader = std::make_shared<data::DataLoader<data::Example>>(
                       augment<data::Example>(files, t, 0),
                       data::LoaderOptions{.batch_size = 64, .shuffle = true, .workers = 2});
                   return [loader] {
                     for (auto& [x, y] : *loader) bench::keep(x);
                   };
                 },
             .warmup = 1,
             .iters = 5,
             .suite = "vision"});

}  // namespace
