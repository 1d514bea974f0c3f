#include "ember/detail/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ember::detail {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a plain file";
}

}  // namespace

ReadFile ReadFile::open(const std::string& path, std::string& error) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. It is cleared again
  // for regular files, where it changes nothing anyway.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return {};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    error = std::string("not a regular file: ") + kind_of(st.st_mode);
    ::close(fd);
    return {};
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  ReadFile f;
  f.fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  f.size_ = uint64_t(st.st_size);
  return f;
}

int64_t ReadFile::read_at(uint64_t offset, void* dst, size_t n, std::string& error) const {
  auto* p = static_cast<char*>(dst);
  size_t got = 0;
  while (got < n) {
    size_t chunk = std::min<size_t>(n - got, size_t(1) << 30);
    ssize_t r = ::pread(*fd_, p + got, chunk, off_t(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      error = std::string("read failed: ") + std::strerror(errno);
      return -1;
    }
    if (r == 0) break;
    got += size_t(r);
  }
  return int64_t(got);
}

bool ReadFile::read_exact(uint64_t offset, void* dst, size_t n, std::string& error) const {
  int64_t got = read_at(offset, dst, n, error);
  if (got < 0) return false;
  if (size_t(got) < n) {
    error = "the file ends at byte " + std::to_string(offset + uint64_t(got)) + ", before the " +
            std::to_string(n) + " bytes at " + std::to_string(offset) + " (it was " +
            std::to_string(size_) + " bytes when opened: it shrank)";
    return false;
  }
  return true;
}

bool ReadFile::still_holds(uint64_t end, std::string& error) const {
  struct stat st {};
  if (::fstat(*fd_, &st) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
    return false;
  }
  if (uint64_t(st.st_size) < end) {
    error = "the file now has " + std::to_string(st.st_size) + " bytes, fewer than the " +
            std::to_string(end) + " its data needs (it was " + std::to_string(size_) +
            " bytes when opened: it shrank)";
    return false;
  }
  return true;
}

void ReadFile::drop_stray_pages(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) const {
  if (ranges.empty()) return;
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t first = ranges.front().first / page * page;
  uint64_t end = 0;
  for (const auto& [off, n] : ranges) end = std::max(end, off + n);
  if (end > size_ || end <= first) return;
  // A read-only shared mapping reads nothing: it only lets mincore say which pages are cached.
  void* p = ::mmap(nullptr, size_t(end - first), PROT_READ, MAP_SHARED, *fd_, off_t(first));
  if (p == MAP_FAILED) return;
  std::vector<unsigned char> cached(size_t((end - first + page - 1) / page));
  if (::mincore(p, size_t(end - first), cached.data()) == 0) {
    for (const auto& [off, n] : ranges) {
      const uint64_t p0 = (off - first) / page, p1 = (off + n - first + page - 1) / page;
      uint64_t hits = 0;
      for (uint64_t i = p0; i < p1; ++i) hits += cached[i] & 1;
      if (hits == 0 || hits * 8 >= p1 - p0) continue;
      for (uint64_t i = p0; i < p1; ++i)
        if (cached[i] & 1)
          ::posix_fadvise(*fd_, off_t(first + i * page), off_t(page), POSIX_FADV_DONTNEED);
    }
  }
  ::munmap(p, size_t(end - first));
}

std::shared_ptr<const FileMap> ReadFile::map(uint64_t offset, uint64_t n, std::string& error,
                                             bool prefetch) const {
  if (n == 0 || offset > size_ || n > size_ - offset) {
    error = "no bytes to map at " + std::to_string(offset);
    return nullptr;
  }
  // Checked now, just before mapping: a page past the end of the file would raise SIGBUS.
  if (!still_holds(offset + n, error)) return nullptr;
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page, length = offset + n - start;
  if (length > uint64_t(SIZE_MAX)) {
    error = "too large to map";
    return nullptr;
  }
  void* p = ::mmap(nullptr, size_t(length), PROT_READ | PROT_WRITE, MAP_PRIVATE, *fd_,
                   off_t(start));
  if (p == MAP_FAILED) {
    error = std::string("cannot map: ") + std::strerror(errno);
    return nullptr;
  }
  // A hint: large sequential reads from the disk instead of a fault per few pages.
  if (prefetch) ::madvise(p, size_t(length), MADV_WILLNEED);
  return std::make_shared<const FileMap>(p, size_t(length),
                                         static_cast<char*>(p) + (offset - start));
}

FileMap::~FileMap() { ::munmap(base_, length_); }

bool mmap_enabled(bool requested) {
  if (!requested) return false;
  const char* env = std::getenv("EMBER_MMAP");
  if (!env) return true;
  std::string v(env);
  return !(v == "0" || v == "off" || v == "false" || v == "OFF" || v == "FALSE");
}

bool read_whole_file(const std::string& path, uint64_t max_bytes, std::string& out,
                     std::string& error) {
  ReadFile f = ReadFile::open(path, error);
  if (!f) return false;
  if (f.size() > max_bytes) {
    error = "the file has " + std::to_string(f.size()) + " bytes, more than the limit of " +
            std::to_string(max_bytes);
    return false;
  }
  out.resize(size_t(f.size()));
  return f.read_exact(0, out.data(), out.size(), error);
}

bool ByteSource::read(uint64_t offset, void* dst, size_t n, std::string& error) const {
  if (!in_memory) return file.read_exact(offset, dst, n, error);
  if (offset > bytes.size() || n > bytes.size() - offset) {
    error = "read past the end";
    return false;
  }
  if (n) std::memcpy(dst, bytes.data() + offset, n);
  return true;
}

}  // namespace ember::detail
