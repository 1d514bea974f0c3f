// Encoding and decoding of the remote protocol's messages (protocol.h). The decoder reads
// untrusted bytes: every length is checked against what is left of the frame and every enum
// against its range before anything is built from it (tests/fuzz/fuzz_remote.cpp).
#include "ember/backends/remote/protocol.h"

#include <algorithm>
#include <complex>
#include <cstring>

namespace ember::remote {
namespace {

template <class T> void put(std::vector<uint8_t>& b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);  // little-endian hosts only (x86-64, aarch64)
}
void put_bytes(std::vector<uint8_t>& b, const void* p, size_t n) {
  put<uint64_t>(b, n);
  if (n) b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
void put_str(std::vector<uint8_t>& b, const std::string& s) { put_bytes(b, s.data(), s.size()); }
void put_ints(std::vector<uint8_t>& b, std::span<const int64_t> v) {
  put<uint32_t>(b, uint32_t(v.size()));
  for (int64_t x : v) put<int64_t>(b, x);
}
void put_scalar(std::vector<uint8_t>& b, const Scalar& s) {
  put<uint8_t>(b, uint8_t(s.kind()));
  if (s.is_floating() || s.is_complex()) put<double>(b, s.to_double());
  else put<int64_t>(b, s.to_int());
  if (s.is_complex()) put<double>(b, s.imag());
}

class Reader {
 public:
  Reader(std::span<const uint8_t> s) : s_(s) {}
  template <class T> T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::span<const uint8_t> bytes() {
    const uint64_t n = get<uint64_t>();
    need(n);
    auto r = s_.subspan(pos_, size_t(n));
    pos_ += size_t(n);
    return r;
  }
  std::string str() {
    auto b = bytes();
    return std::string(b.begin(), b.end());
  }
  // `n` integers into `v` (no heap for short lists: IntVec keeps a few inline).
  void ints_into(IntVec& v, uint32_t n, size_t max) {
    if (n > max) fail("a list of " + std::to_string(n) + " integers (at most " + std::to_string(max) + ")");
    need(size_t(n) * 8);
    v.resize(n);
    if (n) std::memcpy(v.data(), s_.data() + pos_, size_t(n) * 8);
    pos_ += size_t(n) * 8;
  }
  IntVec ints(size_t max) {
    IntVec v;
    ints_into(v, get<uint32_t>(), max);
    return v;
  }
  Scalar scalar() {
    const uint8_t k = get<uint8_t>();
    switch (Scalar::Kind(k)) {
      case Scalar::Kind::Bool: return Scalar(get<int64_t>() != 0);
      case Scalar::Kind::Int: return Scalar(get<int64_t>());
      case Scalar::Kind::Float: return Scalar(get<double>());
      case Scalar::Kind::Complex: {
        const double re = get<double>();
        return Scalar(std::complex<double>(re, get<double>()));
      }
    }
    fail("a scalar of kind " + std::to_string(k));
  }
  DType dtype() {
    const uint8_t d = get<uint8_t>();
    if (d >= kNumDTypes) fail("dtype " + std::to_string(d));
    return DType(d);
  }
  bool flag() {
    const uint8_t v = get<uint8_t>();
    if (v > 1) fail("a flag of value " + std::to_string(v));
    return v != 0;
  }
  size_t left() const { return s_.size() - pos_; }
  [[noreturn]] static void fail(const std::string& what) {
    throw ProtocolError("[remote] malformed message: " + what);
  }

 private:
  void need(uint64_t n) const {
    if (n > s_.size() - pos_)
      fail("needs " + std::to_string(n) + " more bytes, " + std::to_string(s_.size() - pos_) +
           " left");
  }
  std::span<const uint8_t> s_;
  size_t pos_ = 0;
};

// A tensor reference: a kind byte (the kind in the low two bits; kDense: a view with contiguous
// strides from offset 0, sent without them; kWrapped: a wrapped-number constant), the dtype,
// then a view's handle, rank, sizes (and strides and offset unless dense) or a constant's value.
constexpr uint8_t kDense = 4, kWrapped = 8;

void read_ref(Reader& r, TensorRef& t) {
  const uint8_t k = r.get<uint8_t>();
  if ((k & 3) > TensorRef::Constant || k > (kDense | kWrapped | 3))
    Reader::fail("tensor kind " + std::to_string(k));
  t.kind = TensorRef::Kind(k & 3);
  t.dense = false;
  if (t.kind == TensorRef::Undefined) return;
  t.dtype = r.dtype();
  if (t.kind == TensorRef::Constant) {
    t.wrapped = (k & kWrapped) != 0;
    t.constant = r.scalar();
    return;
  }
  t.handle = r.get<uint64_t>();
  const uint8_t rank = r.get<uint8_t>();
  r.ints_into(t.shape, rank, kMaxDims);
  if (k & kDense) {
    t.dense = true;
    t.strides.resize(rank);
    for (int64_t d = int64_t(rank) - 1, step = 1; d >= 0; --d) {
      t.strides[size_t(d)] = step;
      if (__builtin_mul_overflow(step, std::max<int64_t>(t.shape[size_t(d)], 1), &step))
        Reader::fail("sizes whose product overflows");
    }
    t.offset = 0;
  } else {
    r.ints_into(t.strides, rank, kMaxDims);
    t.offset = r.get<int64_t>();
  }
}

bool dense(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset) {
  if (offset != 0) return false;
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (strides[d] != step) return false;
    step *= std::max<int64_t>(shape[d], 1);
  }
  return true;
}

constexpr size_t kMaxAttrInts = 4096;

// Call attrs travel as a mask of the fields that differ from a default Attrs, then those fields.
enum AttrBit : uint32_t {
  kInts = 1u << 0,      // 4 bits: ints .. ints4
  kI = 1u << 4,         // 4 bits
  kF = 1u << 8,         // 4 bits
  kS = 1u << 12,        // 3 bits
  kSeed = 1u << 15,     // seed and offset
  kHasDType = 1u << 16,
  kOnDevice = 1u << 17,
  kAllAttrBits = (1u << 18) - 1,
};

}  // namespace

