#include "ember/kl/cache/disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "ember/detail/decimal.h"
#include "ember/detail/hash.h"
#include "ember/kl/cache/file_ops.h"

namespace ember::kl::cache {
namespace {
namespace fs = std::filesystem;

constexpr const char* kMetaMagic = "ember-kernel-cache";

std::string versioned(const std::string& root) { return root + "/v" + std::to_string(kSchema); }

std::string meta_text(const std::string& key, const std::string& fingerprint,
                      const std::string& image) {
  return std::string(kMetaMagic) + " " + std::to_string(kSchema) + "\nkey " + detail::hex128(key) +
         "\nfingerprint " + detail::hex128(fingerprint) + "\nbytes " +
         std::to_string(image.size()) + "\nchecksum " + detail::hex64(detail::hash64(image)) + "\n";
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Whether a file can be created in `dir` (access() would answer for the real uid, and says
// nothing about read-only mounts on some filesystems: trying is the only honest test).
bool can_create_in(const std::string& dir) {
  std::string probe =
      dir + "/.probe-" + std::to_string(::getpid()) + "-" +
      detail::hex64(uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

}  // namespace

std::string default_root() {
  if (const char* e = std::getenv("EMBER_CACHE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/ember";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ember";
  return "";
}

int64_t default_max_bytes() {
  int64_t mb = 0;
  if (const char* e = std::getenv("EMBER_CACHE_MAX_MB"); e && detail::parse_exact(e, mb) && mb > 0)
    return mb << 20;
  return int64_t(256) << 20;
}

ToolchainIdentity read_identity(const std::string& root, const std::string& quick_id) {
  ToolchainIdentity id;
  std::string text;
  if (root.empty() || quick_id.empty() ||
      !read_whole_file(versioned(root) + "/toolchains/" + detail::hex128(quick_id), &text, 4096))
    return id;
  size_t a = text.find('\n'), b = a == std::string::npos ? a : text.find('\n', a + 1);
  if (b == std::string::npos || a == 0 || b == a + 1) return id;
  id.fingerprint = text.substr(0, a);
  id.name = text.substr(a + 1, b - a - 1);
  id.ok = true;
  return id;
}

void write_identity(const std::string& root, const std::string& quick_id,
                    const ToolchainIdentity& id) {
  if (root.empty() || quick_id.empty() || !id.ok) return;
  std::string dir = versioned(root) + "/toolchains";
  std::error_code ec;
  fs::create_directories(dir, ec);
  publish_file(dir + "/" + detail::hex128(quick_id), id.fingerprint + "\n" + id.name + "\n",
               nullptr);
}

DiskCache::DiskCache(const std::string& root, const std::string& dir_name, int64_t max_bytes,
                     bool assume_noexec)
    : root_(root), max_bytes_(max_bytes) {
  if (root.empty()) {
    reason_ = "no cache directory (EMBER_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)";
    return;
  }
  vroot_ = versioned(root);
  dir_ = vroot_ + "/" + dir_name;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!is_dir(dir_)) {
    reason_ = "cannot create the directory " + dir_ + (ec ? ": " + ec.message() : "");
    return;
  }
  struct statvfs vfs;
  if (assume_noexec || (::statvfs(dir_.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))) {
    reason_ = dir_ + " is on a filesystem mounted noexec";
    return;
  }
  if (can_create_in(dir_)) {
    mode_ = DirMode::kReadWrite;
    return;
  }
  reason_ = "cannot write to " + dir_ + ": " + errno_text();
  if (::access(dir_.c_str(), R_OK | X_OK) == 0) mode_ = DirMode::kReadOnly;
}

void DiskCache::degrade(DirMode mode, std::string reason) {
  if (int(mode) > int(mode_.load())) {
    mode_ = mode;
    reason_ = std::move(reason);
  }
}

std::string DiskCache::entry_id(const std::string& key, const std::string& fingerprint) {
  return detail::hex128(fingerprint + '\0' + key);
}

Lookup DiskCache::lookup(const std::string& id, const std::string& key,
                         const std::string& fingerprint) {
  if (mode_ == DirMode::kMemory) return Lookup::kMissing;
  const std::string meta_path = dir_ + "/" + id + ".meta";
  std::string meta, image;
  if (!read_whole_file(meta_path, &meta, 4096)) return Lookup::kMissing;
  if (!read_whole_file(image_path(id), &image)) return Lookup::kCorrupt;
  if (meta != meta_text(key, fingerprint, image)) return Lookup::kCorrupt;
  if (mode_ == DirMode::kReadWrite) ::utimensat(AT_FDCWD, meta_path.c_str(), nullptr, 0);
  return Lookup::kFound;
}

bool DiskCache::publish(const std::string& id, const std::string& key,
                        const std::string& fingerprint, const std::string& image,
                        std::string* error) {
  if (mode_ != DirMode::kReadWrite) return false;
  // The image first: a reader that finds the new meta finds the image it describes.
  return publish_file(image_path(id), image, error) &&
         publish_file(dir_ + "/" + id + ".meta", meta_text(key, fingerprint, image), error);
}

void DiskCache::remove(const std::string& id) {
  ::unlink((dir_ + "/" + id + ".meta").c_str());
  ::unlink(image_path(id).c_str());
}

int64_t DiskCache::evict_if_needed(int64_t just_added) {
  if (mode_ != DirMode::kReadWrite) return 0;
  if (estimate_ >= 0) estimate_ += just_added;
  // Other processes add entries too: rescan now and then, and whenever the estimate is over.
  if (estimate_ >= 0 && estimate_ <= max_bytes_ && ++publishes_since_scan_ < 64) return 0;
  publishes_since_scan_ = 0;
  return scan_and_evict();
}

int64_t DiskCache::scan_and_evict() {
  struct Item {
    std::string dir, id;
    int64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Item> items;
  int64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(vroot_, ec)) {
    if (!d.is_directory(ec) || d.path().filename() == "toolchains") continue;
    for (const auto& f : fs::directory_iterator(d.path(), ec)) {
      const std::string name = f.path().filename().string();
      auto mtime = f.last_write_time(ec);
      bool stale = !ec && now - mtime > std::chrono::hours(1);
      if (name.size() > 5 && name.ends_with(".meta") && name[0] != '.') {
        std::string id = name.substr(0, name.size() - 5);
        int64_t bytes = int64_t(f.file_size(ec));
        bytes += int64_t(fs::file_size(d.path() / (id + ".so"), ec));
        items.push_back({d.path().string(), id, bytes, mtime});
        total += bytes;
      } else if (name[0] == '.' && stale) {
        fs::remove_all(f.path(), ec);  // a temporary or work dir a killed process left behind
      } else if (f.is_regular_file(ec)) {
        total += int64_t(f.file_size(ec));
      }
    }
  }
  int64_t evicted = 0;
  if (total > max_bytes_) {
    std::sort(items.begin(), items.end(),
              [](const Item& a, const Item& b) { return a.used < b.used; });
    // Down to 80% of the cap, so that the next few publishes do not each evict again.
    for (const Item& it : items) {
      if (total <= max_bytes_ / 5 * 4) break;
      const std::string base = it.dir + "/" + it.id;
      int fd = ::open((base + ".lock").c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);  // being compiled by someone right now: not the one to drop
        continue;
      }
      ::unlink((base + ".meta").c_str());
      ::unlink((base + ".so").c_str());
      ::unlink((base + ".lock").c_str());
      if (fd >= 0) ::close(fd);
      total -= it.bytes;
      ++evicted;
    }
  }
  estimate_ = scanned_bytes_ = total;
  return evicted;
}

DiskCache::KeyLock::KeyLock(const DiskCache& cache, const std::string& id, double max_wait_s,
                            const std::atomic<bool>* cancel) {
  if (cache.mode() != DirMode::kReadWrite) return;
  fd_ = ::open((cache.dir_ + "/" + id + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(max_wait_s));
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      held_ = true;
      return;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) return;  // no flock here (some network mounts)
    if ((cancel && cancel->load()) || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

DiskCache::KeyLock::~KeyLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace ember::kl::cache
