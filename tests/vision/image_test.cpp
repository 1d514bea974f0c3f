// Image I/O: decoding against PIL's pixels, round trips, corrupt and truncated files, grids.
#include "ember/vision/image.h"

#include <filesystem>

#include "ember/vision/augment.h"
#include "vision/vision_test_util.h"

using namespace ember;
using namespace ember::vision;
using ember::test::load_vision_json;
using ember::test::max_abs_diff;
using ember::test::spec_tensor;

namespace {
std::string image_path(const std::string& name) {
  return std::string(EMBER_TEST_DATA) + "/vision/images/" + name;
}
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ImageError& e) {
    return e.what();
  }
  return "(no ImageError)";
}
}  // namespace

TEST(VisionImage, DecodesLikePil) {
  auto cases = load_vision_json("images.json");
  ASSERT_GE(cases.size(), 8u);
  for (auto& c : cases) {
    const std::string file = c["file"];
    const auto bytes = read_file(image_path(file));
    ImageInfo info = image_info(bytes);
    EXPECT_EQ(info.width, c["width"].get<int64_t>()) << file;
    EXPECT_EQ(info.height, c["height"].get<int64_t>()) << file;
    EXPECT_EQ(format_name(info.format), c["format"].get<std::string>() == "JPEG"
                                            ? std::string("JPEG")
                                            : c["format"].get<std::string>())
        << file;
    const bool jpeg = c["format"] == "JPEG";
    for (auto [mode, name] : {std::pair{ImageMode::Rgb, "rgb"}, std::pair{ImageMode::Rgba, "rgba"},
                              std::pair{ImageMode::Gray, "gray"}}) {
      if (!c["modes"].contains(name)) continue;
      Tensor want = spec_tensor(c["modes"][name]);
      Tensor got = decode_image(bytes, {.mode = mode, .layout = Layout::Hwc});
      EXPECT_EQ(got.dtype(), kU8);
      // stb's JPEG IDCT and chroma upsampling differ from libjpeg's by a few levels; stb's
      // grayscale conversion rounds differently from PIL's by one.
      // A colour JPEG read as gray: stb takes luma from its own RGB, PIL from libjpeg's.
      const bool jpeg_to_gray = jpeg && mode == ImageMode::Gray && file != "gray.jpg";
      const bool stored_gray =
          file == "gray.png" || file == "gray16.png" || file == "gray_alpha.png";
      double tol = 0;
      if (jpeg)
        tol = jpeg_to_gray ? 24 : 12;
      else if (mode == ImageMode::Gray && !stored_gray)
        tol = 1;
      EXPECT_LE(max_abs_diff(got, want), tol) << file << " " << name;
      if (jpeg) {
        double mean = (got.to(kF32) - want.to(kF32)).abs().mean().item<double>();
        EXPECT_LT(mean, jpeg_to_gray ? 4.0 : 2.0) << file << " " << name;
      }
      Tensor chw = decode_image(bytes, {.mode = mode});
      EXPECT_EQ(max_abs_diff(chw, got.permute({2, 0, 1})), 0) << file;
    }
  }
}

TEST(VisionImage, UnchangedKeepsTheStoredChannels) {
  EXPECT_EQ(read_image(image_path("gray.png")).size(0), 1);
  EXPECT_EQ(read_image(image_path("rgb.png")).size(0), 3);
  EXPECT_EQ(read_image(image_path("rgba.png")).size(0), 4);
  EXPECT_EQ(read_image(image_path("rgb.jpg")).size(0), 3);
  EXPECT_EQ(read_image(image_path("gray.jpg")).size(0), 1);
  EXPECT_EQ(read_image(image_path("gray_alpha.png")).size(0), 2);
  EXPECT_EQ(read_image(image_path("gray16.png")).size(0), 1);
  Tensor g = read_image(image_path("anim.gif"));
  EXPECT_EQ(shape_str(g.shape()), "[4, 6, 9]");
}

TEST(VisionImage, PngRoundTripIsExact) {
  for (int64_t c : {1, 2, 3, 4}) {
    Tensor img = randint(0, 256, {c, 17, 23}, TensorOptions{.dtype = kU8});
    Tensor back = decode_image(encode_png(img));
    EXPECT_EQ(max_abs_diff(back, img), 0) << c;
    Tensor hwc = img.permute({1, 2, 0}).contiguous();
    Tensor back2 = decode_image(encode_png(hwc, {.layout = Layout::Hwc, .png_compression = 0}),
                                {.layout = Layout::Hwc});
    EXPECT_EQ(max_abs_diff(back2, hwc), 0) << c;
  }
  // Floating point images are scaled by 255 and rounded, as torchvision's save_image does.
  Tensor f = tensor(std::vector<float>{0.f, 0.5f, 1.f, 2.f, -1.f, 0.2f}, {1, 2, 3});
  auto v = decode_image(encode_png(f)).to_vector<int>();
  EXPECT_EQ(v, (std::vector<int>{0, 128, 255, 255, 0, 51}));
}

