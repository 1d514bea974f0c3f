#include "ember/kl/cache/file_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

namespace ember::kl::cache {

std::string errno_text() { return std::strerror(errno); }

bool read_whole_file(const std::string& path, std::string* out, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && size_t(st.st_size) <= limit;
  if (ok) {
    out->resize(size_t(st.st_size));
    size_t got = 0;
    while (got < out->size()) {
      ssize_t n = ::read(fd, out->data() + got, out->size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += size_t(n);
    }
    ok = got == out->size();  // a file that shrank while read is not trusted
  }
  int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

bool write_whole_file(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= size_t(n);
  }
  int saved = errno;
  bool ok = ::close(fd) == 0 && left == 0;
  if (left != 0) errno = saved ? saved : ENOSPC;
  return ok;
}

bool publish_file(const std::string& path, std::string_view bytes, std::string* error) {
  // pid + a random token + a counter: unique across threads, and across processes of different
  // pid namespaces (containers) sharing one cache directory.
  static const std::string token = std::to_string(std::random_device{}());
  static std::atomic<unsigned> counter{0};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string tmp = dir + "." + path.substr(dir.size()) + ".tmp." + std::to_string(::getpid()) +
                    "." + token + "." + std::to_string(counter.fetch_add(1));
  if (!write_whole_file(tmp, bytes) || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot write " + path + ": " + errno_text();
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string make_private_dir(const std::string& parent, const std::string& prefix) {
  std::string t = parent + "/" + prefix + "XXXXXX";
  if (!::mkdtemp(t.data())) return "";
  return t;
}

}  // namespace ember::kl::cache
