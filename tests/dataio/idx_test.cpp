// IDX reading (plain and gzip'd), corrupt files, and Fashion-MNIST when installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/data/fashion_mnist.h"
#include "ember/data/idx.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::data;

namespace {
const std::string kDir = std::string(EMBER_TEST_DATA) + "/dataio/";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ember_idx_" + std::to_string(::getpid()) + "_" + name))
      .string();
}
void write_bytes(const std::string& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                           std::streamsize(b.size()));
}
std::string idx_error(const std::string& path) {
  try {
    read_idx(path);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}
}  // namespace

TEST(DataIdx, ReadsGzippedU8) {
  Tensor t = read_idx(kDir + "tiny-u8.idx.gz");
  EXPECT_EQ(t.dtype(), kU8);
  EXPECT_EQ(t.shape(), Shape({3, 2, 2}));
  auto v = t.to_vector<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], i);
}

TEST(DataIdx, ReadsBigEndianWideTypes) {
  Tensor i = read_idx(kDir + "tiny-i32.idx");
  EXPECT_EQ(i.dtype(), kI32);
  EXPECT_EQ(i.shape(), Shape({2, 3}));
  EXPECT_EQ(i.to_vector<int32_t>(),
            (std::vector<int32_t>{1, -2, 300000, -70000, 0, 2147483647}));
  Tensor f = read_idx(kDir + "tiny-f32.idx");
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -0.25f}));
}

TEST(DataIdx, WriteThenReadRoundTrips) {
  for (DType dt : {kU8, kI8, kI16, kI32, kF32, kF64}) {
    Tensor t = arange(-6, 6).reshape({2, 2, 3}).to(dt);
    if (dt == kU8) t = remainder(arange(250, 262), 256).reshape({2, 2, 3}).to(dt);
    auto p = temp_path("rt.idx");
    write_idx(p, t.transpose(0, 2));  // non-contiguous input
    Tensor back = read_idx(p);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.shape(), Shape({3, 2, 2}));
    EXPECT_EQ(back.to_vector<double>(), t.transpose(0, 2).to_vector<double>()) << dtype_name(dt);
    std::filesystem::remove(p);
  }
  Tensor z = read_idx([&] {
    auto p = temp_path("empty.idx");
    write_idx(p, zeros({0, 4}, {kU8}));
    return p;
  }());
  EXPECT_EQ(z.shape(), Shape({0, 4}));
  EXPECT_THROW(write_idx(temp_path("b.idx"), ones({2}, {kI64})), DTypeError);
}

TEST(DataIdx, CorruptFilesNameTheFile) {
  auto p = temp_path("bad.idx");
  write_bytes(p, {0, 0, 0x07, 1, 0, 0, 0, 1, 5});
  std::string m = idx_error(p);
  EXPECT_NE(m.find("[read_idx] " + p + ": bad magic 0x00000701"), std::string::npos) << m;

  write_bytes(p, {0x1f, 0, 8, 1});
  EXPECT_NE(idx_error(p).find("bad magic"), std::string::npos);

  write_bytes(p, {0, 0});
  m = idx_error(p);
  EXPECT_NE(m.find(p + ": truncated header: expected 4 bytes of magic, found 2"),
            std::string::npos) << m;

  write_bytes(p, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0});
  m = idx_error(p);
  EXPECT_NE(m.find(p + ": truncated header: expected 3 dims, found 1"), std::string::npos) << m;

  write_bytes(p, {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3});
  m = idx_error(p);
  EXPECT_NE(m.find(p + ": truncated data: expected 6 bytes for shape [2, 3], found 3"),
            std::string::npos) << m;

  write_bytes(p, {0, 0, 8, 1, 0, 0, 0, 2, 1, 2, 3});
  m = idx_error(p);
  EXPECT_NE(m.find(p + ": unexpected data after the 2 bytes of shape [2]"), std::string::npos)
      << m;
  std::filesystem::remove(p);

  m = idx_error(kDir + "truncated-u8.idx.gz");
  EXPECT_NE(m.find("truncated-u8.idx.gz: truncated data: expected 12 bytes"),
            std::string::npos) << m;
  m = idx_error(kDir + "cut-stream.idx.gz");
  EXPECT_NE(m.find("[read_idx] " + kDir + "cut-stream.idx.gz: "), std::string::npos) << m;
  m = idx_error("/nonexistent/file.idx");
  EXPECT_NE(m.find("/nonexistent/file.idx: cannot open"), std::string::npos) << m;
}

