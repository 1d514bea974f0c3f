// Loading a 500 MiB checkpoint (rows of bench/peers/torch_store_peer.py, run side by side with
// `ember-bench store`, docs/bench.md). The files are written at
// bench time into $OUT (or /tmp), where the peer finds them: 125 f32 tensors of 1024 x 1024, as
// a .pt (save_pytorch, which torch.load reads) and as safetensors.
//   store_load_*        open the file and hold every tensor (ember: views of the mapped file,
//                       nothing read yet; torch.load reads every byte);
//   store_load_into_*   ... and copy every tensor into preallocated weights (what loading a
//                       model costs: every byte read once); warm page cache;
//   *_cold              the same after dropping the file's pages from the page cache
//                       (posix_fadvise DONTNEED), so the bytes come from the disk;
//   *_nommap            ember with {.mmap = false}: the read path, for comparison (no peer).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "bench.h"
#include "ember/ember.h"
#include "ember/store/load.h"
#include "ember/store/pytorch.h"

using namespace ember;

namespace {

const std::string& out_dir() {
  static const std::string d = std::getenv("OUT") ? std::getenv("OUT") : "/tmp";
  return d;
}

store::TensorMap weights() {
  store::TensorMap sd;
  for (int i = 0; i < 125; ++i)
    sd.emplace_back("layers." + std::to_string(i) + ".weight", full({1024, 1024}, double(i)));
  return sd;
}

// The file of `kind` ("pt" or "safetensors"), written once per process.
const std::string& file(const std::string& kind) {
  static std::map<std::string, std::string> made;
  auto it = made.find(kind);
  if (it != made.end()) return it->second;
  std::string path = out_dir() + "/store_500MB." + kind;
  if (kind == "pt") store::save_pytorch(path, weights());
  else store::save_safetensors(path, weights());
  return made.emplace(kind, path).first->second;
}

// Drops the file's pages from the page cache (they are clean: nothing is lost).
void drop_cache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

store::TensorMap targets() {
  store::TensorMap t;
  for (auto& [k, v] : weights()) t.emplace_back(k, zeros({1024, 1024}));
  return t;
}

std::function<void()> hold(const std::string& kind, bool mmap) {
  std::string p = file(kind);
  return [p, kind, mmap] {
    store::TensorMap sd = kind == "pt" ? store::load_pytorch(p, {.mmap = mmap}).state_dict()
                                       : store::load_safetensors(p, {.mmap = mmap});
    bench::keep(sd.back().second);
  };
}

std::function<void()> into(const std::string& kind, bool cold) {
  std::string p = file(kind);
  auto t = std::make_shared<store::TensorMap>(targets());
  return [p, t, cold] {
    if (cold) drop_cache(p);
    store::load_into(*t, p);
    bench::keep(t->back().second);
  };
}

}  // namespace

EMBER_BENCH({.name = "store_load_pt_500MB", .setup = [] { return hold("pt", true); },
             .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "store_load_pt_500MB_nommap", .setup = [] { return hold("pt", false); },
             .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "store_load_into_pt_500MB", .setup = [] { return into("pt", false); },
             .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "store_load_into_pt_500MB_cold", .setup = [] { return into("pt", true); },
             .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "store_load_safetensors_500MB",
             .setup = [] { return hold("safetensors", true); }, .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "store_load_into_safetensors_500MB",
             .setup = [] { return into("safetensors", false); }, .warmup = 1, .iters = 5});