ErrorKind error_kind_of(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return ErrorKind::Shape;
  if (dynamic_cast<const DTypeError*>(&e)) return ErrorKind::DType;
  if (dynamic_cast<const DeviceError*>(&e)) return ErrorKind::Device;
  if (dynamic_cast<const IndexError*>(&e)) return ErrorKind::Index;
  if (dynamic_cast<const ValueError*>(&e)) return ErrorKind::Value;
  if (dynamic_cast<const NotImplementedError*>(&e)) return ErrorKind::NotImplemented;
  if (dynamic_cast<const OutOfMemory*>(&e)) return ErrorKind::OutOfMemory;
  return ErrorKind::Error;
}

void throw_error(ErrorKind k, const std::string& msg) {
  switch (k) {
    case ErrorKind::Shape: throw ShapeError(msg);
    case ErrorKind::DType: throw DTypeError(msg);
    case ErrorKind::Device: throw DeviceError(msg);
    case ErrorKind::Index: throw IndexError(msg);
    case ErrorKind::Value: throw ValueError(msg);
    case ErrorKind::NotImplemented: throw NotImplementedError(msg);
    case ErrorKind::OutOfMemory: throw OutOfMemory(msg);
    case ErrorKind::Error: break;
  }
  throw Error(msg);
}

uint64_t op_table_hash() {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < kNumOps; ++i) {
    for (const char* p = op_name(OpId(i)); *p; ++p) h = (h ^ uint8_t(*p)) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
  }
  return h;
}

size_t Encoder::begin(MsgType t) {
  put<uint8_t>(buf_, uint8_t(t));
  put<uint32_t>(buf_, 0);
  return buf_.size();
}
void Encoder::end(size_t at) {
  const uint32_t n = uint32_t(buf_.size() - at);
  std::memcpy(buf_.data() + at - 4, &n, 4);
}

