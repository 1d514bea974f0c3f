#pragma once
// NVRTC as a kernel toolchain (private to the CUDA backend): the CUDA renderer's source becomes
// one cubin (SASS for one sm, no PTX to JIT at load), loaded with cudaLibraryLoadData; entry
// points come from cudaLibraryGetKernel (a cudaKernel_t, launched with cudaLaunchKernel).
// Compiling needs no GPU, so CI compiles every rendered kernel for sm_90.
#include <memory>
#include <string>
#include <vector>

#include "ember/kl/cache/kernel_cache.h"
#include "ember/kl/toolchain.h"

namespace ember::cuda {

struct NvrtcOptions {
  int sm_major = 9, sm_minor = 0;        // the architecture compiled for (sm_<major><minor>)
  std::vector<std::string> extra_flags;  // appended to ember's flags (and fingerprinted)
};

class NvrtcToolchain final : public kl::Toolchain {
 public:
  explicit NvrtcToolchain(NvrtcOptions options = {});

  /// Every option a compile passes to nvrtcCompileProgram.
  const std::vector<std::string>& flags() const { return flags_; }
  /// "13.0" (the NVRTC library's version).
  static std::string version();

  std::string target() const override;  // "cuda-sm90"
  std::string quick_id() const override;
  kl::ToolchainIdentity identify(const std::atomic<bool>* cancel) override;
  kl::CompileResult compile(std::string_view source, const kl::CompileJob& job) override;
  /// An ELF object for NVIDIA GPUs (EM_CUDA).
  bool plausible(std::string_view image) const override;
  std::unique_ptr<kl::Module> load_file(const std::string& path, std::string* error) override;
  std::unique_ptr<kl::Module> load_image(std::string_view image, std::string* error) override;

 private:
  NvrtcOptions options_;
  std::vector<std::string> flags_;
};

/// The process's kernel cache for sm_<major><minor> (one per architecture, created on first
/// use; configured from the environment like the host JIT's: EMBER_CACHE_DIR, ...).
kl::KernelCache& nvrtc_kernel_cache(int sm_major, int sm_minor);

}  // namespace ember::cuda
