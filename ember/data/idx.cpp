// IDX reading: the header is read first and every size it declares is checked against the bytes
// that exist (the file's size for a plain file; for a gzip'd one, what a deflate stream of that
// size can hold, then what actually decompresses) before the body is allocated.
#include "ember/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>

#include "ember/backends/backend.h"
#include "ember/detail/file.h"
#include "ember/error.h"
#include "ember/store/atomic_file.h"

namespace ember::data {
namespace {

// Deflate encodes a run of at most 258 bytes in at least 2 bits, so a stream holds at most
// 1032 decompressed bytes per compressed byte (zlib's FAQ); a header claiming more than that
// (plus slack for a tiny file's fixed overhead) cannot be true.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kDeflateSlack = 4096;

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw ValueError("[read_idx] " + path + ": " + msg);
}

// The bytes of a file (positioned reads) or of a buffer.
struct Source {
  const ember::detail::ReadFile* file = nullptr;
  std::string_view mem;
  const std::string& path;
  uint64_t size() const { return file ? file->size() : mem.size(); }
  size_t read_at(uint64_t off, void* dst, size_t n) const {
    if (!file) {
      if (off >= mem.size()) return 0;
      size_t k = std::min<size_t>(n, mem.size() - size_t(off));
      std::memcpy(dst, mem.data() + off, k);
      return k;
    }
    std::string error;
    int64_t k = file->read_at(off, dst, n, error);
    if (k < 0) fail(path, error);
    return size_t(k);
  }
};

// Sequential reads through the source, inflating when it is gzip'd (several members in a row are
// one stream, as gzip itself reads them).
class Reader {
 public:
  Reader(const Source& src) : src_(src) {
    uint8_t magic[2] = {0, 0};
    gzip_ = src_.read_at(0, magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) fail(src_.path, "zlib failed to start");
      inited_ = true;
    }
  }
  ~Reader() {
    if (inited_) inflateEnd(&zs_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool gzip() const { return gzip_; }
  /// Reads up to `n` bytes; fewer only at the end of the data.
  size_t read(void* dst, size_t n) {
    if (!gzip_) {
      size_t k = src_.read_at(pos_, dst, n);
      pos_ += k;
      return k;
    }
    auto* out = static_cast<unsigned char*>(dst);
    size_t got = 0;
    while (got < n && !done_) {
      if (zs_.avail_in == 0) {
        size_t k = src_.read_at(pos_, in_.get(), kChunk);
        pos_ += k;
        zs_.next_in = in_.get();
        zs_.avail_in = unsigned(k);
        if (k == 0) fail(src_.path, "corrupt gzip stream: it ends before its end marker");
      }
      size_t chunk = std::min<size_t>(n - got, size_t(1) << 30);
      zs_.next_out = out + got;
      zs_.avail_out = unsigned(chunk);
      int r = inflate(&zs_, Z_NO_FLUSH);
      got += chunk - zs_.avail_out;
      if (r == Z_STREAM_END) {
        // Another gzip member may follow; anything else after the stream is an error.
        uint8_t next[2] = {0, 0};
        uint64_t at = pos_ - zs_.avail_in;
        size_t k = src_.read_at(at, next, 2);
        if (k == 0) {
          done_ = true;
        } else if (k == 2 && next[0] == 0x1f && next[1] == 0x8b) {
          inflateReset(&zs_);
        } else {
          fail(src_.path, "trailing bytes after the gzip stream, at byte " + std::to_string(at));
        }
      } else if (r != Z_OK && r != Z_BUF_ERROR) {
        fail(src_.path, std::string("corrupt gzip stream (") + (zs_.msg ? zs_.msg : "zlib") + ")");
      }
    }
    return got;
  }

 private:
  const Source& src_;
  bool gzip_ = false, inited_ = false, done_ = false;
  uint64_t pos_ = 0;
  z_stream zs_;
  static constexpr size_t kChunk = size_t(1) << 16;
  std::unique_ptr<unsigned char[]> in_{new unsigned char[kChunk]};
};

bool code_dtype(uint8_t code, DType& out) {
  switch (code) {
    case 0x08: out = kU8; return true;
    case 0x09: out = kI8; return true;
    case 0x0B: out = kI16; return true;
    case 0x0C: out = kI32; return true;
    case 0x0D: out = kF32; return true;
    case 0x0E: out = kF64; return true;
    default: return false;
  }
}
uint8_t dtype_code(DType d) {
  switch (d) {
    case DType::U8: return 0x08;
    case DType::I8: return 0x09;
    case DType::I16: return 0x0B;
    case DType::I32: return 0x0C;
    case DType::F32: return 0x0D;
    case DType::F64: return 0x0E;
    default:
      throw DTypeError("[write_idx] expected u8, i8, i16, i32, f32 or f64, found " +
                       std::string(dtype_name(d)));
  }
}
/// IDX stores elements big-endian; swap in place on little-endian hosts.
void swap_bytes(uint8_t* p, size_t count, size_t width) {
  if (width == 1 || std::endian::native == std::endian::big) return;
  for (size_t i = 0; i < count; ++i, p += width) std::reverse(p, p + width);
}

Tensor parse_idx(const Source& src) {
  const std::string& path = src.path;
  Reader in(src);
  uint8_t head[4];
  size_t got = in.read(head, 4);
  if (got < 4)
    fail(path, "truncated header: expected 4 bytes of magic, found " + std::to_string(got));
  DType dtype;
  if (head[0] != 0 || head[1] != 0 || !code_dtype(head[2], dtype)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "bad magic 0x%02x%02x%02x%02x", head[0], head[1], head[2],
                  head[3]);
    fail(path, std::string(buf) + " (expected 00 00, a dtype code in 08 09 0b 0c 0d 0e, ndim)");
  }
  int ndim = head[3];
  uint8_t dims_raw[255 * 4];
  got = in.read(dims_raw, size_t(ndim) * 4);
  if (got < size_t(ndim) * 4)
    fail(path, "truncated header: expected " + std::to_string(ndim) + " dims, found " +
                   std::to_string(got / 4));
  if (size_t(ndim) > kMaxDims)
    fail(path, std::to_string(ndim) + " dims, more than the " + std::to_string(kMaxDims) +
                   " a tensor may have");
  Shape shape;
  int64_t extent = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint8_t* b = &dims_raw[size_t(d) * 4];
    int64_t v = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | b[3];
    shape.push_back(v);
    if (__builtin_mul_overflow(extent, std::max<int64_t>(v, 1), &extent) || extent > kMaxNumel)
      fail(path, "dims " + shape_str(shape) + "... describe more than 2^56 elements");
  }
  const size_t width = itemsize(dtype);
  const uint64_t head_bytes = 4 + 4 * uint64_t(ndim);
  const uint64_t body = uint64_t(numel_of(shape)) * width;
  auto truncated = [&](uint64_t found) {
    fail(path, "truncated data: expected " + std::to_string(body) + " bytes for shape " +
                   shape_str(shape) + ", found " + std::to_string(found));
  };
  auto trailing = [&] {
    fail(path, "unexpected data after the " + std::to_string(body) + " bytes of shape " +
                   shape_str(shape));
  };
  // Checked against what exists before anything is allocated.
  if (!in.gzip()) {
    uint64_t have = src.size() - head_bytes;
    if (have < body) truncated(have);
    if (have > body) trailing();
  } else if (head_bytes + body > kDeflateSlack &&
             (head_bytes + body - kDeflateSlack) / kMaxDeflateRatio > src.size()) {
    fail(path, "the header declares " + std::to_string(body) + " bytes for shape " +
                   shape_str(shape) + ", more than a gzip stream of " +
                   std::to_string(src.size()) + " bytes can hold");
  }
  Tensor t;
  try {
    t = ember::detail::empty_tensor(shape, dtype, Device::flex());
  } catch (const Error& e) {
    fail(path, std::string("cannot hold shape ") + shape_str(shape) + ": " + e.what());
  }
  auto* data = static_cast<uint8_t*>(t.numel() ? t.raw_data() : nullptr);
  got = body ? in.read(data, size_t(body)) : 0;
  if (got < body) truncated(got);
  uint8_t extra;
  if (in.read(&extra, 1) != 0) trailing();
  swap_bytes(data, size_t(numel_of(shape)), width);
  return t;
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::string error;
  ember::detail::ReadFile f = ember::detail::ReadFile::open(path, error);
  if (!f) fail(path, error);
  return parse_idx(Source{&f, {}, path});
}

