// Fuzzes the safetensors header on its own: the input is the JSON text, then (after the first
// NUL byte, if any) the data section; the 8-byte length prefix is made here, so every input
// reaches the JSON parser and the layout checks.
#include <cstdint>
#include <cstring>
#include <string>

#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string header = in.substr(0, nul), body = nul == std::string::npos ? "" : in.substr(nul + 1);
  uint64_t n = header.size();
  std::string file(8, '\0');
  std::memcpy(file.data(), &n, 8);
  file += header + body;
  fuzz::run([&] {
    auto f = store::SafetensorsFile::from_bytes(std::move(file), "fuzz-header.safetensors");
    for (const auto& k : f.keys()) (void)f.get(k);
  });
  return 0;
}
