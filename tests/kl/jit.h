#pragma once
// Test helper: compiles rendered C++ into a shared object with the host toolchain's compiler
// and flags, and loads it (the kernel cache is not involved: each test compiles afresh).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/kl/abi.h"

namespace ember::kl::test {

class Module {
 public:
  /// Compiles `source` with the host toolchain's compiler and flags (what the runtime uses:
  /// -O2, -nostdlib, the ISA level of this CPU; EMBER_CXX picks the compiler); fails the test
  /// with the compiler's output when it does not compile.
  explicit Module(const std::string& source) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("ember_kl_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    const auto src = dir_ / "k.cpp", so = dir_ / "k.so", log = dir_ / "log.txt";
    std::ofstream(src) << source;
    static const cpu::jit::HostToolchain toolchain;
    if (toolchain.compiler_path().empty()) {
      ADD_FAILURE() << "no C++ compiler found";
      return;
    }
    std::string cmd = toolchain.compiler_path();
    for (const std::string& f : toolchain.flags()) cmd += " " + f;
    cmd += " -o " + so.string() + " " + src.string() + " > " + log.string() + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream in(log);
      std::string msg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ADD_FAILURE() << "compile failed:\n" << msg.substr(0, 4000) << "\n--- source ---\n" << source.substr(0, 6000);
      return;
    }
    handle_ = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) ADD_FAILURE() << "dlopen: " << ::dlerror();
  }
  ~Module() {
    if (handle_) ::dlclose(handle_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  bool ok() const { return handle_ != nullptr; }
  KernelFn fn(const std::string& name) const {
    if (!handle_) return nullptr;
    auto f = reinterpret_cast<KernelFn>(::dlsym(handle_, name.c_str()));
    if (!f) ADD_FAILURE() << "no symbol " << name;
    return f;
  }

 private:
  std::filesystem::path dir_;
  void* handle_ = nullptr;
};

/// Runs `f` over [0, items) on ember's thread pool with `grain`, like the runtime will.
inline void launch(KernelFn f, const ArgPack& args, int64_t items, int64_t grain) {
  if (!f || items <= 0) return;
  flex::parallel_for(items, grain, [&](int64_t b, int64_t e) { f(args.data(), b, e); });
}

/// Runs `f` over [0, items) in uneven pieces on one thread, so tests see ranges that start and
/// end mid-row.
inline void launch_pieces(KernelFn f, const ArgPack& args, int64_t items, int64_t piece) {
  if (!f) return;
  for (int64_t b = 0; b < items;) {
    int64_t e = std::min(items, b + piece);
    f(args.data(), b, e);
    b = e;
    piece = piece * 2 + 1;
  }
}

}  // namespace ember::kl::test
