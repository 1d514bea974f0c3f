// Reading safetensors: read and validate the whole header up front (so a file that opens is
// known to be sound), keep the file open, read each tensor's bytes when it is asked for.
// Nothing is trusted before it is checked against the bytes that exist: the header length
// against the file size, every shape against the limits on tensors, every byte range against
// the data section. The header is read with positioned reads (pread); tensors are views of a
// private mapping of the file when it maps, else read the same way. The file's size is checked
// again (fstat) before each mapped tensor is handed out, so a file truncated after it was opened
// gives an IOError rather than a SIGBUS.
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/detail/file.h"
#include "ember/detail/text.h"
#include "ember/store/format.h"
#include "ember/store/mapped.h"
#include "ember/store/safetensors.h"

namespace ember::store {
namespace {

// The reference implementation's limit: larger headers are rejected before parsing.
constexpr uint64_t kMaxHeader = 100'000'000;
// A valid header nests three levels deep ({name: {"shape": [...]}}); anything deeper is refused
// while parsing, so nothing recursive (dump, copy, compare) ever meets a deep document.
constexpr int kMaxDepth = 3;

// A name or JSON value from the file, for a message: short, whatever the file holds.
// (Appended in place: GCC 12 at -O3 reports a false -Wrestrict for "\"" + std::string.)
std::string in_quotes(const std::string& s) {
  std::string out = "\"";
  out += ember::detail::shorten(s);
  out += '"';
  return out;
}
std::string brief(const nlohmann::json& j) { return ember::detail::shorten(j.dump(), 80); }

}  // namespace

// Where the bytes come from: an open regular file, or a buffer in memory.
struct SafetensorsFile::Source : ember::detail::ByteSource {};

SafetensorsFile::SafetensorsFile(const std::string& path, const ReadOptions& options)
    : SafetensorsFile(
          [&] {
            auto src = std::make_shared<Source>();
            std::string error;
            src->file = ember::detail::ReadFile::open(path, error);
            if (!src->file) throw IOError(detail::message(path, error));
            src->mapped = ember::detail::mmap_enabled(options.mmap);
            src->prefetch = options.prefetch;
            return std::shared_ptr<const Source>(std::move(src));
          }(),
          path) {}

SafetensorsFile SafetensorsFile::from_bytes(std::string bytes, const std::string& name) {
  auto src = std::make_shared<Source>();
  src->bytes = std::move(bytes);
  src->in_memory = true;
  return SafetensorsFile(std::move(src), name);
}

namespace {
// What a file that is not safetensors looks like from its first 8 bytes, so that the error names
// the format found rather than a nonsensical header length; null when none is recognised.
const char* other_format(const unsigned char* b) {
  if (b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4)
    return "a zip archive, such as a PyTorch .pt/.pth file from torch.save (read those with "
           "store::load_pytorch or store::load_into)";
  if (b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
    return "a Python pickle, such as a legacy PyTorch .pt/.pth file (read those with "
           "store::load_pytorch or store::load_into)";
  if (b[0] == 0x93 && b[1] == 'N' && b[2] == 'U' && b[3] == 'M') return "a NumPy .npy file";
  if (b[0] == 0x89 && b[1] == 'H' && b[2] == 'D' && b[3] == 'F') return "an HDF5 file";
  if (b[0] == 0x1f && b[1] == 0x8b) return "a gzip stream";
  return nullptr;
}
}  // namespace

SafetensorsFile::SafetensorsFile(std::shared_ptr<const Source> src, const std::string& path)
    : path_(path) {
  auto bad = [&](const std::string& m) { return FormatError(detail::message(path, m)); };
  auto io = [&](const std::string& m) { return IOError(detail::message(path, m)); };
  const uint64_t size = src->size();
  if (size < 8)
    throw TruncatedError(detail::message(
        path, "truncated file: " + std::to_string(size) +
                  " bytes, shorter than the 8-byte header length"));
  uint64_t n = 0;
  std::string error;
  if (!src->read(0, &n, 8, error)) throw io(error);
  uint64_t avail = size - 8;
  // Only a header that cannot be safetensors' is looked at as another format: a valid header's
  // length may begin with any bytes (0x80 0x02 is a length of 640 + ...).
  const char* other = other_format(reinterpret_cast<const unsigned char*>(&n));
  auto not_safetensors = [&] {
    return bad(std::string("not a safetensors file: it starts like ") + other);
  };
  if (n > kMaxHeader && other) throw not_safetensors();
  if (n > kMaxHeader)
    throw bad("bad header: length " + std::to_string(n) + " exceeds the limit of " +
              std::to_string(kMaxHeader) + " bytes");
  if (n > avail && other) throw not_safetensors();
  if (n > avail)
    throw TruncatedError(detail::message(
        path, "truncated file: the header length is " + std::to_string(n) + " bytes but only " +
                  std::to_string(avail) + " bytes follow it"));
  std::string text(size_t(n), '\0');
  if (!src->read(8, text.data(), text.size(), error)) throw io(error);
  if ((text.empty() || text[0] != '{') && other) throw not_safetensors();
  if (text.empty() || text[0] != '{') throw bad("bad header: it does not start with '{'");

  // nlohmann keeps the last of duplicate keys silently; a file with two entries of one name is
  // ambiguous, so the parse callback rejects it. It also bounds the nesting depth.
  std::set<std::string> top_keys;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(
        text, [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& j) {
          using E = nlohmann::json::parse_event_t;
          if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxDepth)
            throw bad("bad header: nested deeper than " + std::to_string(kMaxDepth) +
                      " levels (a header is {name: {\"shape\": [...], ...}})");
          if (depth == 1 && ev == E::key && !top_keys.insert(j.get<std::string>()).second)
            throw bad("bad header: duplicate key " + in_quotes(j.get<std::string>()));
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    throw bad("bad header: not valid JSON (" + ember::detail::shorten(e.what()) + ")");
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
    const auto& shape = v["shape"];
    if (shape.size() > kMaxDims)
      throw bad(what + "shape " + brief(shape) + " has " + std::to_string(shape.size()) +
                " dims, more than the " + std::to_string(kMaxDims) + " a tensor may have");
    // The same limits as every tensor's (see check_shape): the product of the sizes, each
    // counted as at least 1, stays within 2^56, so numel * itemsize cannot wrap either.
    int64_t extent = 1;
    for (auto& d : shape) {
      if (!d.is_number_unsigned())
        throw bad(what + "shape " + brief(shape) + " holds a non-integer or negative size");
      uint64_t s = d.get<uint64_t>();
      if (s > uint64_t(kMaxNumel) ||
          __builtin_mul_overflow(extent, std::max<int64_t>(int64_t(s), 1), &extent) ||
          extent > kMaxNumel)
        throw bad(what + "shape " + brief(shape) + " is too large (the most a tensor may hold " +
                  "is 2^56 elements)");
      info.shape.push_back(int64_t(s));
    }
    uint64_t bytes = uint64_t(numel_of(info.shape)) * itemsize(*dt);
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
                std::string(safetensors_dtype_name(*dt)) + " shape " + brief(shape) +
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
  src_ = std::move(src);
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
  const Device want = resolve_device(device);
  // Host backends are read into (or view the mapping) directly; others through a flex tensor.
  const Device host = detail::host_for(want.without_layers());
  const uint64_t at = data_start_ + ti.begin, n = ti.end - ti.begin;
  std::string error;
  Tensor raw;
  if (src_->mapped && detail::mappable(at, n, ti.dtype)) {
    // Mapped after the file's size is checked; a file that shrank, or a file system that
    // cannot map it, is read (and a shrunk file is then an IOError).
    if (auto s = detail::mapped_storage(src_->file, at, n, host, error, src_->prefetch))
      raw = detail::tensor_over(std::move(s), ti.dtype, ti.shape, contiguous_strides(ti.shape), 0,
                                host);
  }
  if (!raw.defined()) {
    raw = ember::detail::empty_tensor(ti.shape, ti.dtype, host);
    if (n && !src_->read(at, raw.raw_data(), size_t(n), error))
      throw IOError(detail::message(path_, "tensor " + in_quotes(name) + ": " + error));
  }
  // A bool byte other than 0 or 1 is not a valid C++ bool: refuse it rather than load it.
  if (ti.dtype == kBool)
    if (auto i = detail::bad_bool_byte(raw.raw_data(), n))
      throw FormatError(detail::message(
          path_, "tensor " + in_quotes(name) + ": BOOL byte " + std::to_string(*i) + " is " +
                     std::to_string(static_cast<const uint8_t*>(raw.raw_data())[*i]) +
                     ", not 0 or 1"));
  return detail::deliver(std::move(raw), dtype, want);
}

TensorMap SafetensorsFile::load_all(std::optional<DType> dtype,
                                    std::optional<Device> device) const {
  TensorMap out;
  for (const auto& k : keys_) out.emplace_back(k, get(k, dtype, device));
  return out;
}

TensorMap load_safetensors(const std::string& path, const ReadOptions& options) {
  return SafetensorsFile(path, options).load_all();
}

}  // namespace ember::store

namespace ember::store::detail {

std::optional<FileRange> RangeAccess::range(const SafetensorsFile& file, const std::string& key) {
  const TensorInfo& ti = file.info(key);
  if (file.src_->in_memory || ti.dtype == kBool || ti.end == ti.begin) return std::nullopt;
  return FileRange{file.src_, ti.dtype, file.data_start_ + ti.begin, ti.end - ti.begin};
}

}  // namespace ember::store::detail