TEST(VisionImage, JpegRoundTripIsClose) {
  Tensor rows = arange(0, 32, kF32).reshape({1, 32, 1}).expand({1, 32, 48});
  Tensor cols = arange(0, 48, kF32).reshape({1, 1, 48}).expand({1, 32, 48});
  Tensor img = cat({rows * 6.0, cols * 4.0, full({1, 32, 48}, 128.0)}, 0).to(kU8);
  for (int q : {50, 95}) {
    Tensor back = decode_image(encode_jpeg(img, {.quality = q}));
    EXPECT_EQ(shape_str(back.shape()), "[3, 32, 48]");
    double mean = (back.to(kF32) - img.to(kF32)).abs().mean().item<double>();
    EXPECT_LT(mean, q == 95 ? 1.5 : 4.0) << q;
  }
}

TEST(VisionImage, WritesAtomicallyByExtension) {
  auto dir =
      std::filesystem::temp_directory_path() / ("ember_vision_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Tensor img = randint(0, 256, {3, 8, 8}, TensorOptions{.dtype = kU8});
  write_image((dir / "a.png").string(), img);
  write_image((dir / "a.JPG").string(), img, {.quality = 90});
  EXPECT_EQ(max_abs_diff(read_image((dir / "a.png").string()), img), 0);
  EXPECT_EQ(read_image((dir / "a.JPG").string()).size(0), 3);
  EXPECT_NE(error_of([&] { write_image((dir / "a.tiff").string(), img); }).find("expected a .png"),
            std::string::npos);
  // Nothing but the two files: no temporary left behind.
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  EXPECT_EQ(n, 2);
  std::filesystem::remove_all(dir);
}

TEST(VisionImage, BadTensorsAreRefused) {
  EXPECT_NE(error_of([] {
              encode_png(zeros({5, 4, 4}, kU8));
            }).find("1 to 4 channels"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              encode_png(zeros({2, 3, 4, 4}, kU8));
            }).find("[encode_png]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              encode_png(zeros({3, 4, 4}, kI32));
            }).find("u8 or floating-point"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              encode_jpeg(zeros({3, 4, 4}, kU8), {.quality = 0});
            }).find("quality"),
            std::string::npos);
}

