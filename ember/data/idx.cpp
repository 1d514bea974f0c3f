// IDX reading through zlib's gz* API, which reads gzip'd and plain files alike.
#include "ember/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <fstream>
#include <memory>

#include "ember/error.h"

namespace ember::data {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw ValueError("[read_idx] " + path + ": " + msg);
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

/// Reads exactly `n` bytes; returns how many were read before the end (throws on a zlib error).
size_t read_some(gzFile f, const std::string& path, void* dst, size_t n) {
  size_t got = 0;
  auto* p = static_cast<unsigned char*>(dst);
  while (got < n) {
    unsigned chunk = unsigned(std::min<size_t>(n - got, size_t(1) << 30));
    int r = gzread(f, p + got, chunk);
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      fail(path, std::string("read error (") + (msg ? msg : "zlib") + ")");
    }
    if (r == 0) break;
    got += size_t(r);
  }
  return got;
}

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

}  // namespace

Tensor read_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, "cannot open the file");
  uint8_t head[4];
  size_t got = read_some(f.get(), path, head, 4);
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
  std::vector<uint8_t> dims_raw(size_t(ndim) * 4);
  got = read_some(f.get(), path, dims_raw.data(), dims_raw.size());
  if (got < dims_raw.size())
    fail(path, "truncated header: expected " + std::to_string(ndim) + " dims, found " +
                   std::to_string(got / 4));
  Shape shape;
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint8_t* b = &dims_raw[size_t(d) * 4];
    uint64_t v = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | b[3];
    shape.push_back(int64_t(v));
    count *= v;
    if (count > (uint64_t(1) << 40)) fail(path, "dims describe more than 2^40 elements");
  }
  size_t width = itemsize(dtype);
  std::vector<uint8_t> body(size_t(count) * width);
  got = read_some(f.get(), path, body.data(), body.size());
  if (got < body.size())
    fail(path, "truncated data: expected " + std::to_string(body.size()) + " bytes for shape " +
                   shape_str(shape) + ", found " + std::to_string(got));
  uint8_t extra;
  if (read_some(f.get(), path, &extra, 1) != 0)
    fail(path, "unexpected data after the " + std::to_string(body.size()) + " bytes of shape " +
                   shape_str(shape));
  swap_bytes(body.data(), size_t(count), width);
  return from_blob_copy(body.data(), dtype, shape, dtype, Device::flex());
}

void write_idx(const std::string& path, const Tensor& t) {
  uint8_t code = dtype_code(t.dtype());
  if (t.dim() > 255) throw ValueError("[write_idx] expected at most 255 dims");
  TensorData d = t.data();
  std::vector<uint8_t> out = {0, 0, code, uint8_t(t.dim())};
  for (int64_t s : d.shape)
    for (int k = 3; k >= 0; --k) out.push_back(uint8_t(uint64_t(s) >> (8 * k)));
  size_t head = out.size();
  out.insert(out.end(), d.bytes.begin(), d.bytes.end());
  swap_bytes(out.data() + head, size_t(d.numel()), t.itemsize());
  std::ofstream os(path, std::ios::binary);
  os.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
  if (!os) throw ValueError("[write_idx] " + path + ": cannot write the file");
}

}  // namespace ember::data
