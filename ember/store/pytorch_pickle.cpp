// The restricted unpickler. A pickle is a program for a stack machine whose GLOBAL and REDUCE
// opcodes import and call arbitrary Python functions; this one knows a fixed set of globals (those
// torch.load(weights_only=True) allows for tensors and containers) and builds ember values for
// them. Any other global is refused by name before anything is built, so nothing a file says can
// run. Every count and length is checked against the bytes that are left before it is used.
#include <cstring>
#include <unordered_map>

#include "ember/detail/text.h"
#include "ember/store/pytorch_impl.h"

namespace ember::store::detail {
namespace {

using Kind = PtValue::Kind;

enum class Fn : uint8_t {
  kOrderedDict, kRebuildTensorV2, kRebuildTensor, kRebuildParameter, kRebuildFromTypeV2,
  kParameter, kSize, kSet, kObject
};

// The globals honoured, and the ones torch allows that ember cannot represent (refused as
// unsupported, not as unsafe).
std::optional<Fn> allowed(const std::string& g) {
  static const std::unordered_map<std::string, Fn> k = {
      {"collections.OrderedDict", Fn::kOrderedDict},
      {"torch._utils._rebuild_tensor_v2", Fn::kRebuildTensorV2},
      {"torch._utils._rebuild_tensor", Fn::kRebuildTensor},
      {"torch._utils._rebuild_parameter", Fn::kRebuildParameter},
      {"torch._tensor._rebuild_from_type_v2", Fn::kRebuildFromTypeV2},
      {"torch.nn.parameter.Parameter", Fn::kParameter},
      {"torch.Size", Fn::kSize},
      {"builtins.set", Fn::kSet}, {"builtins.frozenset", Fn::kSet},
      {"__builtin__.set", Fn::kSet}, {"torch.Tensor", Fn::kObject},
      {"torch.float16", Fn::kObject}, {"torch.float32", Fn::kObject},
      {"torch.float64", Fn::kObject}, {"torch.bfloat16", Fn::kObject},
      {"torch.int8", Fn::kObject}, {"torch.int16", Fn::kObject}, {"torch.int32", Fn::kObject},
      {"torch.int64", Fn::kObject}, {"torch.uint8", Fn::kObject}, {"torch.bool", Fn::kObject}};
  auto it = k.find(g);
  if (it == k.end()) return std::nullopt;
  return it->second;
}

bool unsupported_but_allowed(const std::string& g) {
  return g.rfind("torch._utils._rebuild_", 0) == 0 || g == "torch.serialization._get_layout" ||
         g.rfind("torch.complex", 0) == 0 || g.rfind("torch.Complex", 0) == 0 ||
         g.rfind("torch.Q", 0) == 0 || g.rfind("torch.cuda.", 0) == 0;
}

constexpr size_t kMaxMemo = 1u << 24;

class Machine {
 public:
  Machine(PtDoc& doc, PtReader& in, const PersistentLoad& pl) : doc_(doc), in_(in), pl_(pl) {}
  const PtNode* run();