TEST(VisionImage, CorruptAndTruncatedFilesGiveClearErrors) {
  auto cases = load_vision_json("images.json");
  for (auto& c : cases) {
    const std::string file = c["file"];
    const auto bytes = read_file(image_path(file));
    const std::string fmt = c["format"];
    // Every cut, from the signature to one byte short, is caught before decoding.
    // (A GIF cut after its first frame still decodes: only that frame is read.)
    const Tensor whole = decode_image(bytes);
    for (size_t n = 0; n + 1 < bytes.size(); n += (n < 64 ? 1 : 7)) {
      std::span<const uint8_t> cut(bytes.data(), n);
      if (fmt == "GIF") {
        try {
          EXPECT_EQ(max_abs_diff(decode_image(cut), whole), 0) << n;
          continue;
        } catch (const ImageError&) {
        }
      }
      std::string msg = error_of([&] { decode_image(cut); });
      EXPECT_NE(msg.find("[decode_image]"), std::string::npos)
          << file << " cut at " << n << ": " << msg;
      if (n >= 16 && fmt != "BMP")
        EXPECT_NE(msg.find(fmt), std::string::npos) << file << " " << n << ": " << msg;
    }
  }
  auto png = read_file(image_path("rgb.png"));
  png[40] ^= 0x55;  // inside IDAT (or IHDR's CRC): caught by the CRC
  EXPECT_NE(error_of([&] { decode_image(png); }).find("CRC"), std::string::npos);
  std::vector<uint8_t> junk = {'h', 'e', 'l', 'l', 'o', 0, 1, 2, 3};
  EXPECT_NE(error_of([&] { decode_image(junk); }).find("signature"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_image(std::vector<uint8_t>{}); }).find("empty"),
            std::string::npos);
  {  // a Huffman table claiming more than 256 codes (stb_image 2.27 would write past its table)
    auto j = read_file(image_path("rgb.jpg"));
    size_t p = 2;
    while (!(j[p] == 0xFF && j[p + 1] == 0xC4)) p += 2 + (size_t(j[p + 2]) << 8 | j[p + 3]);
    for (int i = 0; i < 16; ++i) j[p + 5 + size_t(i)] = 20;  // 320 codes
    EXPECT_NE(error_of([&] { decode_image(j); }).find("Huffman table"), std::string::npos);
  }
  {  // scans whose Huffman or quantisation tables were never defined (stb_image 2.27 decodes with
     // uninitialised tables and indexes past them: found by fuzz_image)
    auto relabel = [&](uint8_t marker, bool huffman) {
      auto j = read_file(image_path("rgb.jpg"));
      for (size_t p = 2; !(j[p] == 0xFF && j[p + 1] == 0xDA);
           p += 2 + (size_t(j[p + 2]) << 8 | j[p + 3])) {
        if (j[p + 1] != marker) continue;
        const size_t end = p + 2 + (size_t(j[p + 2]) << 8 | j[p + 3]);
        for (size_t q = p + 4; q < end;) {
          const uint8_t id = j[q];
          if (huffman ? id == 0x10 : (id & 15) == 0) j[q] = uint8_t(id | 2);  // table 0 -> 2
          size_t n = 0;
          if (huffman)
            for (int i = 1; i <= 16; ++i) n += j[q + size_t(i)];
          q += huffman ? 17 + n : 1 + ((id >> 4) ? 128 : 64);
        }
      }
      return j;
    };
    EXPECT_NE(
        error_of([&] { decode_image(relabel(0xC4, true)); }).find("Huffman table not defined"),
        std::string::npos);
    EXPECT_NE(error_of([&] { decode_image(relabel(0xDB, false)); }).find("quantisation table"),
              std::string::npos);
  }
  {  // frame headers that do not describe the data (found by fuzz_image: a 1 KB file whose
     // second frame header claimed a small size while stb_image decoded the first, 20051x29778)
    auto j = read_file(image_path("rgb.jpg"));
    size_t p = 2;
    while (!(j[p] == 0xFF && j[p + 1] == 0xC0)) p += 2 + (size_t(j[p + 2]) << 8 | j[p + 3]);
    const size_t len = 2 + (size_t(j[p + 2]) << 8 | j[p + 3]);
    auto twice = j;
    twice.insert(twice.begin() + std::ptrdiff_t(p + len), j.begin() + std::ptrdiff_t(p),
                 j.begin() + std::ptrdiff_t(p + len));
    EXPECT_NE(error_of([&] { decode_image(twice); }).find("second frame header"),
              std::string::npos);
    j[p + 5] = 0x4E, j[p + 6] = 0x20, j[p + 7] = 0x4E, j[p + 8] = 0x20;  // 20000x20000
    EXPECT_NE(error_of([&] { decode_image(j); }).find("bytes of coded data"), std::string::npos);
  }
  auto jpg = read_file(image_path("rgb.jpg"));
  jpg.resize(jpg.size() - 2);
  EXPECT_NE(error_of([&] { decode_image(jpg); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([] { read_image("/nonexistent/x.png"); }).find("/nonexistent/x.png"),
            std::string::npos);
  auto big = read_file(image_path("rgb.png"));
  EXPECT_NE(error_of([&] { decode_image(big, {.max_pixels = 100}); }).find("max_pixels"),
            std::string::npos);
}

TEST(VisionImage, GridMatchesTorchvision) {
  auto g = load_vision_json("transforms.json");
  int n = 0;
  for (auto& c : g["cases"]) {
    if (c["op"] != "grid") continue;
    Tensor x = spec_tensor(g["inputs"][c["input"].get<std::string>()]);
    auto& a = c["attrs"];
    GridOptions o{.nrow = a["nrow"], .padding = a["padding"], .pad_value = a["pad_value"]};
    if (a.contains("normalize")) o.normalize = a["normalize"];
    if (a.contains("scale_each")) o.scale_each = a["scale_each"];
    if (a.contains("value_range"))
      o.value_range =
          std::pair{a["value_range"][0].get<double>(), a["value_range"][1].get<double>()};
    Tensor want = spec_tensor(c["output"]);
    EXPECT_LE(max_abs_diff(to_image_grid(x, o), want), 1e-5) << c["attrs"].dump();
    ++n;
  }
  EXPECT_EQ(n, 6);
  auto dir = std::filesystem::temp_directory_path() /
             ("ember_grid_" + std::to_string(::getpid()) + ".png");
  save_image_grid(rand({5, 1, 6, 4}), dir.string(), {.nrow = 3});
  EXPECT_EQ(shape_str(read_image(dir.string()).shape()), "[3, 18, 20]");
  std::filesystem::remove(dir);
}

TEST(VisionImage, MutatedFilesDecodeOrThrowImageError) {
  // Random byte flips, insertions and deletions in every test file: each either decodes to an
  // image of sane shape or throws ImageError (never another exception, a crash or a hang).
  auto cases = load_vision_json("images.json");
  vision::Rng rng(99);
  int decoded = 0, refused = 0;
  for (auto& c : cases) {
    const auto bytes = read_file(image_path(c["file"]));
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> b = bytes;
      const int edits = int(rng.randint(1, 4));
      for (int e = 0; e < edits; ++e) {
        const size_t at = size_t(rng.randint(0, int64_t(b.size())));
        switch (rng.randint(0, 3)) {
          case 0:
            b[at] = uint8_t(rng.randint(0, 256));
            break;
          case 1:
            b.insert(b.begin() + std::ptrdiff_t(at), uint8_t(rng.randint(0, 256)));
            break;
          default:
            b.erase(b.begin() + std::ptrdiff_t(at));
            break;
        }
      }
      try {
        Tensor t = decode_image(b, {.max_pixels = 1 << 20});
        EXPECT_TRUE(t.dim() == 3 && t.size(0) >= 1 && t.size(0) <= 4 && t.numel() <= 4 << 20);
        ++decoded;
      } catch (const ImageError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(decoded, 10);
}
