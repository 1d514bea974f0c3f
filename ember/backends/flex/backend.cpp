#include <cstring>

#include "ember/backends/flex/allocator.h"
#include "ember/backends/flex/flex.h"

namespace ember::flex {
namespace {

class FlexBackend final : public BackendImpl {
 public:
  explicit FlexBackend(Backend kind) : kind_(kind) {}
  Backend kind() const override { return kind_; }
  bool is_host() const override { return true; }
  std::shared_ptr<Storage> allocate(size_t nbytes, Device place) override {
    return allocate_host(nbytes, place);
  }
  void copy_from_host(Storage& dst, size_t off, const void* src, size_t n) override {
    if (n) std::memcpy(static_cast<char*>(dst.data) + off, src, n);
  }
  void copy_to_host(void* dst, const Storage& src, size_t off, size_t n) override {
    if (n) std::memcpy(dst, static_cast<const char*>(src.data) + off, n);
  }

 private:
  Backend kind_;
};

}  // namespace

std::unique_ptr<BackendImpl> make_flex_backend(Backend kind) {
  auto b = std::make_unique<FlexBackend>(kind);
  register_flex_creation(*b);
  register_flex_unary(*b);
  register_flex_views(*b);
  register_flex_binary(*b);
  register_flex_reduce(*b);
  register_flex_linalg(*b);
  register_flex_index(*b);
  register_flex_layout(*b);
  register_flex_nn(*b);
#ifndef EMBER_FLEX_ONLY  // the WebAssembly build leaves the vision kernels out (cmake/wasm.cmake)
  register_flex_vision(*b);
#endif
  return b;
}

}  // namespace ember::flex
