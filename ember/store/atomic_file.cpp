#include "ember/store/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "ember/detail/file.h"
#include "ember/store/format.h"
#include "ember/store/mapped.h"
#include "ember/store/safetensors.h"

namespace ember::store {

AtomicFile::AtomicFile(const std::string& target)
    : target_(target), faults_(ember::detail::map_faults()) {
  // A hidden name beside the target (same filesystem, so rename() is atomic). open() with mode
  // 0666 rather than mkstemp(), so the saved file gets the usual umask permissions, not 0600.
  std::filesystem::path t(target);
  std::string dir = t.parent_path().string(), base;
  if (!dir.empty()) base.append(dir).append("/");
  base.append(".").append(t.filename().string()).append(".tmp.");
  base.append(std::to_string(::getpid())).append(".");
  std::random_device rd;
  for (int attempt = 0; fd_ < 0 && attempt < 100; ++attempt) {
    tmp_ = base + std::to_string(rd());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0)
    throw IOError(detail::message(target, "cannot create a temporary file: " + detail::os_error()));
  // Replacing a file keeps its permission bits (a 0600 file of secrets stays 0600).
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::fchmod(fd_, st.st_mode & 07777) != 0) {
    std::string e = detail::os_error();
    ::close(fd_);  // no destructor runs for a constructor that throws
    ::unlink(tmp_.c_str());
    throw IOError(detail::message(target, "cannot copy the permissions of the file it replaces: " + e));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::write(fd_, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("write failed");
    p += k;
    n -= size_t(k);
  }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::pwrite(fd_, p, n, off_t(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("write failed");
    p += k;
    offset += uint64_t(k);
    n -= size_t(k);
  }
}

// fsync before rename so that a crash cannot leave the new name pointing at missing data.
void AtomicFile::commit() {
  if (ember::detail::map_faults() != faults_) [[unlikely]] detail::check_damaged("save");
  if (::fsync(fd_) != 0) fail("fsync failed");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed");
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail("rename failed");
  committed_ = true;
  // Make the rename itself durable; a failure here does not make the file wrong.
  std::string dir = std::filesystem::path(target_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void AtomicFile::fail(const std::string& what) {
  throw IOError(detail::message(target_, what + ": " + detail::os_error()));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace ember::store
