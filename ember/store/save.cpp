// Writing safetensors: header built with nlohmann's ordered_json (insertion order, compact), data
// streamed tensor by tensor into a temporary file that replaces the target only once complete.

#include <bit>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/store/atomic_file.h"
#include "ember/store/format.h"
#include "ember/store/safetensors.h"

namespace ember::store {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; a big-endian host would need byte swaps");

// The header is JSON, whose strings must be valid UTF-8: refuse a name that is not, naming it,
// before nlohmann's dump() would throw its own exception type.
void check_utf8(const std::string& path, const std::string& s, const char* what) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    static const char kHex[] = "0123456789abcdef";
    std::string shown;  // printable bytes as they are, others as \xNN
    for (unsigned char c : s.substr(0, 40)) {
      if (c >= 0x20 && c < 0x7f) shown += char(c);
      else shown += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    }
    throw ValueError(detail::message(path, std::string(what) + " \"" + shown +
                                               "\" is not valid UTF-8"));
  }
}

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
    check_utf8(path, name, "tensor name");
  }
  for (const auto& [k, v] : metadata) {
    check_utf8(path, k, "metadata key");
    check_utf8(path, v, "metadata value");
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

  AtomicFile out(path);
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
