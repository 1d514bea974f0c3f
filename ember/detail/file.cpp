#include "ember/detail/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
