#include "ember/backends/cpu/jit/shared_object.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ember::cpu::jit {

std::unique_ptr<SharedObject> SharedObject::open(const std::string& path, std::string* error) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    if (error) *error = e ? e : "dlopen failed";
    return nullptr;
  }
  return std::unique_ptr<SharedObject>(new SharedObject(h));
}

std::unique_ptr<SharedObject> SharedObject::from_image(std::string_view image, std::string* error) {
  int fd = ::memfd_create("ember-kernels", MFD_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  const char* p = image.data();
  size_t left = image.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = std::string("writing a memfd: ") + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    p += n;
    left -= size_t(n);
  }
  // dlopen finds an already-loaded object by name before it looks at the file, so the name
  // "/proc/self/fd/N" must stay unique while this object is loaded: keep N open until dlclose.
  auto so = open("/proc/self/fd/" + std::to_string(fd), error);
  if (!so) {
    ::close(fd);
    return nullptr;
  }
  so->memfd_ = fd;
  return so;
}

SharedObject::~SharedObject() {
  ::dlclose(handle_);
  if (memfd_ >= 0) ::close(memfd_);
}

void* SharedObject::symbol(const std::string& name) const { return ::dlsym(handle_, name.c_str()); }

bool looks_like_shared_object(std::string_view image) {
#if defined(__x86_64__) || defined(__aarch64__)
  Elf64_Ehdr h;
  if (image.size() < sizeof h) return false;
  std::memcpy(&h, image.data(), sizeof h);
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
      h.e_type != ET_DYN)
    return false;
#if defined(__x86_64__)
  if (h.e_machine != EM_X86_64) return false;
#else
  if (h.e_machine != EM_AARCH64) return false;
#endif
  auto inside = [&](uint64_t off, uint64_t count, uint64_t entsize) {
    return off <= image.size() && count * entsize <= image.size() - off;
  };
  return h.e_phnum > 0 && inside(h.e_phoff, h.e_phnum, h.e_phentsize) &&
         inside(h.e_shoff, h.e_shnum, h.e_shentsize);
#else
  return image.size() >= 4 && std::memcmp(image.data(),
                                          "\x7f"
                                          "ELF",
                                          4) == 0;
#endif
}

}  // namespace ember::cpu::jit
