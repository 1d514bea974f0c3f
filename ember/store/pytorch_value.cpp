// PtValue: the object tree's accessors, flattening to a state_dict, and reading a tensor's bytes.
#include <cstring>
#include <unordered_map>

#include "ember/backends/backend.h"
#include "ember/detail/text.h"
#include "ember/store/pytorch_impl.h"

namespace ember::store {
namespace detail {

std::string PtDoc::message(const std::string& msg) const {
  return "[load_pytorch] " + path + ": " + msg;
}
void PtDoc::fail(const std::string& msg) const { throw FormatError(message(msg)); }

void PtReader::read(void* dst, size_t n, const char* what) {
  if (n > end_ - pos_)
    throw TruncatedError(doc_.message(std::string("truncated: the file ends inside ") + what));
  auto* out = static_cast<char*>(dst);
  while (n) {
    if (pos_ < buf_at_ || pos_ >= buf_at_ + buf_.size()) {
      size_t k = size_t(std::min<uint64_t>(end_ - pos_, 1 << 16));
      buf_.resize(k);
      std::string error;
      if (!src_.read(pos_, buf_.data(), k, error)) throw IOError(doc_.message(error));
      buf_at_ = pos_;
    }
    size_t k = std::min<size_t>(n, size_t(buf_at_ + buf_.size() - pos_));
    std::memcpy(out, buf_.data() + (pos_ - buf_at_), k);
    out += k;
    pos_ += k;
    n -= k;
  }
}

std::string PtReader::line(const char* what) {
  std::string s;
  for (;;) {
    char c = char(byte(what));
    if (c == '\n') return s;
    if (s.size() >= 4096) doc_.fail(std::string(what) + " is longer than 4096 bytes");
    s += c;
  }
}

namespace {
struct StorageName {
  DType dtype;
  const char* name;
};
constexpr StorageName kStorages[] = {
    {kBool, "BoolStorage"},   {kU8, "ByteStorage"},        {kI8, "CharStorage"},
    {kI16, "ShortStorage"},   {kI32, "IntStorage"},        {kI64, "LongStorage"},
    {kF16, "HalfStorage"},    {kBF16, "BFloat16Storage"},  {kF32, "FloatStorage"},
    {kF64, "DoubleStorage"},  {kU8, "UntypedStorage"}};
}  // namespace

std::optional<DType> dtype_of_storage(std::string_view name) {
  for (const auto& s : kStorages)
    if (name == s.name) return s.dtype;
  return std::nullopt;
}
const char* storage_name(DType d) {
  for (const auto& s : kStorages)
    if (s.dtype == d) return s.name;
  return "?";
}

// Iterative, so a hostile depth cannot overflow the stack here; values are sized bottom-up with
// saturation, so a DAG of shared lists cannot make the flattening below exponential.
void check_tree(const PtDoc& doc, const PtNode* root) {
  enum : uint8_t { kNew, kOpen, kDone };
  std::unordered_map<const PtNode*, std::pair<uint8_t, uint64_t>> seen;  // state, expanded size
  struct Frame {
    const PtNode* n;
    size_t next;
  };
  std::vector<Frame> st{{root, 0}};
  seen[root] = {kOpen, 0};
  auto child = [](const PtNode* n, size_t i) -> const PtNode* {
    if (i < n->items.size()) return n->items[i];
    i -= n->items.size();
    if (i < 2 * n->entries.size())
      return i % 2 ? n->entries[i / 2].second : n->entries[i / 2].first;
    return nullptr;
  };
  while (!st.empty()) {
    Frame& f = st.back();
    if (const PtNode* c = child(f.n, f.next++)) {
      auto& [state, size] = seen[c];
      if (state == kOpen) doc.fail("the pickle's values contain themselves (a cycle)");
      if (state == kDone) continue;
      if (st.size() >= size_t(kMaxPtDepth))
        doc.fail("values nested deeper than " + std::to_string(kMaxPtDepth) + " levels");
      state = kOpen;
      st.push_back({c, 0});
      continue;
    }
    uint64_t total = 1;
    for (size_t i = 0; const PtNode* c = child(f.n, i); ++i)
      total = std::min(kMaxPtExpanded + 1, total + seen[c].second);
    if (total > kMaxPtExpanded)
      doc.fail("shared values expand to more than " + std::to_string(kMaxPtExpanded) + " values");
    seen[f.n] = {kDone, total};
    st.pop_back();
  }
}

}  // namespace detail

using detail::PtNode;
using Kind = PtValue::Kind;

const detail::PtNode& PtValue::node(const char* what) const {
  if (!node_) throw ValueError(std::string("[PtValue] ") + what + " of an empty value");
  return *node_;
}
PtValue::Kind PtValue::kind() const { return node_ ? node_->kind : Kind::kNone; }
const std::string& PtValue::path() const {
  static const std::string kEmpty;
  return doc_ ? doc_->path : kEmpty;
}

namespace {
const char* kind_name(Kind k) {
  static const char* k_names[] = {"None", "bool", "int",  "float", "str",   "bytes",
                                  "tensor", "list", "tuple", "dict", "object"};
  return k_names[int(k)];
}
[[noreturn]] void wrong_kind(const PtValue& v, const char* want) {
  throw ValueError("[PtValue] " + v.path() + ": a " + kind_name(v.kind()) + ", not a " + want);
}
}  // namespace

bool PtValue::as_bool() const {
  if (kind() != Kind::kBool) wrong_kind(*this, "bool");
  return node_->b;
}
int64_t PtValue::as_int() const {
  if (kind() == Kind::kBool) return node_->b;
  if (kind() != Kind::kInt) wrong_kind(*this, "int");
  if (node_->big) throw ValueError("[PtValue] " + path() + ": an int beyond int64");
  return node_->i;
}
double PtValue::as_float() const {
  if (kind() == Kind::kFloat) return node_->f;
  if (kind() == Kind::kInt || kind() == Kind::kBool) return double(as_int());
  wrong_kind(*this, "float");
}
const std::string& PtValue::as_string() const {
  if (kind() != Kind::kString && kind() != Kind::kBytes && kind() != Kind::kObject)
    wrong_kind(*this, "str");
  return node_->s;
}

size_t PtValue::size() const {
  switch (kind()) {
    case Kind::kList: case Kind::kTuple: return node_->items.size();
    case Kind::kDict: return node_->entries.size();
    default: return 0;
  }
}
PtValue PtValue::operator[](size_t i) const {
  if (kind() != Kind::kList && kind() != Kind::kTuple) wrong_kind(*this, "list or tuple");
  if (i >= node_->items.size())
    throw IndexError("[PtValue] " + path() + ": index " + std::to_string(i) + " of a " +
                     kind_name(kind()) + " of " + std::to_string(node_->items.size()));
  return PtValue(doc_, node_->items[i]);
}
std::vector<std::pair<PtValue, PtValue>> PtValue::entries() const {
  if (kind() != Kind::kDict) wrong_kind(*this, "dict");
  std::vector<std::pair<PtValue, PtValue>> out;
  for (auto [k, v] : node_->entries) out.emplace_back(PtValue(doc_, k), PtValue(doc_, v));
  return out;
}
std::optional<PtValue> PtValue::find(std::string_view key) const {
  if (kind() != Kind::kDict) wrong_kind(*this, "dict");
  // The last of repeated keys wins, as in Python.
  for (auto it = node_->entries.rbegin(); it != node_->entries.rend(); ++it)
    if (it->first->kind == Kind::kString && it->first->s == key) return PtValue(doc_, it->second);
  return std::nullopt;
}
PtValue PtValue::at(std::string_view key) const {
  if (auto v = find(key)) return *v;
  throw KeyError("[PtValue] " + path() + ": no key \"" +
                 ember::detail::shorten(std::string(key)) + "\"");
}

DType PtValue::tensor_dtype() const {
  if (!is_tensor()) wrong_kind(*this, "tensor");
  return node_->tensor->storage->dtype;
}
const Shape& PtValue::tensor_shape() const {
  if (!is_tensor()) wrong_kind(*this, "tensor");
  return node_->tensor->shape;
}

namespace {
// A dict key or list position as it appears in a dotted name.
std::string key_text(const PtNode* k) {
  switch (k->kind) {
    case Kind::kString: case Kind::kBytes: return k->s;
    case Kind::kInt: return k->big ? "<big int>" : std::to_string(k->i);
    case Kind::kBool: return k->b ? "True" : "False";
    case Kind::kNone: return "None";
    case Kind::kFloat: return ember::detail::shorten(std::to_string(k->f));
    default: return "<" + std::string(kind_name(k->kind)) + ">";
  }
}
}  // namespace

std::vector<std::pair<std::string, PtValue>> PtValue::tensors(const std::string& prefix) const {
  std::vector<std::pair<std::string, PtValue>> out;
  // Depth is bounded by check_tree (kMaxPtDepth), so recursion is safe here.
  std::function<void(const PtNode*, const std::string&)> walk = [&](const PtNode* n,
                                                                   const std::string& name) {
    auto join = [&](const std::string& k) { return name.empty() ? k : name + "." + k; };
    if (n->kind == Kind::kTensor) out.emplace_back(name, PtValue(doc_, n));
    for (size_t i = 0; i < n->items.size(); ++i) walk(n->items[i], join(std::to_string(i)));
    for (auto [k, v] : n->entries) walk(v, join(key_text(k)));
  };
  if (node_) walk(node_, prefix);
  return out;
}

TensorMap PtValue::state_dict(std::optional<DType> dtype, std::optional<Device> device) const {
  TensorMap out;
  for (auto& [k, v] : tensors()) out.emplace_back(k, v.tensor(dtype, device));
  return out;
}

PtValue PtValue::model_state() const {
  if (is_dict())
    for (const char* k : {"state_dict", "model_state_dict", "model"})
      if (auto v = find(k); v && v->is_dict() && !v->tensors().empty()) return *v;
  return *this;
}

}  // namespace ember::store
