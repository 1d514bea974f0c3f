// Fuzzes load_into: the input's first line holds rename/include/exclude rules ("r:PAT=>REPL",
// "i:PAT", "e:PAT", ";"-separated, plus flags "partial", "unexpected", "nocast"), the rest is a
// safetensors file. Targets are made from the file's own entries (so names, shapes and dtypes
// often match), some of them altered; a failed load must leave every target as it was.
#include <cstdint>
#include <string>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "fuzz_util.h"

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t k; (k = s.find(sep, at)) != std::string::npos; at = k + 1)
    out.push_back(s.substr(at, k - at));
  out.push_back(s.substr(at));
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string rules = nl == std::string::npos ? "" : in.substr(0, nl);
  std::string file = nl == std::string::npos ? in : in.substr(nl + 1);
  store::LoadOptions o;
  for (const auto& r : split(rules, ';')) {
    if (r.rfind("r:", 0) == 0) {
      size_t arrow = r.find("=>");
      if (arrow != std::string::npos)
        o.rename.push_back({r.substr(2, arrow - 2), r.substr(arrow + 2)});
    } else if (r.rfind("i:", 0) == 0) {
      o.include.push_back(r.substr(2));
    } else if (r.rfind("e:", 0) == 0) {
      o.exclude.push_back(r.substr(2));
    } else if (r == "partial") {
      o.allow_partial = true;
    } else if (r == "unexpected") {
      o.allow_unexpected = true;
    } else if (r == "nocast") {
      o.cast_floating = false;
    }
  }
  fuzz::run([&] {
    auto f = store::SafetensorsFile::from_bytes(file, "fuzz-load.safetensors");
    store::TensorMap targets;
    size_t i = 0;
    for (const auto& k : f.keys()) {
      const store::TensorInfo& info = f.info(k);
      if (numel_of(info.shape) > 4096) continue;
      DType d = info.dtype;
      if (i % 3 == 1 && is_floating(d)) d = d == kF32 ? kF16 : kF32;  // a cast, or a mismatch
      targets.emplace_back(i % 5 == 2 ? k + ".x" : k, full(info.shape, 7, {d}));
      ++i;
    }
    std::vector<Tensor> before;
    for (const auto& [k, t] : targets) before.push_back(t.clone());
    try {
      store::load_into(targets, f, o);
    } catch (const Error&) {
      for (size_t j = 0; j < targets.size(); ++j)  // all or nothing
        if (!equal(targets[j].second, before[j])) std::abort();
      throw;
    }
  });
  return 0;
}
