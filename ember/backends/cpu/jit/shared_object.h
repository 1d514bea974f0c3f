#pragma once
// A dlopen'd shared object with one owner (dlclose at the end), opened from a file or from bytes
// in memory (a memfd, for when no directory may hold executable code), and a header check that
// tells a shared object for this machine from garbage or a truncated file before dlopen sees it.
#include <memory>
#include <string>
#include <string_view>

#include "ember/kl/toolchain.h"

namespace ember::cpu::jit {

class SharedObject final : public kl::Module {
 public:
  /// dlopen(path) with every symbol bound now; nullptr and `*error` (dlerror) when it fails.
  static std::unique_ptr<SharedObject> open(const std::string& path, std::string* error);
  /// The same for an image held in memory.
  static std::unique_ptr<SharedObject> from_image(std::string_view image, std::string* error);
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  ~SharedObject() override;
  void* symbol(const std::string& name) const override;

 private:
  explicit SharedObject(void* handle) : handle_(handle) {}
  void* handle_;
  int memfd_ = -1;  // an image's memfd, kept open while loaded (see from_image)
};

/// Whether `image` is a whole ELF shared object for this machine: magic, class, type, machine,
/// and program and section headers inside the bytes (a truncated file fails the last check).
bool looks_like_shared_object(std::string_view image);

}  // namespace ember::cpu::jit
