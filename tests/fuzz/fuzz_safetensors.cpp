// Fuzzes the safetensors reader on whole files: open (header and layout validation), every
// tensor read out in its own dtype and converted, and the metadata.
#include <cstdint>
#include <string>

#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::run([&] {
    auto f = store::SafetensorsFile::from_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
    for (const auto& k : f.keys()) {
      const store::TensorInfo& info = f.info(k);
      Tensor t = f.get(k);
      if (t.shape() != info.shape || t.dtype() != info.dtype) std::abort();
      if (t.numel() <= 4096) {
        Tensor c = f.get(k, kF32);
        (void)sum(c.to(kF64)).item<double>();
      }
    }
    for (const auto& [key, value] : f.metadata()) (void)(key.size() + value.size());
  });
  return 0;
}
