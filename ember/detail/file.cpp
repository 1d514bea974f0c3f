#include "ember/detail/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <atomic>
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

// The SIGBUS guard. Every live mapping has a slot of [begin, end) addresses in a fixed table the
// signal handler can scan without locks or allocation; a fault inside one is a page past the
// end of a file that was cut after it was mapped. The handler maps a zero page over it (the
// faulting access then completes), marks the slot damaged and counts the fault; the code that
// ran the access (an op, a host read, a save) sees the count change and raises an IOError. A
// fault anywhere else goes to the handler that was installed before (or the default action).
constexpr int kSlots = 1 << 14;
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<bool> damaged{false};
};
Slot g_slots[kSlots];
std::atomic<int> g_slots_used{0};  // high-water mark: the handler scans [0, used)
struct sigaction g_previous {};
uintptr_t g_page = 0;
// The file of each slot, for messages (never read by the handler).
std::mutex g_paths_mu;
std::shared_ptr<const std::string> g_paths[kSlots];

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // raised by the hardware, not sent by kill() or raise()
    const int used = g_slots_used.load(std::memory_order_acquire);
    for (int i = 0; i < used; ++i) {
      Slot& s = g_slots[i];
      const uintptr_t b = s.begin.load(std::memory_order_acquire);
      if (b == 0 || addr < b || addr >= s.end.load(std::memory_order_acquire)) continue;
      void* page = reinterpret_cast<void*>(addr & ~(g_page - 1));
      if (::mmap(page, g_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                 -1, 0) == MAP_FAILED)
        break;  // cannot repair it: fall through to the previous action
      s.damaged.store(true, std::memory_order_release);
      g_map_faults.fetch_add(1, std::memory_order_acq_rel);
      return;  // the access runs again, now on the zero page
    }
  }
  // Not ours: what the program had before.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN) return;
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action: restore it and let the signal take the process (a fault re-raises when
  // the access runs again; a sent signal is raised here).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);
  if (info->si_code <= 0) ::raise(SIGBUS);
}

void install_guard() {
  static const bool installed = [] {
    g_page = uintptr_t(::sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    return ::sigaction(SIGBUS, &sa, &g_previous) == 0;
  }();
  (void)installed;
}

// A free slot for [begin, end), or -1 when the table is full (the caller reads instead).
int claim_slot(uintptr_t begin, uintptr_t end) {
  const int used = g_slots_used.load(std::memory_order_acquire);
  for (int i = 0; i <= used && i < kSlots; ++i) {
    Slot& s = g_slots[i];
    uintptr_t expect = 0;
    // end first, then begin (the handler reads begin first): a half-written slot never matches.
    if (s.end.load(std::memory_order_acquire) != 0) continue;
    if (!s.end.compare_exchange_strong(expect, end, std::memory_order_acq_rel)) continue;
    s.damaged.store(false, std::memory_order_relaxed);
    s.begin.store(begin, std::memory_order_release);
    int u = g_slots_used.load(std::memory_order_acquire);
    while (u < i + 1 && !g_slots_used.compare_exchange_weak(u, i + 1)) {
    }
    return i;
  }
  return -1;
}

}  // namespace


std::vector<std::string> damaged_files() {
  std::vector<std::string> out;
  std::lock_guard lock(g_paths_mu);
  const int used = g_slots_used.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i)
    if (g_slots[i].damaged.load(std::memory_order_acquire) && g_paths[i] &&
        std::find(out.begin(), out.end(), *g_paths[i]) == out.end())
      out.push_back(*g_paths[i]);
  return out;
}

bool FileMap::damaged() const {
  return slot_ >= 0 && g_slots[slot_].damaged.load(std::memory_order_acquire);
}

std::atomic<uint64_t> g_map_faults{0};

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
  f.path_ = std::make_shared<const std::string>(path);
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
  install_guard();
  void* p = ::mmap(nullptr, size_t(length), PROT_READ | PROT_WRITE, MAP_PRIVATE, *fd_,
                   off_t(start));
  if (p == MAP_FAILED) {
    error = std::string("cannot map: ") + std::strerror(errno);
    return nullptr;
  }
  const auto b = reinterpret_cast<uintptr_t>(p);
  const int slot = claim_slot(b, b + uintptr_t(length));
  if (slot < 0) {  // more live mappings than the guard tracks: read instead
    ::munmap(p, size_t(length));
    error = "too many mapped tensors";
    return nullptr;
  }
  {
    std::lock_guard lock(g_paths_mu);
    g_paths[slot] = path_;
  }
  // A hint: large sequential reads from the disk instead of a fault per few pages.
  if (prefetch) ::madvise(p, size_t(length), MADV_WILLNEED);
  return std::make_shared<const FileMap>(p, size_t(length),
                                         static_cast<char*>(p) + (offset - start), slot, path_);
}

FileMap::~FileMap() {
  if (slot_ >= 0) {  // out of the guard's table before the addresses can be reused
    {
      std::lock_guard lock(g_paths_mu);
      g_paths[slot_].reset();
    }
    g_slots[slot_].begin.store(0, std::memory_order_release);
    g_slots[slot_].end.store(0, std::memory_order_release);
  }
  ::munmap(base_, length_);
}

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
