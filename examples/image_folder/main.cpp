// An image-folder project end to end: Fashion-MNIST (Debian's dataset-fashion-mnist) written
// out as PNG files, one folder per class, with ember's encoder; read back by a small folder
// reader; a CNN trained on them with augmentation (random crops of the padded image, flips);
// evaluated on the test folder; and a PNG grid of the misclassified test images saved.
// Usage: image_folder [--dir DIR] [--train N] [--test N] [--epochs E] [--seed S]
//                     [--min-accuracy PCT] [--device cpu|cpu_eager|flex]
#include <ember/data/fashion_mnist.h>
#include <ember/data/loader.h>
#include <ember/ember.h>
#include <ember/models/fashion_cnn.h>
#include <ember/train/learner.h>
#include <ember/vision/augment.h>
#include <ember/vision/image.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace ember;
namespace fs = std::filesystem;

namespace {

/// "T-shirt/top" -> "T-shirt_top": a class name as a folder name.
std::string folder_name(std::string s) {
  std::replace(s.begin(), s.end(), '/', '_');
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

/// The first `n` images of a split as root/<class>/<index>.png (skipped when already there).
/// Each file is written atomically (synced, then renamed into place), so a few threads write
/// them: the time goes to waiting for the disk, not to encoding.
void write_split(const data::FashionMNIST& ds, int64_t n, const fs::path& root) {
  const Tensor& images = ds.images();
  const auto labels = ds.labels().to_vector<int>();
  for (const char* c : data::FashionMNIST::kClasses) fs::create_directories(root / folder_name(c));
  const int64_t count = std::min(n, ds.size()), threads = 8;
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < count; i += threads) {
        fs::path p = root / folder_name(data::FashionMNIST::kClasses[size_t(labels[size_t(i)])]) /
                     (std::to_string(i) + ".png");
        if (!fs::exists(p)) vision::write_image(p.string(), images.select(0, i).unsqueeze(0));
      }
    });
  for (auto& t : pool) t.join();
}

