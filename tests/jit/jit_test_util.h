#pragma once
// Helpers for the JIT cache tests: running the tiny kernel, fake compilers that fail in chosen
// ways, a kernel cache over a scratch root that records its messages, and file sizes on disk.
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/kl/cache/kernel_cache.h"
#include "jit/sample_kernels.h"
#include "store/store_test_util.h"

namespace ember::test {

/// Runs `axpb` of `set` on 0..n-1 and checks y = 2x + tag.
inline bool tiny_kernel_works(const kl::KernelSet& set, int tag, int n = 19) {
  if (!set.ok || set.fns.size() != 1) return false;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
  for (int i = 0; i < n; ++i) x[size_t(i)] = float(i);
  TinyArgs a{x.data(), y.data()};
  set.fns[0](&a, 0, n);
  for (int i = 0; i < n; ++i)
    if (y[size_t(i)] != float(i) * 2.0f + float(tag)) return false;
  return true;
}

/// An executable shell script at `path` that prints a version for --version and otherwise runs
/// `body` ($out is the -o argument); or, with `version_body`, runs that for --version too.
inline std::string write_fake_compiler(const std::string& path, const std::string& body,
                                       const std::string& version_body = "echo 'fakecc 1.0'") {
  write_bytes(path,
              "#!/bin/sh\n"
              "if [ \"$1\" = --version ]; then " +
                  version_body +
                  "; exit $?; fi\n"
                  "out=\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n" +
                  body + "\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

/// A kernel cache over `root` whose warnings and debug lines are kept in `messages`.
struct RecordingCache {
  std::shared_ptr<std::vector<std::string>> messages = std::make_shared<std::vector<std::string>>();
  std::unique_ptr<kl::KernelCache> cache;
  RecordingCache(std::shared_ptr<kl::Toolchain> tc, const std::string& root, int64_t max_bytes = 0,
                 bool assume_noexec = false) {
    kl::KernelCacheOptions o;
    o.root = root;
    o.max_bytes = max_bytes;
    o.assume_noexec = assume_noexec;
    o.debug = 0;
    auto m = messages;
    o.message = [m](const std::string& line) { m->push_back(line); };
    cache = std::make_unique<kl::KernelCache>(std::move(tc), std::move(o));
  }
  int warnings() const {
    int n = 0;
    for (const auto& m : *messages) n += m.find("warning") != std::string::npos;
    return n;
  }
};

/// The entries (*.meta) under `root`'s tree and the bytes of all its files.
struct TreeSize {
  int entries = 0;
  int64_t bytes = 0;
};
inline TreeSize tree_size(const std::string& root) {
  TreeSize t;
  std::error_code ec;
  for (auto& f : std::filesystem::recursive_directory_iterator(root, ec)) {
    if (!f.is_regular_file(ec)) continue;
    if (f.path().string().find("/toolchains/") != std::string::npos) continue;
    t.bytes += int64_t(f.file_size(ec));
    t.entries += f.path().extension() == ".meta";
  }
  return t;
}

/// The *.so entries under `root` (paths).
inline std::vector<std::string> cached_images(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& f : std::filesystem::recursive_directory_iterator(root, ec))
    if (f.path().extension() == ".so" && f.path().filename().string()[0] != '.')
      out.push_back(f.path().string());
  return out;
}

}  // namespace ember::test