 private:
  [[noreturn]] void fail(const std::string& m) const {
    doc_.fail("pickle byte " + std::to_string(op_at_) + ": " + m);
  }
  const PtNode* pop() {
    if (stack_.size() <= floor()) fail("opcode " + op_name() + " on an empty stack");
    const PtNode* n = stack_.back();
    stack_.pop_back();
    return n;
  }
  const PtNode* top() {
    if (stack_.size() <= floor()) fail("opcode " + op_name() + " on an empty stack");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<const PtNode*> pop_mark() {
    if (marks_.empty()) fail("opcode " + op_name() + " without a MARK");
    std::vector<const PtNode*> v(stack_.begin() + long(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return v;
  }
  std::string op_name() const {
    static const char kHex[] = "0123456789abcdef";
    return std::string("0x") + kHex[op_ >> 4] + kHex[op_ & 15];
  }
  uint64_t le(size_t n) {
    uint8_t b[8] = {};
    in_.read(b, n, "an opcode's argument");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(b[i]) << (8 * i);
    return v;
  }
  std::string bytes(uint64_t n) {
    if (n > in_.left()) fail("a string of " + std::to_string(n) + " bytes, but only " +
                             std::to_string(in_.left()) + " are left");
    std::string s(size_t(n), '\0');
    in_.read(s.data(), s.size(), "a string");
    return s;
  }
  void push_string(Kind k, std::string s) {
    PtNode* n = doc_.add(k);
    n->s = std::move(s);
    stack_.push_back(n);
  }
  void push_int(int64_t v) {
    PtNode* n = doc_.add(Kind::kInt);
    n->i = v;
    stack_.push_back(n);
  }
  void push_long(const std::string& b);
  PtNode* mutable_top(Kind want, const char* op);
  void global(const std::string& module, const std::string& name);
  const PtNode* call(const PtNode& fn, const PtNode& args);
  const PtNode* rebuild_tensor(const std::vector<const PtNode*>& a, const char* fn);
  int64_t int_arg(const PtNode* n, const char* what) const;
  Shape int_tuple(const PtNode* n, const char* what) const;
  void memo_put(uint64_t i) {
    if (i >= kMaxMemo) fail("memo index " + std::to_string(i) + " is too large");
    memo_[uint32_t(i)] = top();
  }
  void memo_get(uint64_t i) {
    auto it = memo_.find(uint32_t(i));
    if (i >= kMaxMemo || it == memo_.end())
      fail("memo index " + std::to_string(i) + " was never stored");
    stack_.push_back(it->second);
  }

  PtDoc& doc_;
  PtReader& in_;
  const PersistentLoad& pl_;
  std::vector<const PtNode*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, const PtNode*> memo_;
  uint8_t op_ = 0;
  uint64_t op_at_ = 0;
};

void Machine::push_long(const std::string& b) {
  PtNode* n = doc_.add(Kind::kInt);
  if (b.size() <= 8) {
    uint64_t v = 0;
    for (size_t i = 0; i < b.size(); ++i) v |= uint64_t(uint8_t(b[i])) << (8 * i);
    if (!b.empty() && b.size() < 8 && (uint8_t(b.back()) & 0x80))
      v |= ~uint64_t(0) << (8 * b.size());  // sign-extend
    n->i = int64_t(v);
  } else {
    n->big = true;
    n->s = b;
  }
  stack_.push_back(n);
}

// Containers are mutated in place (APPEND after MEMOIZE is how pickle builds them); nodes are
// only ever reached as const through values, so the cast stays inside the machine.
PtNode* Machine::mutable_top(Kind want, const char* op) {
  const PtNode* t = top();
  bool ok = t->internal == PtInternal::kValue &&
            (t->kind == want || (want == Kind::kList && t->kind == Kind::kList));
  if (!ok) fail(std::string(op) + " on something that is not a " +
                (want == Kind::kDict ? "dict" : "list"));
  return const_cast<PtNode*>(t);
}

void Machine::global(const std::string& module, const std::string& name) {
  std::string g = module + "." + name;
  if (auto st = dtype_of_storage(name); st && module == "torch") {
    PtNode* n = doc_.add(Kind::kObject, PtInternal::kStorageType);
    n->s = g;
    n->dtype = *st;
    stack_.push_back(n);
    return;
  }
  auto fn = allowed(g);
  if (!fn) {
    std::string shown = ember::detail::shorten(g, 120);
    if (unsupported_but_allowed(g))
      fail("global " + shown + " (allowed by torch.load(weights_only=True)) is not supported: " +
           "ember reads dense tensors of its own dtypes");
    throw UnsafePickleError(
        doc_.message("refused global " + shown + ": only the globals that rebuild tensors and " +
                     "containers (those torch.load(weights_only=True) allows) are honoured, so " +
                     "loading never runs code from the file"),
        g);
  }
  PtNode* n = doc_.add(Kind::kObject, *fn == Fn::kObject ? PtInternal::kValue : PtInternal::kGlobal);
  n->s = g;
  n->i = int64_t(*fn);
  stack_.push_back(n);
}

int64_t Machine::int_arg(const PtNode* n, const char* what) const {
  if (n->kind != Kind::kInt || n->big || n->internal != PtInternal::kValue)
    fail(std::string(what) + " is not an int64");
  return n->i;
}

Shape Machine::int_tuple(const PtNode* n, const char* what) const {
  if (n->internal != PtInternal::kValue || (n->kind != Kind::kTuple && n->kind != Kind::kList))
    fail(std::string(what) + " is not a tuple");
  if (n->items.size() > kMaxDims)
    fail(std::string(what) + " has " + std::to_string(n->items.size()) + " dims, more than " +
         std::to_string(kMaxDims));
  Shape s;
  for (const PtNode* x : n->items) {
    int64_t v = int_arg(x, what);
    if (v < 0) fail(std::string(what) + " holds a negative value");
    s.push_back(v);
  }
  return s;
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, ...)
// and _rebuild_tensor(storage, storage_offset, size, stride): the view must lie in the storage.
const PtNode* Machine::rebuild_tensor(const std::vector<const PtNode*>& a, const char* fn) {
  if (a.size() < 4) fail(std::string(fn) + " takes at least 4 arguments, got " +
                         std::to_string(a.size()));
  if (a[0]->internal != PtInternal::kStorage) fail(std::string(fn) + ": argument 0 is not a storage");
  const auto& st = a[0]->storage;
  PtTensor t;
  t.storage = st;
  t.offset = int_arg(a[1], "the storage offset");
  if (t.offset < 0) fail("negative storage offset");
  t.shape = int_tuple(a[2], "the size");
  t.strides = int_tuple(a[3], "the stride");
  if (t.shape.size() != t.strides.size())
    fail("size " + shape_str(t.shape) + " and stride " + shape_str(t.strides) + " differ in rank");
  int64_t extent = 1;
  for (int64_t s : t.shape)
    if (s > kMaxNumel || __builtin_mul_overflow(extent, std::max<int64_t>(s, 1), &extent) ||
        extent > kMaxNumel)
      fail("size " + shape_str(t.shape) + " is too large (the most a tensor may hold is 2^56 "
           "elements)");
  if (numel_of(t.shape) > 0) {
    // The last element's index, offset + sum((size - 1) * stride), must be in the storage.
    int64_t last = t.offset, term;
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &term) ||
          __builtin_add_overflow(last, term, &last))
        fail("size " + shape_str(t.shape) + " and stride " + shape_str(t.strides) + " overflow");
    if (last >= st->numel)
      fail("a tensor of size " + shape_str(t.shape) + ", stride " + shape_str(t.strides) +
           " at offset " + std::to_string(t.offset) + " reaches element " + std::to_string(last) +
           " of storage " + ember::detail::shorten(st->key) + ", which holds " +
           std::to_string(st->numel));
  }
  doc_.tensors.push_back(std::move(t));
  PtNode* n = doc_.add(Kind::kTensor);
  n->tensor = &doc_.tensors.back();
  return n;
}

const PtNode* Machine::call(const PtNode& fn, const PtNode& args) {
  if (fn.internal != PtInternal::kGlobal) fail("REDUCE of something that is not a function");
  if (args.kind != Kind::kTuple || args.internal != PtInternal::kValue)
    fail("REDUCE arguments are not a tuple");
  const auto& a = args.items;
  switch (Fn(fn.i)) {
    case Fn::kOrderedDict: {
      PtNode* d = doc_.add(Kind::kDict);
      if (!a.empty()) {  // OrderedDict([(k, v), ...])
        if (a.size() > 1 || (a[0]->kind != Kind::kList && a[0]->kind != Kind::kTuple))
          fail("OrderedDict takes one list of pairs");
        for (const PtNode* p : a[0]->items) {
          if (p->kind != Kind::kTuple || p->items.size() != 2) fail("OrderedDict item not a pair");
          d->entries.emplace_back(p->items[0], p->items[1]);
        }
      }
      return d;
    }
    case Fn::kRebuildTensorV2: return rebuild_tensor(a, "_rebuild_tensor_v2");
    case Fn::kRebuildTensor: return rebuild_tensor(a, "_rebuild_tensor");
    case Fn::kRebuildParameter:  // (data, requires_grad, backward_hooks)
    case Fn::kParameter:         // Parameter(data, requires_grad)
      if (a.empty() || a[0]->kind != Kind::kTensor) fail(fn.s + ": argument 0 is not a tensor");
      return a[0];
    case Fn::kRebuildFromTypeV2: {  // (func, new_type, args, state)
      if (a.size() != 4) fail("_rebuild_from_type_v2 takes 4 arguments");
      if (a[1]->s != "torch.Tensor" && a[1]->s != "torch.nn.parameter.Parameter")
        fail("_rebuild_from_type_v2 of type " + ember::detail::shorten(a[1]->s) +
             " (a tensor subclass) is not supported");
      return call(*a[0], *a[2]);
    }
    case Fn::kSize: {
      if (a.size() != 1 || (a[0]->kind != Kind::kTuple && a[0]->kind != Kind::kList))
        fail("torch.Size takes one tuple");
      PtNode* t = doc_.add(Kind::kTuple);
      t->items = a[0]->items;
      return t;
    }
    case Fn::kSet: {
      PtNode* l = doc_.add(Kind::kList);
      if (a.size() == 1 && (a[0]->kind == Kind::kList || a[0]->kind == Kind::kTuple))
        l->items = a[0]->items;
      else if (!a.empty())
        fail(fn.s + " takes one list");
      return l;
    }
    case Fn::kObject: break;
  }
  fail(ember::detail::shorten(fn.s) + " cannot be called");
}

const PtNode* Machine::run() {
  for (;;) {
    op_at_ = in_.pos();
    op_ = in_.byte("an opcode (the pickle has no STOP)");
    switch (op_) {
      case 0x80: {  // PROTO
        uint8_t v = in_.byte("the protocol");
        if (v > 5) fail("pickle protocol " + std::to_string(v) + " is unknown (at most 5)");
        break;
      }
      case 0x95: le(8); break;  // FRAME: a length hint only
      case '.': {  // STOP
        if (!marks_.empty()) fail("STOP inside a MARK");
        if (stack_.size() != 1)
          fail("STOP with " + std::to_string(stack_.size()) + " values on the stack, not 1");
        const PtNode* r = stack_.back();
        if (r->internal != PtInternal::kValue && r->internal != PtInternal::kStorage &&
            r->internal != PtInternal::kStorageType && r->internal != PtInternal::kGlobal)
          fail("the result is not a value");
        return r;
      }
      case '(': marks_.push_back(stack_.size()); break;  // MARK
      case '0': pop(); break;                             // POP
      case '1': pop_mark(); break;                        // POP_MARK
      case '2': stack_.push_back(top()); break;           // DUP
      case 'N': stack_.push_back(doc_.add(Kind::kNone)); break;
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        PtNode* n = doc_.add(Kind::kBool);
        n->b = op_ == 0x88;
        stack_.push_back(n);
        break;
      }
      case 'J': push_int(int32_t(uint32_t(le(4)))); break;  // BININT
      case 'K': push_int(int64_t(le(1))); break;            // BININT1
      case 'M': push_int(int64_t(le(2))); break;            // BININT2
      case 0x8a: push_long(bytes(le(1))); break;            // LONG1
      case 0x8b: {                                          // LONG4
        uint64_t n = le(4);
        if (n > 1024) fail("an int of " + std::to_string(n) + " bytes");
        push_long(bytes(n));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = v << 8 | le(1);
        PtNode* n = doc_.add(Kind::kFloat);
        std::memcpy(&n->f, &v, 8);
        stack_.push_back(n);
        break;
      }
      case 'X': push_string(Kind::kString, bytes(le(4))); break;     // BINUNICODE
      case 0x8c: push_string(Kind::kString, bytes(le(1))); break;    // SHORT_BINUNICODE
      case 0x8d: push_string(Kind::kString, bytes(le(8))); break;    // BINUNICODE8
      case 'T': push_string(Kind::kString, bytes(le(4))); break;     // BINSTRING (Python 2)
      case 'U': push_string(Kind::kString, bytes(le(1))); break;     // SHORT_BINSTRING
      case 'B': push_string(Kind::kBytes, bytes(le(4))); break;      // BINBYTES
      case 'C': push_string(Kind::kBytes, bytes(le(1))); break;      // SHORT_BINBYTES
      case 0x8e: push_string(Kind::kBytes, bytes(le(8))); break;     // BINBYTES8
      case ')': stack_.push_back(doc_.add(Kind::kTuple)); break;     // EMPTY_TUPLE
      case ']': stack_.push_back(doc_.add(Kind::kList)); break;      // EMPTY_LIST
      case '}': stack_.push_back(doc_.add(Kind::kDict)); break;      // EMPTY_DICT
      case 0x8f: stack_.push_back(doc_.add(Kind::kList)); break;     // EMPTY_SET
      case 't': case 0x91: {  // TUPLE, FROZENSET
        PtNode* t = doc_.add(op_ == 't' ? Kind::kTuple : Kind::kList);
        t->items = pop_mark();
        stack_.push_back(t);
        break;
      }
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        size_t k = size_t(op_ - 0x84);
        if (stack_.size() < floor() + k) fail("opcode " + op_name() + " on a short stack");
        PtNode* t = doc_.add(Kind::kTuple);
        t->items.assign(stack_.end() - long(k), stack_.end());
        stack_.resize(stack_.size() - k);
        stack_.push_back(t);
        break;
      }
      case 'a': {  // APPEND
        const PtNode* v = pop();
        mutable_top(Kind::kList, "APPEND")->items.push_back(v);
        break;
      }
      case 'e': case 0x90: {  // APPENDS, ADDITEMS
        auto v = pop_mark();
        PtNode* l = mutable_top(Kind::kList, "APPENDS");
        l->items.insert(l->items.end(), v.begin(), v.end());
        break;
      }
      case 's': {  // SETITEM
        const PtNode* v = pop();
        const PtNode* k = pop();
        mutable_top(Kind::kDict, "SETITEM")->entries.emplace_back(k, v);
        break;
      }
      case 'u': {  // SETITEMS
        auto v = pop_mark();
        if (v.size() % 2) fail("SETITEMS with an odd number of values");
        PtNode* d = mutable_top(Kind::kDict, "SETITEMS");
        for (size_t i = 0; i < v.size(); i += 2) d->entries.emplace_back(v[i], v[i + 1]);
        break;
      }
      case 'c': {  // GLOBAL
        std::string module = in_.line("a GLOBAL's module"), name = in_.line("a GLOBAL's name");
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const PtNode* name = pop();
        const PtNode* module = pop();
        if (name->kind != Kind::kString || module->kind != Kind::kString ||
            name->internal != PtInternal::kValue || module->internal != PtInternal::kValue)
          fail("STACK_GLOBAL of values that are not strings");
        global(module->s, name->s);
        break;
      }
      case 'R': {  // REDUCE
        const PtNode* args = pop();
        const PtNode* fn = pop();
        stack_.push_back(call(*fn, *args));
        break;
      }
      case 0x81: {  // NEWOBJ
        const PtNode* args = pop();
        const PtNode* cls = pop();
        if (cls->internal != PtInternal::kGlobal || Fn(cls->i) != Fn::kParameter)
          fail("NEWOBJ of " + ember::detail::shorten(cls->s) + " (only Parameter is built)");
        stack_.push_back(call(*cls, *args));
        break;
      }
      case 'b': {  // BUILD: a dict's attributes (OrderedDict._metadata) or a tensor's state
        const PtNode* state = pop();
        const PtNode* inst = top();
        bool ok = inst->internal == PtInternal::kValue &&
                  (inst->kind == Kind::kDict || inst->kind == Kind::kTensor);
        if (!ok) fail("BUILD of something that is not a dict or a tensor");
        (void)state;  // attributes carry no weights: they are not kept
        break;
      }
      case 'Q': {  // BINPERSID
        const PtNode* pid = pop();
        if (pid->kind != Kind::kTuple || pid->internal != PtInternal::kValue)
          fail("a persistent id that is not a tuple");
        stack_.push_back(pl_(*pid));
        break;
      }
      case 'q': memo_put(le(1)); break;  // BINPUT
      case 'r': memo_put(le(4)); break;  // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;  // MEMOIZE
      case 'h': memo_get(le(1)); break;  // BINGET
      case 'j': memo_get(le(4)); break;  // LONG_BINGET
      default:
        fail("opcode " + op_name() +
             " is not one that torch.save writes (text-mode pickles and extensions are refused)");
    }
  }
}

}  // namespace

const PtNode* unpickle(PtDoc& doc, PtReader& in, const PersistentLoad& persistent_load) {
  return Machine(doc, in, persistent_load).run();
}

}  // namespace ember::store::detail
