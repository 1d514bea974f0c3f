// Writing safetensors: header built with nlohmann's ordered_json (insertion order, compact), data
// streamed tensor by tensor into a temporary file that replaces the target only once complete.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <filesystem>
#include <random>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/store/format.h"
#include "ember/store/safetensors.h"

namespace ember::store {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; a big-endian host would need byte swaps");

// Owns the temporary file: unless commit() ran, the destructor closes and deletes it, so an
// exception anywhere between creating it and renaming it leaves no debris and no half file.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
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
    if (fd_ < 0) throw IOError(detail::message(target, "cannot create a temporary file: " +
                                                           detail::os_error()));
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  void write(const void* data, size_t n) {
    auto p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t k = ::write(fd_, p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) fail("write failed");
      p += k;
      n -= size_t(k);
    }
  }
  // fsync before rename so that a crash cannot leave the new name pointing at missing data.
  void commit() {
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

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw IOError(detail::message(target_, what + ": " + detail::os_error()));
  }
  std::string target_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const Metadata& metadata) {
  // Validate everything before touching the disk.
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw ValueError(detail::message(path, "\"__metadata__\" is reserved, not a tensor name"));
    if (!seen.insert(name).second)
      throw ValueError(detail::message(path, "duplicate tensor name \"" + name + "\""));
    if (!t.defined())
      throw ValueError(detail::message(path, "tensor \"" + name + "\" is undefined"));
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t n = t.nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the spec's alignment padding
  uint64_t len = text.size();

  TempFile out(path);
  out.write(&len, 8);
  out.write(text.data(), text.size());
  // One tensor at a time: the host copy of a single tensor is the most held in memory.
  for (const auto& [name, t] : tensors) {
    if (t.numel() == 0) continue;
    TensorData d = t.data();
    out.write(d.bytes.data(), d.bytes.size());
  }
  out.commit();
}

}  // namespace ember::store