TEST(DataIdx, FashionMnistFromGeneratedFiles) {
  auto dir = std::filesystem::temp_directory_path() / ("ember_fm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Tensor imgs = remainder(arange(0, 2 * 28 * 28), 256).reshape({2, 28, 28}).to(kU8);
  write_idx((dir / "t10k-images-idx3-ubyte").string(), imgs);
  write_idx((dir / "t10k-labels-idx1-ubyte").string(), tensor({7, 3}).to(kU8));
  EXPECT_TRUE(FashionMNIST::available(dir.string(), false));
  EXPECT_FALSE(FashionMNIST::available(dir.string(), true));
  FashionMNIST ds(dir.string(), false);
  ASSERT_EQ(ds.size(), 2);
  auto [x, y] = ds.get(1);
  EXPECT_EQ(x.shape(), Shape({1, 28, 28}));
  EXPECT_EQ(x.dtype(), kF32);
  EXPECT_EQ(y.dtype(), kI64);
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(y.item<int64_t>(), 3);
  EXPECT_FLOAT_EQ(x.flatten().to_vector<float>()[0], float((784) % 256) / 255.f);
  EXPECT_THROW(ds.get(2), IndexError);
  {
    // Files load onto the host whatever the default device; items follow the default device.
    DeviceGuard g(Device::flex().autodiff());
    FashionMNIST again(dir.string(), false);
    EXPECT_EQ(again.images().device(), Device::flex());
    EXPECT_EQ(again.get(0).second.item<int64_t>(), 7);
  }

  // Labels that disagree with the images, or fall outside 0..9.
  write_idx((dir / "t10k-labels-idx1-ubyte").string(), tensor({7, 3, 1}).to(kU8));
  EXPECT_THROW(FashionMNIST(dir.string(), false), ValueError);
  write_idx((dir / "t10k-labels-idx1-ubyte").string(), tensor({7, 12}).to(kU8));
  EXPECT_THROW(FashionMNIST(dir.string(), false), ValueError);
  EXPECT_THROW(FashionMNIST(dir.string(), true), ValueError);  // no train files
  std::filesystem::remove_all(dir);
}

TEST(DataIdx, RealFashionMnist) {
  if (!FashionMNIST::available() || !FashionMNIST::available(FashionMNIST::kDefaultRoot, false))
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << FashionMNIST::kDefaultRoot;
  FashionMNIST train, test(FashionMNIST::kDefaultRoot, false);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.images().shape(), Shape({60000, 28, 28}));
  // Known first labels: train[0] is an ankle boot (9), test[0] an ankle boot (9) too.
  EXPECT_EQ(train.get(0).second.item<int64_t>(), 9);
  EXPECT_EQ(test.get(0).second.item<int64_t>(), 9);
  EXPECT_EQ(min(train.labels()).item<int64_t>(), 0);
  EXPECT_EQ(max(train.labels()).item<int64_t>(), 9);
  // Balanced classes: 6000 of each in train.
  auto counts = std::vector<int64_t>(10);
  for (uint8_t l : train.labels().to_vector<uint8_t>()) ++counts[l];
  for (int64_t c : counts) EXPECT_EQ(c, 6000);
  Tensor x = train.get(0).first;
  EXPECT_GE(min(x).item<float>(), 0.f);
  EXPECT_LE(max(x).item<float>(), 1.f);
  EXPECT_FLOAT_EQ(max(x).item<float>(), 1.f);  // images use the full 0..255 range
}

TEST(DataIdx, MissingFashionMnistFileIsNamed) {
  try {
    FashionMNIST ds("/nonexistent/fashion", true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/fashion/train-images-idx3-ubyte"), std::string::npos) << m;
  }
}
