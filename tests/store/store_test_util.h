#pragma once
// Helpers for the store tests (also used by tests/train): a scratch directory, raw file
// writing, and writes made to fail half way.
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "ember/store/safetensors.h"

namespace ember::test {

/// A fresh directory under the system temp dir, removed with its contents at scope end.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("ember_store_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Runs `f` with files limited to `bytes` (so a write fails half way with EFBIG; SIGXFSZ is
/// ignored meanwhile) and returns the message of the store::IOError it throws, "" when none.
template <class F>
std::string io_error_with_file_size_limit(rlim_t bytes, F&& f) {
  rlimit old{};
  if (getrlimit(RLIMIT_FSIZE, &old) != 0) return "getrlimit failed";
  struct Restore {
    rlimit old;
    sighandler_t handler;
    ~Restore() {
      setrlimit(RLIMIT_FSIZE, &old);
      signal(SIGXFSZ, handler);
    }
  } restore{old, signal(SIGXFSZ, SIG_IGN)};
  rlimit small = old;
  small.rlim_cur = bytes;
  if (setrlimit(RLIMIT_FSIZE, &small) != 0) return "setrlimit failed";
  try {
    f();
  } catch (const store::IOError& e) {
    return e.what();
  }
  return "";
}

}  // namespace ember::test
