#pragma once
// Weights on disk in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length, a JSON header, then the tensors' bytes back to back.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::store {

/// Named tensors in file order (names must be unique).
using TensorMap = std::vector<std::pair<std::string, Tensor>>;
/// The header's free-form "__metadata__" string map.
using Metadata = std::map<std::string, std::string>;

/// Base of every weights-on-disk error; the message names the file.
class StoreError : public Error { using Error::Error; };
/// The file could not be opened, read, written, synced or renamed (the OS error is included).
class IOError : public StoreError { using StoreError::StoreError; };
/// The file is not valid safetensors: bad header, bad offsets, unknown dtype, ...
class FormatError : public StoreError { using StoreError::StoreError; };
/// The file ends before the header or the data it announces.
class TruncatedError : public FormatError { using FormatError::FormatError; };
/// A name that is not in the file.
class KeyError : public StoreError { using StoreError::StoreError; };

/// How a reader takes tensor bytes from a file (safetensors and PyTorch files alike).
struct ReadOptions {
  /// Map the file (private, copy-on-write) and hand out tensors whose storage is the mapping:
  /// nothing is read or copied until a tensor's bytes are used, and writing into one never
  /// changes the file. When false, or when the environment variable EMBER_MMAP is 0, or when
  /// the file system cannot map the file, every tensor is read into its own memory instead,
  /// with the same values.
  bool mmap = true;
  /// With mmap: ask the kernel to read each tensor's bytes ahead, in the background, as soon as
  /// the tensor is taken (for loads that use every byte at once, like load_into, which sets it;
  /// a file on a slow disk then streams in large reads rather than a page fault at a time).
  bool prefetch = false;
};

namespace detail {
struct RangeAccess;
}  // namespace detail

/// The safetensors dtype string ("F32", "BF16", "I64", "BOOL", ...) for `d`.
std::string_view safetensors_dtype_name(DType d);

/// Writes `tensors` (in order) and `metadata` to `path`. The bytes go to a temporary file in the
/// same directory, which is fsynced and renamed over `path`: a failure leaves `path` untouched.
void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const Metadata& metadata = {});

/// One tensor's header entry.
struct TensorInfo {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range in the data section
};

/// A safetensors file, validated when opened and kept open; each tensor's bytes are read only
/// when asked for (mapped, see ReadOptions). Copies share the open file, which is closed with
/// the last one and any tensor over its mapping.
class SafetensorsFile {
 public:
  /// Opens and validates `path`; throws IOError (cannot open, not a regular file), TruncatedError
  /// or FormatError. Opening never blocks: FIFOs, devices and directories are refused.
  explicit SafetensorsFile(const std::string& path, const ReadOptions& options = {});
  /// The same for a file's bytes held in memory (a download, an embedded blob); `name` stands
  /// for the path in messages.
  static SafetensorsFile from_bytes(std::string bytes, const std::string& name = "<memory>");

  const std::string& path() const { return path_; }
  /// Tensor names in data order.
  const std::vector<std::string>& keys() const { return keys_; }
  bool contains(const std::string& name) const;
  /// Dtype, shape and byte range of `name`; throws KeyError.
  const TensorInfo& info(const std::string& name) const;
  const Metadata& metadata() const { return metadata_; }
  /// Materialises `name`, converted to `dtype` when given, on `device` (default device if empty).
  /// On a host device without conversion, a mapped file's tensor is a view of the mapping
  /// (aligned to its element size; otherwise it is read). Throws IOError if the file shrank
  /// since it was opened, FormatError for a BOOL byte other than 0 or 1.
  Tensor get(const std::string& name, std::optional<DType> dtype = {},
             std::optional<Device> device = {}) const;
  /// Every tensor, in data order.
  TensorMap load_all(std::optional<DType> dtype = {}, std::optional<Device> device = {}) const;

 private:
  friend struct detail::RangeAccess;
  struct Source;
  SafetensorsFile(std::shared_ptr<const Source> src, const std::string& path);
  std::string path_;
  std::shared_ptr<const Source> src_;
  std::vector<std::string> keys_;
  std::map<std::string, TensorInfo> infos_;
  Metadata metadata_;
  uint64_t data_start_ = 0;
};

/// Shorthand for SafetensorsFile(path, options).load_all().
TensorMap load_safetensors(const std::string& path, const ReadOptions& options = {});

}  // namespace ember::store
