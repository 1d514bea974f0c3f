#include "ember/backends/cuda/nvrtc.h"

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <cstring>
#include <map>
#include <mutex>

#include "ember/kl/cache/file_ops.h"

namespace ember::cuda {
namespace {

// Bumped when the calling convention or the flags' meaning changes.
constexpr const char* kAbi = "ember-cuda-kl-1";

std::string arch(const NvrtcOptions& o) {
  return std::to_string(o.sm_major) + std::to_string(o.sm_minor);
}

// A loaded cubin: entry points are cudaKernel_t handles (context-independent: usable on every
// device of this architecture).
class CudaLibrary final : public kl::Module {
 public:
  explicit CudaLibrary(cudaLibrary_t lib) : lib_(lib) {}
  ~CudaLibrary() override { cudaLibraryUnload(lib_); }
  void* symbol(const std::string& name) const override {
    cudaKernel_t k = nullptr;
    if (cudaLibraryGetKernel(&k, lib_, name.c_str()) != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it for the next check
      return nullptr;
    }
    return reinterpret_cast<void*>(k);
  }

 private:
  cudaLibrary_t lib_;
};

}  // namespace

NvrtcToolchain::NvrtcToolchain(NvrtcOptions options) : options_(std::move(options)) {
  // FMA contraction inside ops, as the source allows (never across a Fence: see the renderer).
  flags_ = {"--gpu-architecture=sm_" + arch(options_), "-std=c++17", "--fmad=true"};
  for (const std::string& f : options_.extra_flags) flags_.push_back(f);
}

std::string NvrtcToolchain::version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string NvrtcToolchain::target() const { return "cuda-sm" + arch(options_); }

std::string NvrtcToolchain::quick_id() const {
  std::string s = std::string(kAbi) + " nvrtc " + version();
  for (const std::string& f : flags_) s += " " + f;
  return s;
}

kl::ToolchainIdentity NvrtcToolchain::identify(const std::atomic<bool>*) {
  kl::ToolchainIdentity id;
  const std::string v = version();
  if (v.empty()) {
    id.error = "NVRTC did not report its version";
    return id;
  }
  id.ok = true;
  id.fingerprint = quick_id();
  id.name = "nvrtc-" + v;
  return id;
}

kl::CompileResult NvrtcToolchain::compile(std::string_view source, const kl::CompileJob&) {
  const std::string src(source);
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, src.c_str(), "ember_kernels.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    return kl::compile_failure("nvrtcCreateProgram failed", true);
  std::vector<const char*> opts;
  for (const std::string& f : flags_) opts.push_back(f.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t log_size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  kl::CompileResult r;
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return kl::compile_failure(
        std::string(nvrtcGetErrorString(rc)) + (log.empty() ? "" : ":\n" + log),
        rc != NVRTC_ERROR_COMPILATION);
  }
  size_t size = 0;
  if (nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0) {
    nvrtcDestroyProgram(&prog);
    return kl::compile_failure("NVRTC produced no cubin", true);
  }
  r.image.resize(size);
  nvrtcGetCUBIN(prog, r.image.data());
  nvrtcDestroyProgram(&prog);
  r.ok = true;
  r.log = std::move(log);
  return r;
}

bool NvrtcToolchain::plausible(std::string_view image) const {
  // ELF magic, then e_machine (offset 18, little-endian) = EM_CUDA (190).
  if (image.size() < 64 || std::memcmp(image.data(),
                                       "\x7f"
                                       "ELF",
                                       4) != 0)
    return false;
  const auto m = uint16_t(uint8_t(image[18]) | uint8_t(image[19]) << 8);
  return m == 190;
}

std::unique_ptr<kl::Module> NvrtcToolchain::load_file(const std::string& path, std::string* error) {
  std::string image;
  if (!kl::cache::read_whole_file(path, &image)) {
    if (error) *error = "cannot read " + path;
    return nullptr;
  }
  return load_image(image, error);
}

std::unique_ptr<kl::Module> NvrtcToolchain::load_image(std::string_view image, std::string* error) {
  if (!plausible(image)) {
    if (error) *error = "not a cubin";
    return nullptr;
  }
  cudaLibrary_t lib = nullptr;
  const cudaError_t rc =
      cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (error) *error = std::string("cudaLibraryLoadData: ") + cudaGetErrorString(rc);
    return nullptr;
  }
  return std::make_unique<CudaLibrary>(lib);
}

kl::KernelCache& nvrtc_kernel_cache(int sm_major, int sm_minor) {
  static std::mutex mu;
  // Never destroyed: the CUDA runtime may be gone at exit, and unloading then would fail.
  static auto* caches = new std::map<int, std::unique_ptr<kl::KernelCache>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& c = (*caches)[sm_major * 10 + sm_minor];
  if (!c) {
    NvrtcOptions o;
    o.sm_major = sm_major, o.sm_minor = sm_minor;
    c = std::make_unique<kl::KernelCache>(std::make_shared<NvrtcToolchain>(o));
  }
  return *c;
}

}  // namespace ember::cuda
