// Fuzzes the IDX reader, plain and gzip'd (the reader tells them apart by content).
#include <cstdint>
#include <string_view>

#include "ember/data/idx.h"
#include "ember/ember.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::run([&] {
    Tensor t = data::detail::read_idx_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.idx");
    if (t.numel() && t.numel() <= 4096) (void)sum(t.to(kF64)).item<double>();
  });
  return 0;
}