/// A class-per-folder tree: items are (u8 image [1, H, W], label), decoded when asked for.
/// Classes are the sub-folders in sorted order, as torchvision's ImageFolder numbers them.
class Folder final : public data::Dataset<data::Example> {
 public:
  explicit Folder(const fs::path& root) {
    for (auto& e : fs::directory_iterator(root))
      if (e.is_directory()) classes_.push_back(e.path().filename().string());
    std::sort(classes_.begin(), classes_.end());
    for (size_t c = 0; c < classes_.size(); ++c) {
      std::vector<std::string> files;
      for (auto& e : fs::directory_iterator(root / classes_[c]))
        if (e.path().extension() == ".png") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      for (auto& f : files) items_.push_back({f, int64_t(c)});
    }
  }
  data::Example get(int64_t i) const override {
    data::detail::check_item_index("Folder", i, size());
    const auto& [path, label] = items_[size_t(i)];
    Tensor img =
        vision::read_image(path, {.mode = vision::ImageMode::Gray, .device = Device::flex()});
    return {img, scalar_tensor(label, kI64, Device::flex())};
  }
  int64_t size() const override { return int64_t(items_.size()); }
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::vector<std::string> classes_;
  std::vector<std::pair<std::string, int64_t>> items_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "image_folder_data", device_name = "cpu";
  int64_t n_train = 60000, n_test = 10000, epochs = 2;
  uint64_t seed = 0;
  double min_accuracy = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--dir")
      dir = v;
    else if (a == "--train")
      n_train = std::atoll(v.c_str());
    else if (a == "--test")
      n_test = std::atoll(v.c_str());
    else if (a == "--epochs")
      epochs = std::atoll(v.c_str());
    else if (a == "--seed")
      seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--min-accuracy")
      min_accuracy = std::atof(v.c_str());
    else if (a == "--device")
      device_name = v;
    else {
      std::cerr << "usage: image_folder [--dir DIR] [--train N] [--test N] [--epochs E] [--seed S] "
                   "[--min-accuracy PCT] [--device cpu|cpu_eager|flex]\n";
      return 2;
    }
  }
  if (!data::FashionMNIST::available()) {
    std::cerr << "Fashion-MNIST not found in " << data::FashionMNIST::kDefaultRoot
              << " (install Debian's dataset-fashion-mnist)\n";
    return 1;
  }
  const Device device = device_name == "flex"        ? Device::flex()
                        : device_name == "cpu_eager" ? Device::cpu().eager()
                                                     : Device::cpu();
  DeviceGuard on_device(device);
  manual_seed(seed);

  // 1. The image folders, written with ember's PNG encoder.
  write_split(data::FashionMNIST(data::FashionMNIST::kDefaultRoot, true), n_train,
              fs::path(dir) / "train");
  write_split(data::FashionMNIST(data::FashionMNIST::kDefaultRoot, false), n_test,
              fs::path(dir) / "test");
  auto train_set = std::make_shared<Folder>(fs::path(dir) / "train");
  auto test_set = std::make_shared<Folder>(fs::path(dir) / "test");
  std::cout << "folders: " << train_set->size() << " train and " << test_set->size()
            << " test PNGs in " << train_set->classes().size() << " classes under " << dir << "\n";

  // 2. Augmented training items (decoded and transformed in the loader's workers), plain test
  //    items; both scaled to f32 in [0, 1].
  using namespace vision;
  auto train = augment<data::Example>(
      train_set,
      Compose{{RandomCrop{.size = {28}, .padding = {2}}, RandomHorizontalFlip{}, ToDtype{kF32}}},
      seed);
  auto test = data::map(data::DatasetPtr<data::Example>(test_set), [](data::Example e) {
    return data::Example{to_dtype(e.first, kF32), e.second};
  });
  data::DataLoader<data::Example> train_loader(
      train, {.batch_size = 64, .shuffle = true, .seed = seed, .drop_last = true, .workers = 2});
  data::DataLoader<data::Example> test_loader(test, {.batch_size = 500, .workers = 2});

  // 3. Training.
  models::FashionCnn net;  // the Fashion-MNIST CNN
  optim::Adam opt(net.parameters(), {.lr = 1e-3});
  train::Learner learner(net, opt, {.epochs = epochs});
  learner.add_metric(train::accuracy());
  learner.fit(train_loader, &test_loader, train::classification_step(net));

  // 4. Evaluation, keeping the misclassified test images.
  NoGradGuard no_grad;
  net.eval();
  int64_t correct = 0;
  TensorList wrong;
  for (auto& [x, y] : test_loader) {
    Tensor pred = argmax(net(x.to(device)), 1).to(Device::flex());
    Tensor ok = eq(pred, y);
    correct += sum(ok).item<int64_t>();
    Tensor idx = nonzero(logical_not(ok)).flatten();
    if (idx.numel() > 0) wrong.push_back(index_select(x, 0, idx));
  }
  const double accuracy = 100.0 * double(correct) / double(test_set->size());
  std::cout << "test accuracy " << accuracy << "% (" << correct << " of " << test_set->size()
            << ")\n";

  // 5. Up to 64 of them as one PNG grid.
  const std::string grid_path = (fs::path(dir) / "misclassified.png").string();
  if (!wrong.empty()) {
    Tensor all = cat(wrong, 0);
    Tensor shown = all.narrow(0, 0, std::min<int64_t>(all.size(0), 64));
    save_image_grid(shown, grid_path, {.nrow = 8, .padding = 2, .pad_value = 1.0});
    std::cout << all.size(0) << " misclassified; a grid of " << shown.size(0) << " written to "
              << grid_path << "\n";
  }
  if (accuracy < min_accuracy) {
    std::cerr << "accuracy " << accuracy << "% is below --min-accuracy " << min_accuracy << "\n";
    return 1;
  }
  return 0;
}
