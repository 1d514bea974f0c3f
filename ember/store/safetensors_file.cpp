// Reading safetensors: map the file, validate the whole header up front (so a file that opens is
// known to be sound), copy tensors out of the mapping on demand.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/store/format.h"
#include "ember/store/safetensors.h"

namespace ember::store {
namespace {

// The reference implementation's limit: larger headers are rejected before parsing.
constexpr uint64_t kMaxHeader = 100'000'000;

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

// A read-only private mapping of the whole file; the descriptor is closed as soon as it is mapped.
struct SafetensorsFile::Mapping {
  const uint8_t* data = nullptr;
  size_t size = 0;
  Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IOError(detail::message(path, "cannot open: " + detail::os_error()));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      std::string e = detail::os_error();
      ::close(fd);
      throw IOError(detail::message(path, "cannot stat: " + e));
    }
    size = size_t(st.st_size);
    if (size < 8) {
      ::close(fd);
      throw TruncatedError(detail::message(
          path, "truncated file: " + std::to_string(size) +
                    " bytes, shorter than the 8-byte header length"));
    }
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    std::string e = detail::os_error();
    ::close(fd);
    if (p == MAP_FAILED) throw IOError(detail::message(path, "cannot mmap: " + e));
    data = static_cast<const uint8_t*>(p);
  }
  ~Mapping() { ::munmap(const_cast<uint8_t*>(data), size); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  auto map = std::make_shared<const Mapping>(path);
  auto bad = [&](const std::string& m) { return FormatError(detail::message(path, m)); };
  uint64_t n = 0;
  std::memcpy(&n, map->data, 8);
  uint64_t avail = map->size - 8;
  if (n > kMaxHeader)
    throw bad("bad header: length " + std::to_string(n) + " exceeds the limit of " +
              std::to_string(kMaxHeader) + " bytes");
  if (n > avail)
    throw TruncatedError(detail::message(
        path, "truncated file: the header length is " + std::to_string(n) + " bytes but only " +
                  std::to_string(avail) + " bytes follow it"));
  std::string_view text(reinterpret_cast<const char*>(map->data) + 8, n);
  if (text.empty() || text[0] != '{') throw bad("bad header: it does not start with '{'");

  // nlohmann keeps the last of duplicate keys silently; a file with two entries of one name is
  // ambiguous, so the parse callback rejects it.
  std::set<std::string> top_keys;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(
        text, [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& j) {
          if (depth == 1 && ev == nlohmann::json::parse_event_t::key &&
              !top_keys.insert(j.get<std::string>()).second)
            throw bad("bad header: duplicate key " + in_quotes(j.get<std::string>()));
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("bad header: not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("bad header: not a JSON object");

  std::vector<std::pair<std::string, TensorInfo>> entries;
  for (auto& [key, v] : header.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) throw bad("bad header: __metadata__ is not an object");
      for (auto& [mk, mv] : v.items()) {
        if (!mv.is_string()) throw bad("bad header: __metadata__ value " + in_quotes(mk) +
                                       " is not a string");
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    std::string what = "tensor " + in_quotes(key) + ": ";
    if (!v.is_object()) throw bad(what + "entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad(what + "no dtype string");
    auto dt = detail::dtype_from_safetensors(v["dtype"].get<std::string>());
    if (!dt) throw bad(what + "unknown dtype " + in_quotes(v["dtype"].get<std::string>()));
    TensorInfo info;
    info.dtype = *dt;
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad(what + "no shape array");
    // numel * itemsize must not wrap: every partial product stays within uint64.
    uint64_t bytes = itemsize(*dt);
    for (auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw bad(what + "shape " + v["shape"].dump() +
                                             " holds a non-integer or negative size");
      uint64_t s = d.get<uint64_t>();
      if (s > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (s != 0 && bytes > std::numeric_limits<uint64_t>::max() / s))
        throw bad(what + "shape " + v["shape"].dump() + " is too large");
      bytes *= s;
      info.shape.push_back(int64_t(s));
    }
    static const nlohmann::json kNull;
    const auto& off = v.contains("data_offsets") ? v["data_offsets"] : kNull;
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      throw bad(what + "data_offsets is not a pair of non-negative integers");
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (info.end < info.begin) throw bad(what + "data_offsets " + off.dump() + " end before begin");
    if (info.end - info.begin != bytes)
      throw bad(what + "data_offsets " + off.dump() + " span " +
                std::to_string(info.end - info.begin) + " bytes but " +
                std::string(safetensors_dtype_name(*dt)) + " shape " + v["shape"].dump() +
                " needs " + std::to_string(bytes));
    entries.emplace_back(key, std::move(info));
  }

  // The spec requires the tensors to tile the data section exactly: no overlap, no hole.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.second.begin != b.second.begin ? a.second.begin < b.second.begin
                                            : a.second.end < b.second.end;
  });
  uint64_t data_size = avail - n, at = 0;
  std::string prev;
  for (auto& [key, info] : entries) {
    if (info.begin != at)
      throw bad("tensor " + in_quotes(key) + " starts at data byte " + std::to_string(info.begin) +
                " but " + (prev.empty() ? std::string("the data starts at 0")
                                        : "the previous tensor " + in_quotes(prev) + " ends at " +
                                              std::to_string(at)) +
                (info.begin < at ? " (overlap)" : " (gap)"));
    at = info.end;
    prev = key;
    keys_.push_back(key);
    infos_.emplace(key, info);
  }
  if (at > data_size)
    throw TruncatedError(detail::message(
        path, "truncated file: tensor " + in_quotes(prev) + " ends at data byte " +
                  std::to_string(at) + " but the data section has " + std::to_string(data_size) +
                  " bytes"));
  if (at < data_size)
    throw bad(std::to_string(data_size - at) + " unused bytes after the last tensor");
  data_start_ = 8 + n;
  map_ = std::move(map);
}

bool SafetensorsFile::contains(const std::string& name) const { return infos_.count(name) > 0; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  if (it == infos_.end())
    throw KeyError(detail::message(path_, "no tensor named " + in_quotes(name)));
  return it->second;
}

Tensor SafetensorsFile::get(const std::string& name, std::optional<DType> dtype,
                            std::optional<Device> device) const {
  const TensorInfo& ti = info(name);
  const uint8_t* p = map_->data + data_start_ + ti.begin;
  // A bool byte other than 0 or 1 is not a valid C++ bool: refuse it rather than load it.
  if (ti.dtype == kBool)
    for (uint64_t i = 0; i < ti.end - ti.begin; ++i)
      if (p[i] > 1)
        throw FormatError(detail::message(path_, "tensor " + in_quotes(name) + ": BOOL byte " +
                                                     std::to_string(i) + " is " +
                                                     std::to_string(p[i]) + ", not 0 or 1"));
  return from_blob_copy(p, ti.dtype, ti.shape, dtype.value_or(ti.dtype), resolve_device(device));
}

TensorMap SafetensorsFile::load_all(std::optional<DType> dtype,
                                    std::optional<Device> device) const {
  TensorMap out;
  for (const auto& k : keys_) out.emplace_back(k, get(k, dtype, device));
  return out;
}

TensorMap load_safetensors(const std::string& path) { return SafetensorsFile(path).load_all(); }

}  // namespace ember::store
