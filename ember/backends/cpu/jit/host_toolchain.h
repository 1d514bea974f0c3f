#pragma once
// The host C++ compiler as a kernel toolchain: one header-free source per flush becomes one
// shared object (-O2 -fPIC -shared, no standard library, no OpenMP), compiled for the ISA level
// the CPU has, loaded with dlopen.
//
// The compiler is EMBER_CXX when set (a program name or path; if it is missing, the JIT is off
// rather than silently using another), else the first of c++, g++, clang++ on PATH. A compile
// that runs past EMBER_JIT_TIMEOUT seconds (default 60) is killed.
#include <string>
#include <vector>

#include "ember/backends/cpu/jit/isa.h"
#include "ember/kl/toolchain.h"

namespace ember::cpu::jit {

struct HostToolchainOptions {
  std::string compiler;                  // "" = from the environment, as above
  std::vector<std::string> extra_flags;  // appended to ember's flags (and fingerprinted)
  double timeout_s = 0;                  // 0 = EMBER_JIT_TIMEOUT, else 60
  int isa = -1;                          // an Isa value; -1 = host_isa()
};

class HostToolchain final : public kl::Toolchain {
 public:
  explicit HostToolchain(HostToolchainOptions options = {});

  /// The compiler program found ("" when none was) and what was asked for.
  const std::string& compiler_path() const { return path_; }
  Isa isa() const { return isa_; }
  /// Every flag a compile passes before "-o out src".
  const std::vector<std::string>& flags() const { return flags_; }

  std::string target() const override;
  std::string quick_id() const override;
  kl::ToolchainIdentity identify(const std::atomic<bool>* cancel) override;
  kl::CompileResult compile(std::string_view source, const kl::CompileJob& job) override;
  bool plausible(std::string_view image) const override;
  std::unique_ptr<kl::Module> load_file(const std::string& path, std::string* error) override;
  std::unique_ptr<kl::Module> load_image(std::string_view image, std::string* error) override;

 private:
  std::string requested_;  // what EMBER_CXX or the options named, "" for the PATH search
  std::string path_;
  std::vector<std::string> flags_;
  double timeout_s_;
  Isa isa_;
};

/// The compiler's short name from its `--version` text: "gcc-12.2.0", "clang-14.0.6", "cxx".
std::string compiler_name_from_version(const std::string& version_text);

}  // namespace ember::cpu::jit
