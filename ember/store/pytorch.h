#pragma once
// PyTorch files: what torch.save writes, read without running any code from the file. Both
// formats are read: the zip archive (PyTorch >= 1.6: a pickle, data.pkl, beside one entry per
// storage) and the legacy stream (pickles followed by the storages' bytes). The pickle goes
// through ember's own restricted unpickler, which honours only the globals that
// torch.load(weights_only=True) allows for tensors and containers; any other is refused.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/store/safetensors.h"

namespace ember::store {

/// The pickle names a global (a function or class) that loading a checkpoint must not use:
/// `os.system`, `builtins.eval`, a user's class, ... The message names it; nothing was run.
class UnsafePickleError : public FormatError {
 public:
  UnsafePickleError(const std::string& msg, std::string global)
      : FormatError(msg), global(std::move(global)) {}
  std::string global;  // "module.name"
};

namespace detail {
struct PtDoc;
struct PtNode;
struct RangeAccess;
}  // namespace detail

/// One value of a PyTorch file's object tree. A handle: copies share the opened file, which stays
/// open while any value of it lives. Tensors are read only when tensor() asks for them.
class PtValue {
 public:
  /// Sets and frozensets read as kList; torch.Size as kTuple; OrderedDict as kDict. kObject is
  /// an allowed torch object with no value of its own (a dtype such as torch.float32, a storage
  /// saved by itself): as_string() names it.
  enum class Kind : uint8_t {
    kNone, kBool, kInt, kFloat, kString, kBytes, kTensor, kList, kTuple, kDict, kObject
  };

  PtValue() = default;
  Kind kind() const;
  bool is_tensor() const { return kind() == Kind::kTensor; }
  bool is_dict() const { return kind() == Kind::kDict; }
  /// The file's name, as given to load_pytorch.
  const std::string& path() const;

  /// Scalars; each throws ValueError for another kind (as_float accepts ints and bools, as_int
  /// bools; an int beyond int64 is a ValueError).
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  /// A string's text (kString, kBytes) or an object's name ("torch.float32").
  const std::string& as_string() const;

  /// Lists, tuples and dicts: the number of elements or entries (0 for other kinds).
  size_t size() const;
  /// Element `i` of a list or tuple; IndexError when out of range, ValueError for other kinds.
  PtValue operator[](size_t i) const;
  /// A dict's entries in file order (keys are strings, ints, ...).
  std::vector<std::pair<PtValue, PtValue>> entries() const;
  /// The entry of a dict whose key is the string `key`, if any.
  std::optional<PtValue> find(std::string_view key) const;
  /// The same, throwing KeyError when absent.
  PtValue at(std::string_view key) const;

  /// A tensor's dtype and shape, known without reading its bytes.
  DType tensor_dtype() const;
  const Shape& tensor_shape() const;
  /// The tensor as torch saved it: its offset and strides in its storage, which every live
  /// tensor of that storage shares (as torch.load's do). On a host device the storage is a view
  /// of the mapped file (see ReadOptions) when the entry is stored and aligned to its element
  /// size, else read (inflated, for a compressed entry) once into memory. Converted to `dtype`
  /// (a copy) when given, on `device`. Throws IOError if the file shrank since it was opened,
  /// FormatError for a bool byte other than 0 or 1.
  Tensor tensor(std::optional<DType> dtype = {}, std::optional<Device> device = {}) const;

  /// Every tensor under this value, depth first in file order, with dotted keys: dict keys (ints
  /// in decimal) and list/tuple positions joined by '.', after `prefix`. Nothing is read.
  std::vector<std::pair<std::string, PtValue>> tensors(const std::string& prefix = "") const;
  /// The same, read: what model.load_state_dict() would take from this value.
  TensorMap state_dict(std::optional<DType> dtype = {}, std::optional<Device> device = {}) const;
  /// The value that holds a model's weights: this dict's "state_dict" (PyTorch Lightning),
  /// "model_state_dict" or "model" entry when it holds tensors, else this value itself.
  PtValue model_state() const;

 private:
  friend struct detail::PtDoc;
  friend struct detail::RangeAccess;
  PtValue(std::shared_ptr<const detail::PtDoc> doc, const detail::PtNode* node)
      : doc_(std::move(doc)), node_(node) {}
  const detail::PtNode& node(const char* what) const;
  std::shared_ptr<const detail::PtDoc> doc_;
  const detail::PtNode* node_ = nullptr;
};

/// Opens a file written by torch.save (zip or legacy) and returns its object tree, validated:
/// every tensor's storage, offset, shape and strides are checked against the bytes that exist.
/// Throws IOError, TruncatedError, FormatError, UnsafePickleError; messages read
/// "[load_pytorch] <path>: ...". The pickle is read with positioned reads; the tensors' bytes
/// are mapped (options.mmap, on by default) and read from disk only when used.
PtValue load_pytorch(const std::string& path, const ReadOptions& options = {});
/// The same for a file's bytes held in memory; `name` stands for the path in messages.
PtValue load_pytorch_bytes(std::string bytes, const std::string& name = "<memory>");
/// Whether `path` looks like a PyTorch file (a zip archive, or a pickle), by its first bytes.
bool is_pytorch_file(const std::string& path);

/// Writes `state_dict` as an OrderedDict of tensors in torch.save's zip format (stored entries,
/// each tensor's bytes 64-byte aligned), readable by torch.load(path, weights_only=True). The
/// write is atomic: a failure leaves `path` untouched.
void save_pytorch(const std::string& path, const TensorMap& state_dict);

}  // namespace ember::store
