// Fuzzes the image decoder (ember/vision/image.h): the structure checks, then stb_image, for
// every format and read mode. The seeds are the test images of tests/data/vision/images.
#include <cstdint>
#include <span>

#include "ember/ember.h"
#include "ember/vision/image.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::span<const uint8_t> bytes(data, size);
  const auto mode = vision::ImageMode(size % 5);
  fuzz::run([&] { (void)vision::decode_image(bytes, {.mode = mode, .max_pixels = 1 << 22}); });
  return 0;
}