void Encoder::hello() {
  const size_t at = begin(MsgType::Hello);
  put<uint16_t>(buf_, kProtocolVersion);
  put<uint16_t>(buf_, uint16_t(kNumOps));
  put<uint64_t>(buf_, op_table_hash());
  end(at);
}
void Encoder::hello_ok(const std::string& device) {
  const size_t at = begin(MsgType::HelloOk);
  put<uint16_t>(buf_, kProtocolVersion);
  put_str(buf_, device);
  end(at);
}
void Encoder::upload(uint64_t handle, uint64_t storage_bytes, uint64_t offset, const void* p,
                     size_t n) {
  upload_head(handle, storage_bytes, offset, n);
  if (n) buf_.insert(buf_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
void Encoder::call(uint64_t req, OpId op, const Attrs& a, bool attrs_on_device,
                   std::span<const TensorRef> inputs, std::span<const uint64_t> outs) {
  const size_t at = call_begin(req, op, a, attrs_on_device, inputs.size());
  for (const TensorRef& t : inputs) {
    switch (t.kind) {
      case TensorRef::Undefined: input_undefined(); break;
      case TensorRef::Constant: input_constant(t.dtype, t.constant, t.wrapped); break;
      case TensorRef::View: input_view(t.handle, t.dtype, t.shape, t.strides, t.offset); break;
    }
  }
  call_end(at, outs);
}

size_t Encoder::call_begin(uint64_t req, OpId op, const Attrs& a, bool attrs_on_device,
                           size_t n_inputs) {
  const size_t need = buf_.size() + 64 + 72 * n_inputs;
  if (buf_.capacity() < need) buf_.reserve(std::max(need, 2 * buf_.capacity()));  // geometric
  const size_t at = begin(MsgType::Call);
  put<uint64_t>(buf_, req);
  put<uint16_t>(buf_, uint16_t(op));
  const IntVec* lists[] = {&a.ints, &a.ints2, &a.ints3, &a.ints4};
  static const Scalar kZero;
  uint32_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    if (!lists[k]->empty()) mask |= kInts << k;
    if (a.i[size_t(k)] != 0) mask |= kI << k;
    uint64_t bits;
    std::memcpy(&bits, &a.f[size_t(k)], 8);
    if (bits != 0) mask |= kF << k;
    if (k < 3 && !(a.s[size_t(k)] == kZero)) mask |= kS << k;
  }
  if (a.seed || a.offset) mask |= kSeed;
  if (a.has_dtype) mask |= kHasDType;
  if (attrs_on_device) mask |= kOnDevice;
  put<uint32_t>(buf_, mask);
  put<uint8_t>(buf_, uint8_t(a.b[0] | a.b[1] << 1 | a.b[2] << 2 | a.b[3] << 3));
  put<uint8_t>(buf_, uint8_t(a.dtype));
  put<uint8_t>(buf_, a.mode);
  for (int k = 0; k < 4; ++k)
    if (mask & (kInts << k)) put_ints(buf_, *lists[k]);
  for (int k = 0; k < 4; ++k)
    if (mask & (kI << k)) put<int64_t>(buf_, a.i[size_t(k)]);
  for (int k = 0; k < 4; ++k)
    if (mask & (kF << k)) put<double>(buf_, a.f[size_t(k)]);
  for (int k = 0; k < 3; ++k)
    if (mask & (kS << k)) put_scalar(buf_, a.s[size_t(k)]);
  if (mask & kSeed) put<uint64_t>(buf_, a.seed), put<uint64_t>(buf_, a.offset);
  put<uint16_t>(buf_, uint16_t(n_inputs));
  return at;
}
void Encoder::input_undefined() { put<uint8_t>(buf_, TensorRef::Undefined); }
void Encoder::input_constant(DType dt, const Scalar& v, bool wrapped) {
  put<uint8_t>(buf_, uint8_t(TensorRef::Constant | (wrapped ? kWrapped : 0)));
  put<uint8_t>(buf_, uint8_t(dt));
  put_scalar(buf_, v);
}
void Encoder::input_view(uint64_t handle, DType dt, std::span<const int64_t> shape,
                         std::span<const int64_t> strides, int64_t offset) {
  const bool d = dense(shape, strides, offset);
  put<uint8_t>(buf_, uint8_t(TensorRef::View | (d ? kDense : 0)));
  put<uint8_t>(buf_, uint8_t(dt));
  put<uint64_t>(buf_, handle);
  put<uint8_t>(buf_, uint8_t(shape.size()));
  const size_t at = buf_.size();
  const size_t n = shape.size() * 8;
  buf_.resize(at + (d ? n : 2 * n + 8));
  std::memcpy(buf_.data() + at, shape.data(), n);
  if (!d) {
    std::memcpy(buf_.data() + at + n, strides.data(), n);
    std::memcpy(buf_.data() + at + 2 * n, &offset, 8);
  }
}
void Encoder::call_end(size_t at, std::span<const uint64_t> outs) {
  put<uint16_t>(buf_, uint16_t(outs.size()));
  const size_t o = buf_.size();
  buf_.resize(o + 8 * outs.size());
  if (!outs.empty()) std::memcpy(buf_.data() + o, outs.data(), 8 * outs.size());
  end(at);
}
void Encoder::free(uint64_t handle) {
  const size_t at = begin(MsgType::Free);
  put<uint64_t>(buf_, handle);
  end(at);
}
void Encoder::download(uint64_t req, uint64_t handle, uint64_t offset, uint64_t n) {
  const size_t at = begin(MsgType::Download);
  put<uint64_t>(buf_, req);
  put<uint64_t>(buf_, handle);
  put<uint64_t>(buf_, offset);
  put<uint64_t>(buf_, n);
  end(at);
}
void Encoder::data(uint64_t req, uint64_t offset, const void* p, size_t n, bool last) {
  data_head(req, offset, n, last);
  if (n) buf_.insert(buf_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
void Encoder::data_head(uint64_t req, uint64_t offset, size_t n, bool last) {
  put<uint8_t>(buf_, uint8_t(MsgType::Data));
  put<uint32_t>(buf_, uint32_t(8 + 8 + 1 + 8 + n));
  put<uint64_t>(buf_, req);
  put<uint64_t>(buf_, offset);
  put<uint8_t>(buf_, last);
  put<uint64_t>(buf_, n);
}
void Encoder::upload_head(uint64_t handle, uint64_t storage_bytes, uint64_t offset, size_t n) {
  put<uint8_t>(buf_, uint8_t(MsgType::Upload));
  put<uint32_t>(buf_, uint32_t(8 + 8 + 8 + 8 + n));
  put<uint64_t>(buf_, handle);
  put<uint64_t>(buf_, storage_bytes);
  put<uint64_t>(buf_, offset);
  put<uint64_t>(buf_, n);
}
void Encoder::sync(uint64_t req) {
  const size_t at = begin(MsgType::Sync);
  put<uint64_t>(buf_, req);
  end(at);
}
void Encoder::sync_done(uint64_t req) {
  const size_t at = begin(MsgType::SyncDone);
  put<uint64_t>(buf_, req);
  end(at);
}
void Encoder::error(uint64_t req, ErrorKind k, const std::string& msg) {
  const size_t at = begin(MsgType::Error);
  put<uint64_t>(buf_, req);
  put<uint8_t>(buf_, uint8_t(k));
  put_str(buf_, msg);
  end(at);
}
void Encoder::outputs(uint64_t req, std::span<const TensorMeta> metas) {
  const size_t at = begin(MsgType::Outputs);
  put<uint64_t>(buf_, req);
  put<uint32_t>(buf_, uint32_t(metas.size()));
  for (const TensorMeta& m : metas) {
    put<uint8_t>(buf_, uint8_t(m.dtype));
    put_ints(buf_, m.shape);
  }
  end(at);
}

void Message::reset() {
  req = handle = nbytes = offset = hash = 0;
  version = op_count = 0;
  last = false;
  bytes = {};
  text.clear();
  error = ErrorKind::Error;
  attrs_on_device = false;
  inputs.clear();  // keeps its capacity: a session decodes into one Message
  outs.clear();
  metas.clear();
}

bool Decoder::next(Message& m) {
  if (pos_ == frame_.size()) return false;
  Reader head(frame_.subspan(pos_));
  const uint8_t type = head.get<uint8_t>();
  const uint32_t len = head.get<uint32_t>();
  if (type == 0 || type > kMaxMsgType) Reader::fail("message type " + std::to_string(type));
  if (len > head.left()) Reader::fail("a payload of " + std::to_string(len) + " bytes, " +
                                      std::to_string(head.left()) + " left in the frame");
  Reader r(frame_.subspan(pos_ + 5, len));
  pos_ += 5 + size_t(len);
  m.reset();
  m.type = MsgType(type);
  switch (m.type) {
    case MsgType::Hello:
      m.version = r.get<uint16_t>();
      m.op_count = r.get<uint16_t>();
      m.hash = r.get<uint64_t>();
      break;
    case MsgType::HelloOk:
      m.version = r.get<uint16_t>();
      m.text = r.str();
      break;
    case MsgType::Upload:
      m.handle = r.get<uint64_t>();
      m.nbytes = r.get<uint64_t>();
      m.offset = r.get<uint64_t>();
      m.bytes = r.bytes();
      break;
    case MsgType::Call: {
      m.req = r.get<uint64_t>();
      const uint16_t op = r.get<uint16_t>();
      if (op >= kNumOps) Reader::fail("op id " + std::to_string(op));
      m.op = OpId(op);
      Attrs& a = m.attrs;
      static const Attrs kDefault{};
      a = kDefault;
      const uint32_t mask = r.get<uint32_t>();
      if (mask & ~uint32_t(kAllAttrBits)) Reader::fail("attribute mask " + std::to_string(mask));
      const uint8_t flags = r.get<uint8_t>();
      if (flags > 15) Reader::fail("flags " + std::to_string(flags));
      for (int k = 0; k < 4; ++k) a.b[size_t(k)] = (flags >> k) & 1;
      a.dtype = r.dtype();
      a.mode = r.get<uint8_t>();
      IntVec* lists[] = {&a.ints, &a.ints2, &a.ints3, &a.ints4};
      for (int k = 0; k < 4; ++k)
        if (mask & (kInts << k)) r.ints_into(*lists[k], r.get<uint32_t>(), kMaxAttrInts);
      for (int k = 0; k < 4; ++k)
        if (mask & (kI << k)) a.i[size_t(k)] = r.get<int64_t>();
      for (int k = 0; k < 4; ++k)
        if (mask & (kF << k)) a.f[size_t(k)] = r.get<double>();
      for (int k = 0; k < 3; ++k)
        if (mask & (kS << k)) a.s[size_t(k)] = r.scalar();
      if (mask & kSeed) a.seed = r.get<uint64_t>(), a.offset = r.get<uint64_t>();
      a.has_dtype = (mask & kHasDType) != 0;
      m.attrs_on_device = (mask & kOnDevice) != 0;
      const uint16_t ni = r.get<uint16_t>();
      if (ni > kMaxCallTensors) Reader::fail(std::to_string(ni) + " inputs");
      m.inputs.resize(ni);
      for (uint16_t k = 0; k < ni; ++k) read_ref(r, m.inputs[k]);
      const uint16_t no = r.get<uint16_t>();
      if (no > kMaxCallTensors) Reader::fail(std::to_string(no) + " outputs");
      m.outs.resize(no);
      for (uint16_t k = 0; k < no; ++k) m.outs[k] = r.get<uint64_t>();
      break;
    }
    case MsgType::Free: m.handle = r.get<uint64_t>(); break;
    case MsgType::Download:
      m.req = r.get<uint64_t>();
      m.handle = r.get<uint64_t>();
      m.offset = r.get<uint64_t>();
      m.nbytes = r.get<uint64_t>();
      break;
    case MsgType::Data:
      m.req = r.get<uint64_t>();
      m.offset = r.get<uint64_t>();
      m.last = r.flag();
      m.bytes = r.bytes();
      break;
    case MsgType::Sync:
    case MsgType::SyncDone: m.req = r.get<uint64_t>(); break;
    case MsgType::Error: {
      m.req = r.get<uint64_t>();
      const uint8_t k = r.get<uint8_t>();
      if (k > uint8_t(ErrorKind::OutOfMemory)) Reader::fail("error kind " + std::to_string(k));
      m.error = ErrorKind(k);
      m.text = r.str();
      break;
    }
    case MsgType::Outputs: {
      m.req = r.get<uint64_t>();
      const uint32_t n = r.get<uint32_t>();
      if (n > kMaxCallTensors) Reader::fail(std::to_string(n) + " outputs");
      for (uint32_t k = 0; k < n; ++k) {
        TensorMeta t;
        t.dtype = r.dtype();
        t.shape = r.ints(kMaxDims);
        m.metas.push_back(std::move(t));
      }
      break;
    }
  }
  if (r.left()) Reader::fail(std::to_string(r.left()) + " bytes after the message's fields");
  return true;
}

}  // namespace ember::remote
