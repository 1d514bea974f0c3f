#pragma once
// Private to the PyTorch reader: the object tree's nodes (owned by one document, so values that
// refer to each other never form an ownership cycle), the storages and the unpickler.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ember/detail/file.h"
#include "ember/store/pytorch.h"

namespace ember::store::detail {

/// Where a file's bytes come from: an open regular file, or a buffer in memory.
using PtSource = ember::detail::ByteSource;

/// One storage: `numel` elements of `dtype`, either in place in the file (`offset`: a stored zip
/// entry, or the legacy format's data section) or in a compressed zip entry (`entry`). The
/// ember storage made of it is kept (weakly) so that every live tensor of it shares one.
struct PtStorage {
  std::string key;
  DType dtype = DType::U8;
  int64_t numel = 0;
  bool in_place = true;
  uint64_t offset = 0;
  std::string entry;  // zip entry name (compressed storages, messages)
  uint64_t zip_pos[2] = {0, 0};  // minizip's unz64_file_pos of a compressed entry
  mutable std::mutex mu;  // guards the two below
  mutable std::weak_ptr<Storage> made;
  mutable Device made_on;
};

struct PtTensor {
  std::shared_ptr<PtStorage> storage;
  int64_t offset = 0;  // in elements
  Shape shape, strides;
};

/// Node kinds beyond the public ones: what the unpickler keeps on its stack.
enum class PtInternal : uint8_t { kValue, kGlobal, kStorageType, kStorage, kMark };

struct PtNode {
  PtValue::Kind kind = PtValue::Kind::kNone;
  PtInternal internal = PtInternal::kValue;
  bool b = false;
  bool big = false;  // an int beyond int64 (its little-endian bytes are in s)
  int64_t i = 0;
  double f = 0;
  std::string s;  // string, bytes, or a global's "module.name"
  DType dtype = DType::U8;  // storage types and storages
  std::vector<const PtNode*> items;
  std::vector<std::pair<const PtNode*, const PtNode*>> entries;
  std::shared_ptr<PtStorage> storage;
  const PtTensor* tensor = nullptr;
};

struct PtDoc {
  std::string path;
  std::shared_ptr<const PtSource> src;
  std::deque<PtNode> nodes;
  std::deque<PtTensor> tensors;
  const PtNode* root = nullptr;
  PtNode* add(PtValue::Kind k, PtInternal in = PtInternal::kValue) {
    nodes.emplace_back();
    nodes.back().kind = k;
    nodes.back().internal = in;
    return &nodes.back();
  }
  PtValue value(std::shared_ptr<const PtDoc> self, const PtNode* n) const {
    return PtValue(std::move(self), n);
  }
  /// "[load_pytorch] <path>: <msg>"
  std::string message(const std::string& msg) const;
  [[noreturn]] void fail(const std::string& msg) const;
};

/// Sequential reads from a source between two offsets, buffered.
class PtReader {
 public:
  PtReader(const PtSource& src, uint64_t begin, uint64_t end, const PtDoc& doc)
      : src_(src), pos_(begin), end_(end), doc_(doc) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return end_ - pos_; }
  /// `n` bytes, or a TruncatedError saying what was being read.
  void read(void* dst, size_t n, const char* what);
  uint8_t byte(const char* what) {
    uint8_t b;
    read(&b, 1, what);
    return b;
  }
  std::string line(const char* what);  // up to '\n', which is dropped

 private:
  const PtSource& src_;
  uint64_t pos_, end_;
  const PtDoc& doc_;
  std::string buf_;
  uint64_t buf_at_ = 0;
};

/// Turns a persistent id (the tuple a pickle names a storage by) into a storage node.
using PersistentLoad = std::function<const PtNode*(const PtNode& pid)>;

/// Reads one pickle (up to its STOP) from `in` into `doc`'s nodes and returns the result.
const PtNode* unpickle(PtDoc& doc, PtReader& in, const PersistentLoad& persistent_load);

/// Checks the tree under `root` has no cycle, is at most kMaxPtDepth deep and expands (shared
/// values counted each time they are reached) to at most kMaxPtExpanded values.
void check_tree(const PtDoc& doc, const PtNode* root);
inline constexpr int kMaxPtDepth = 200;
inline constexpr uint64_t kMaxPtExpanded = 10'000'000;

/// The dtype of a storage class name ("FloatStorage"), if ember has it.
std::optional<DType> dtype_of_storage(std::string_view name);
/// The storage class name for `d` ("BFloat16Storage").
const char* storage_name(DType d);

}  // namespace ember::store::detail
