// Encoding and decoding of the remote protocol's messages (protocol.h). The decoder reads
// untrusted bytes: every length is checked against what is left of the frame and every enum
// against its range before anything is built from it (tests/fuzz/fuzz_remote.cpp).
#include "ember/backends/remote/protocol.h"

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
  if (s.is_floating()) put<double>(b, s.to_double());
  else put<int64_t>(b, s.to_int());
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
  IntVec ints(size_t max) {
    const uint32_t n = get<uint32_t>();
    if (n > max) fail("a list of " + std::to_string(n) + " integers (at most " + std::to_string(max) + ")");
    need(size_t(n) * 8);
    std::vector<int64_t> v(n);
    if (n) std::memcpy(v.data(), s_.data() + pos_, size_t(n) * 8);
    pos_ += size_t(n) * 8;
    return IntVec(v);
  }
  Scalar scalar() {
    const uint8_t k = get<uint8_t>();
    switch (Scalar::Kind(k)) {
      case Scalar::Kind::Bool: return Scalar(get<int64_t>() != 0);
      case Scalar::Kind::Int: return Scalar(get<int64_t>());
      case Scalar::Kind::Float: return Scalar(get<double>());
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

TensorRef read_ref(Reader& r) {
  TensorRef t;
  const uint8_t k = r.get<uint8_t>();
  if (k > TensorRef::Constant) Reader::fail("tensor kind " + std::to_string(k));
  t.kind = TensorRef::Kind(k);
  if (t.kind == TensorRef::Undefined) return t;
  t.dtype = r.dtype();
  if (t.kind == TensorRef::Constant) {
    t.wrapped = r.flag();
    t.constant = r.scalar();
    return t;
  }
  t.handle = r.get<uint64_t>();
  t.shape = r.ints(kMaxDims);
  t.strides = r.ints(kMaxDims);
  if (t.strides.size() != t.shape.size())
    Reader::fail(std::to_string(t.shape.size()) + " sizes and " + std::to_string(t.strides.size()) +
                 " strides");
  t.offset = r.get<int64_t>();
  return t;
}

void write_ref(std::vector<uint8_t>& b, const TensorRef& t) {
  put<uint8_t>(b, uint8_t(t.kind));
  if (t.kind == TensorRef::Undefined) return;
  put<uint8_t>(b, uint8_t(t.dtype));
  if (t.kind == TensorRef::Constant) {
    put<uint8_t>(b, t.wrapped);
    put_scalar(b, t.constant);
    return;
  }
  put<uint64_t>(b, t.handle);
  put_ints(b, t.shape);
  put_ints(b, t.strides);
  put<int64_t>(b, t.offset);
}

constexpr size_t kMaxAttrInts = 4096;

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
  const size_t at = begin(MsgType::Upload);
  put<uint64_t>(buf_, handle);
  put<uint64_t>(buf_, storage_bytes);
  put<uint64_t>(buf_, offset);
  put_bytes(buf_, p, n);
  end(at);
}
void Encoder::call(uint64_t req, OpId op, const Attrs& a, bool attrs_on_device,
                   std::span<const TensorRef> inputs, std::span<const uint64_t> outs) {
  const size_t at = begin(MsgType::Call);
  put<uint64_t>(buf_, req);
  put<uint16_t>(buf_, uint16_t(op));
  for (const IntVec* v : {&a.ints, &a.ints2, &a.ints3, &a.ints4}) put_ints(buf_, *v);
  for (int64_t x : a.i) put<int64_t>(buf_, x);
  for (double x : a.f) put<double>(buf_, x);
  for (bool x : a.b) put<uint8_t>(buf_, x);
  for (const Scalar& s : a.s) put_scalar(buf_, s);
  put<uint8_t>(buf_, uint8_t(a.dtype));
  put<uint8_t>(buf_, a.has_dtype);
  put<uint8_t>(buf_, a.mode);
  put<uint8_t>(buf_, attrs_on_device);
  put<uint64_t>(buf_, a.seed);
  put<uint64_t>(buf_, a.offset);
  put<uint32_t>(buf_, uint32_t(inputs.size()));
  for (const TensorRef& t : inputs) write_ref(buf_, t);
  put<uint32_t>(buf_, uint32_t(outs.size()));
  for (uint64_t h : outs) put<uint64_t>(buf_, h);
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
  const size_t at = begin(MsgType::Data);
  put<uint64_t>(buf_, req);
  put<uint64_t>(buf_, offset);
  put_bytes(buf_, p, n);
  put<uint8_t>(buf_, last);
  end(at);
}
uint8_t* Encoder::data_in_place(uint64_t req, uint64_t offset, size_t n, bool last) {
  const size_t at = begin(MsgType::Data);
  put<uint64_t>(buf_, req);
  put<uint64_t>(buf_, offset);
  put<uint64_t>(buf_, n);
  const size_t bytes_at = buf_.size();
  buf_.resize(bytes_at + n);
  put<uint8_t>(buf_, last);
  end(at);
  return buf_.data() + bytes_at;
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
  m = Message{};
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
      for (IntVec* v : {&a.ints, &a.ints2, &a.ints3, &a.ints4}) *v = r.ints(kMaxAttrInts);
      for (int64_t& x : a.i) x = r.get<int64_t>();
      for (double& x : a.f) x = r.get<double>();
      for (bool& x : a.b) x = r.flag();
      for (Scalar& s : a.s) s = r.scalar();
      a.dtype = r.dtype();
      a.has_dtype = r.flag();
      a.mode = r.get<uint8_t>();
      m.attrs_on_device = r.flag();
      a.seed = r.get<uint64_t>();
      a.offset = r.get<uint64_t>();
      const uint32_t ni = r.get<uint32_t>();
      if (ni > kMaxCallTensors) Reader::fail(std::to_string(ni) + " inputs");
      m.inputs.reserve(ni);
      for (uint32_t k = 0; k < ni; ++k) m.inputs.push_back(read_ref(r));
      const uint32_t no = r.get<uint32_t>();
      if (no > kMaxCallTensors) Reader::fail(std::to_string(no) + " outputs");
      m.outs.reserve(no);
      for (uint32_t k = 0; k < no; ++k) m.outs.push_back(r.get<uint64_t>());
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
      m.bytes = r.bytes();
      m.last = r.flag();
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