namespace detail {
Tensor read_idx_bytes(std::string_view bytes, const std::string& name) {
  return parse_idx(Source{nullptr, bytes, name});
}
}  // namespace detail

void write_idx(const std::string& path, const Tensor& t) {
  uint8_t code = dtype_code(t.dtype());
  if (t.dim() > 255) throw ValueError("[write_idx] expected at most 255 dims");
  for (int64_t s : t.shape())
    if (s > int64_t(UINT32_MAX))
      throw ValueError("[write_idx] " + path + ": shape " + shape_str(t.shape()) +
                       " has a size beyond IDX's 32-bit sizes");
  TensorData d = t.data();
  std::vector<uint8_t> out = {0, 0, code, uint8_t(t.dim())};
  for (int64_t s : d.shape)
    for (int k = 3; k >= 0; --k) out.push_back(uint8_t(uint64_t(s) >> (8 * k)));
  size_t head = out.size();
  out.insert(out.end(), d.bytes.begin(), d.bytes.end());
  swap_bytes(out.data() + head, size_t(d.numel()), t.itemsize());
  // Written whole or not at all (and a FIFO or device at `path` is replaced, never written to).
  store::write_file_atomic(
      path, std::string_view(reinterpret_cast<const char*>(out.data()), out.size()));
}

}  // namespace ember::data
