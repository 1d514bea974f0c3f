// Kernel serialisation (little-endian, fixed-size instruction records) and MurmurHash3.
#include "ember/kl/serialize.h"

#include <cstring>

#include "ember/error.h"

namespace ember::kl {
namespace {

// --- MurmurHash3 x64_128 (Austin Appleby's public-domain algorithm) ---
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

constexpr char kMagic[4] = {'E', 'M', 'K', 'L'};
constexpr uint32_t kHasNames = 1;

class Writer {
 public:
  void u8(uint8_t v) { s_.push_back(char(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  void str(const std::string& v) {
    u32(uint32_t(v.size()));
    s_ += v;
  }
  void raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;  // x86-64 and the other supported hosts are little-endian
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  uint8_t u8() { return uint8_t(*take(1)); }
  uint32_t u32() { uint32_t v; std::memcpy(&v, take(4), 4); return v; }
  int32_t i32() { int32_t v; std::memcpy(&v, take(4), 4); return v; }
  int64_t i64() { int64_t v; std::memcpy(&v, take(8), 8); return v; }
  std::string str() {
    uint32_t n = u32();
    return std::string(take(n), n);
  }
  // A count of records of at least `min_bytes` each: bounded by what is left, so a corrupt
  // count cannot make the parser allocate gigabytes.
  uint32_t count(size_t min_bytes, const char* what) {
    uint32_t n = u32();
    if (uint64_t(n) * min_bytes > s_.size() - pos_)
      bad(std::string(what) + " count " + std::to_string(n) + " exceeds the remaining bytes");
    return n;
  }
  bool done() const { return pos_ == s_.size(); }
  size_t pos() const { return pos_; }
  [[noreturn]] void bad(const std::string& msg) const {
    ember::detail::throw_value("kl", "serialised kernel, byte " + std::to_string(pos_) + ": " + msg);
  }

 private:
  const char* take(size_t n) {
    if (n > s_.size() - pos_) bad("truncated (wanted " + std::to_string(n) + " more bytes)");
    const char* p = s_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::string_view s_;
  size_t pos_ = 0;
};

std::string encode(const Kernel& k, bool names) {
  Writer w;
  w.raw(kMagic, 4);
  w.u32(kSchemaVersion);
  w.u32(names ? kHasNames : 0);
  if (names) w.str(k.name);
  w.u32(uint32_t(k.buffers.size()));
  for (const BufferParam& b : k.buffers) {
    w.u8(uint8_t(b.dtype));
    w.u8(uint8_t(b.access));
    w.u8(uint8_t((b.restrict_ ? 1 : 0) | (b.list ? 2 : 0)));
    if (names) w.str(b.name);
  }
  w.u32(uint32_t(k.scalars.size()));
  for (const ScalarParam& s : k.scalars) {
    w.u8(uint8_t(s.dtype));
    if (names) w.str(s.name);
  }
  w.u32(uint32_t(k.indices.size()));
  if (names)
    for (const IndexParam& p : k.indices) w.str(p.name);
  w.i64(k.workgroup_size);
  w.u32(uint32_t(k.body.size()));
  for (const Inst& in : k.body) {
    w.u8(uint8_t(in.op));
    w.u8(in.sub);
    w.u8(uint8_t(in.type.dtype));
    w.u8(in.type.lanes);
    for (int32_t o : {in.a, in.b, in.c, in.d}) w.i32(o);
    w.i64(in.imm);
  }
  if (names) {
    w.str(k.spec);
    w.u32(uint32_t(k.value_names.size()));
    for (const auto& [id, name] : k.value_names) {
      w.i32(id);
      w.str(name);
    }
  }
  return w.take();
}

DType read_dtype(Reader& r) {
  uint8_t d = r.u8();
  if (d >= kNumDTypes) r.bad("unknown dtype " + std::to_string(d));
  return DType(d);
}

}  // namespace

std::string Hash128::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[size_t(15 - i)] = digits[(hi >> (4 * i)) & 15];
    s[size_t(31 - i)] = digits[(lo >> (4 * i)) & 15];
  }
  return s;
}

Hash128 hash128(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
  uint64_t h1 = seed, h2 = seed;
  const size_t blocks = n / 16;
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k1, k2;
    std::memcpy(&k1, p + i * 16, 8);
    std::memcpy(&k2, p + i * 16 + 8, 8);
    k1 *= c1; k1 = rotl(k1, 31); k1 *= c2; h1 ^= k1;
    h1 = rotl(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
    k2 *= c2; k2 = rotl(k2, 33); k2 *= c1; h2 ^= k2;
    h2 = rotl(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
  }
  const uint8_t* tail = p + blocks * 16;
  uint64_t k1 = 0, k2 = 0;
  const size_t rest = n & 15;
  for (size_t i = rest; i > 8; --i) k2 ^= uint64_t(tail[i - 1]) << ((i - 9) * 8);
  if (rest > 8) { k2 *= c2; k2 = rotl(k2, 33); k2 *= c1; h2 ^= k2; }
  for (size_t i = rest < 8 ? rest : 8; i > 0; --i) k1 ^= uint64_t(tail[i - 1]) << ((i - 1) * 8);
  if (rest > 0) { k1 *= c1; k1 = rotl(k1, 31); k1 *= c2; h1 ^= k1; }
  h1 ^= n; h2 ^= n;
  h1 += h2; h2 += h1;
  h1 = fmix(h1); h2 = fmix(h2);
  h1 += h2; h2 += h1;
  return {h1, h2};
}

std::string canonical_bytes(const Kernel& k) { return encode(k, false); }

Hash128 canonical_hash(const Kernel& k) {
  std::string b = canonical_bytes(k);
  return hash128(b.data(), b.size());
}

std::string serialize(const Kernel& k) { return encode(k, true); }

Kernel parse(std::string_view bytes) {
  Reader r(bytes);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    r.bad("not a serialised kernel (expected the magic \"EMKL\")");
  r.u32();
  uint32_t version = r.u32();
  if (version != kSchemaVersion)
    r.bad("schema version " + std::to_string(version) + ", expected " + std::to_string(kSchemaVersion));
  uint32_t flags = r.u32();
  if (flags & ~kHasNames) r.bad("unknown flags " + std::to_string(flags));
  const bool names = flags & kHasNames;
  Kernel k;
  if (names) k.name = r.str();
  for (uint32_t i = 0, n = r.count(names ? 7 : 3, "buffer"); i < n; ++i) {
    BufferParam b;
    b.dtype = read_dtype(r);
    uint8_t acc = r.u8();
    if (acc > uint8_t(Access::ReadWrite)) r.bad("unknown buffer access " + std::to_string(acc));
    b.access = Access(acc);
    uint8_t f = r.u8();
    if (f > 3) r.bad("unknown buffer flags " + std::to_string(f));
    b.restrict_ = f & 1;
    b.list = f & 2;
    if (names) b.name = r.str();
    k.buffers.push_back(std::move(b));
  }
  for (uint32_t i = 0, n = r.count(names ? 5 : 1, "scalar"); i < n; ++i) {
    ScalarParam s;
    s.dtype = read_dtype(r);
    if (names) s.name = r.str();
    k.scalars.push_back(std::move(s));
  }
  uint32_t nindex = r.count(names ? 4 : 0, "index");
  for (uint32_t i = 0; i < nindex; ++i) k.indices.push_back({names ? r.str() : std::string()});
  k.workgroup_size = r.i64();
  for (uint32_t i = 0, n = r.count(28, "instruction"); i < n; ++i) {
    Inst in;
    uint8_t op = r.u8();
    if (op >= kNumKlOps) r.bad("unknown op " + std::to_string(op));
    in.op = Op(op);
    in.sub = r.u8();
    in.type.dtype = read_dtype(r);
    in.type.lanes = r.u8();
    in.a = r.i32();
    in.b = r.i32();
    in.c = r.i32();
    in.d = r.i32();
    in.imm = r.i64();
    k.body.push_back(in);
  }
  if (names) {
    k.spec = r.str();
    for (uint32_t i = 0, n = r.count(8, "name"); i < n; ++i) {
      int32_t id = r.i32();
      if (id < 0 || size_t(id) >= k.body.size()) r.bad("name for a missing value " + std::to_string(id));
      k.value_names.emplace_back(id, r.str());
    }
  }
  if (!r.done()) r.bad(std::to_string(bytes.size() - r.pos()) + " trailing bytes");
  verify(k);
  return k;
}

}  // namespace ember::kl
