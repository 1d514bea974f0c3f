#pragma once
// The toolchain interface: what turns kernel source into code a device runs. The host C++
// compiler (ember/backends/cpu/jit) is one; NVRTC is the next. The kernel cache
// (ember/kl/cache) drives any of them the same way: identify once, compile on a worker thread,
// keep the image on disk, load it in every process that asks for the same key.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ember::kl {

/// Every generated entry point: runs work items [begin, end) of the kernel whose arguments
/// `args` points at (a struct the renderer lays out).
using KernelFn = void (*)(const void* args, int64_t begin, int64_t end);

/// A loaded code object (a dlopen'd shared object, a CUDA module); unloaded with its last owner.
class Module {
 public:
  virtual ~Module() = default;
  /// The address of entry point `name`, nullptr when the object has none.
  virtual void* symbol(const std::string& name) const = 0;
};

/// Who a toolchain is. `fingerprint` changes whenever the code it produces could (compiler
/// identity and version, flags, the instruction set it targets); the cache keys entries by it.
struct ToolchainIdentity {
  bool ok = false;
  std::string error;        // why it is unusable, when !ok
  std::string fingerprint;  // opaque, stable across processes
  std::string name;         // short and file-name safe, e.g. "gcc-12.2.0"
};

/// What a compile produced: the image (the object's bytes) or why there is none.
struct CompileResult {
  bool ok = false;
  std::string image;
  std::string log;  // the compiler's diagnostics, trimmed
  // The toolchain itself failed (missing, crashed, hung, wrote garbage) rather than this source:
  // compiling anything else is pointless, so the cache stops trying.
  bool toolchain_broken = false;
};

/// A failed compile with `log`; `broken` when the toolchain itself failed.
inline CompileResult compile_failure(std::string log, bool broken) {
  CompileResult r;
  r.log = std::move(log);
  r.toolchain_broken = broken;
  return r;
}

/// Where and how one compile runs.
struct CompileJob {
  std::string work_dir;                       // a private, writable scratch directory
  const std::atomic<bool>* cancel = nullptr;  // set when the caller gives up (shutdown)
};

class Toolchain {
 public:
  virtual ~Toolchain() = default;
  /// The target, short and file-name safe ("x86_64-avx2"); part of the cache directory's name.
  virtual std::string target() const = 0;
  /// A cheap string that changes when identify() could answer differently (the compiler's path,
  /// size and modification time, the flags); "" when there is none. Lets a second process reuse
  /// the identity found by the first without running the compiler.
  virtual std::string quick_id() const = 0;
  /// Finds out who the toolchain is; may run it (bounded in time).
  virtual ToolchainIdentity identify(const std::atomic<bool>* cancel) = 0;
  /// Compiles `source` into one image holding every entry point it defines.
  virtual CompileResult compile(std::string_view source, const CompileJob& job) = 0;
  /// Whether `image` looks like an object of this target (a cheap header check).
  virtual bool plausible(std::string_view image) const = 0;
  /// Loads an image from a file; nullptr and `*error` set when it cannot.
  virtual std::unique_ptr<Module> load_file(const std::string& path, std::string* error) = 0;
  /// Loads an image held in memory (the fallback when no cache directory can hold code).
  virtual std::unique_ptr<Module> load_image(std::string_view image, std::string* error) = 0;
};

}  // namespace ember::kl
