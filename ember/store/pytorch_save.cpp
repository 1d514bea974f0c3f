// Writing torch.save's zip format: archive/data.pkl (a protocol-2 pickle of an OrderedDict that
// rebuilds each tensor with torch._utils._rebuild_tensor_v2 from a persistent storage id),
// archive/data/<i> (each tensor's bytes, one storage per tensor, stored uncompressed and 64-byte
// aligned as torch aligns them) and archive/version. The pickle uses only the opcodes and globals
// that torch.load(weights_only=True) accepts. minizip writes the archive through an AtomicFile.
#include <zip.h>
#include <zlib.h>

#include <set>

#include "ember/store/atomic_file.h"
#include "ember/store/pytorch.h"
#include "ember/store/pytorch_impl.h"

namespace ember::store {
namespace {

class Pickle {
 public:
  std::string out = "\x80\x02";  // PROTO 2
  void op(char c) { out += c; }
  void u32(uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
  void str(const std::string& s) {
    op('X');  // BINUNICODE
    u32(uint32_t(s.size()));
    out += s;
  }
  void global(const char* module, const char* name) {
    op('c');
    out += std::string(module) + "\n" + name + "\n";
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      out += char(v);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      u32(uint32_t(int32_t(v)));
    } else {  // LONG1 with 8 two's-complement bytes
      op('\x8a');
      out += char(8);
      out.append(reinterpret_cast<const char*>(&v), 8);
    }
  }
  void int_tuple(const Shape& s) {
    op('(');
    for (int64_t v : s) integer(v);
    op('t');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
};

struct Writer {
  AtomicFile* file;
  uint64_t pos = 0, end = 0;
  std::string error;  // an IOError's message: exceptions must not cross minizip's C frames
};
voidpf w_open(voidpf opaque, const void*, int) { return opaque; }
uLong w_write(voidpf, voidpf s, const void* buf, uLong n) {
  auto* w = static_cast<Writer*>(s);
  try {
    w->file->write_at(w->pos, buf, n);
  } catch (const IOError& e) {
    if (w->error.empty()) w->error = e.what();
    return 0;
  }
  w->pos += n;
  w->end = std::max(w->end, w->pos);
  return n;
}
uLong w_read(voidpf, voidpf, void*, uLong) { return 0; }
ZPOS64_T w_tell(voidpf, voidpf s) { return static_cast<Writer*>(s)->pos; }
long w_seek(voidpf, voidpf s, ZPOS64_T off, int origin) {
  auto* w = static_cast<Writer*>(s);
  w->pos = (origin == ZLIB_FILEFUNC_SEEK_SET ? 0
            : origin == ZLIB_FILEFUNC_SEEK_CUR ? w->pos : w->end) + off;
  return 0;
}
int w_close(voidpf, voidpf) { return 0; }
int w_error(voidpf, voidpf s) { return !static_cast<Writer*>(s)->error.empty(); }

}  // namespace

void save_pytorch(const std::string& path, const TensorMap& state_dict) {
  auto fail = [&](const std::string& m) { return ValueError("[save_pytorch] " + path + ": " + m); };
  std::set<std::string> seen;
  for (const auto& [name, t] : state_dict) {
    if (!seen.insert(name).second) throw fail("duplicate tensor name \"" + name + "\"");
    if (!t.defined()) throw fail("tensor \"" + name + "\" is undefined");
  }
  Pickle p;
  p.empty_ordered_dict();
  p.op('(');  // MARK
  for (size_t i = 0; i < state_dict.size(); ++i) {
    const auto& [name, t] = state_dict[i];
    p.str(name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('(');
    p.op('(');  // the persistent id
    p.str("storage");
    p.global("torch", detail::storage_name(t.dtype()));
    p.str(std::to_string(i));
    p.str("cpu");
    p.integer(t.numel());
    p.op('t');
    p.op('Q');  // BINPERSID
    p.integer(0);
    p.int_tuple(t.shape());
    p.int_tuple(contiguous_strides(t.shape()));
    p.op('\x89');  // requires_grad False
    p.empty_ordered_dict();
    p.op('t');
    p.op('R');
    if (i % 1000 == 999) {  // SETITEMS in batches, as pickle writes them
      p.op('u');
      p.op('(');
    }
  }
  p.op('u');
  p.op('.');

  AtomicFile file(path);
  Writer w{&file, 0, 0, {}};
  zlib_filefunc64_def def{w_open, w_read, w_write, w_tell, w_seek, w_close, w_error, &w};
  zipFile zf = zipOpen2_64("", APPEND_STATUS_CREATE, nullptr, &def);
  if (!zf) throw IOError("[save_pytorch] " + path + ": cannot start the zip archive");
  struct Closer {
    zipFile& zf;
    ~Closer() {
      if (zf) zipClose(zf, nullptr);
    }
  } closer{zf};
  auto io_fail = [&](const std::string& m) {
    return IOError(w.error.empty() ? "[save_pytorch] " + path + ": " + m : w.error);
  };
  auto entry = [&](const std::string& name, const void* data, uint64_t n) {
    const bool zip64 = n >= 0xffffffffu;
    // Pad the local header's extra field so the data starts on a 64-byte boundary.
    uint64_t header = w.pos + 30 + name.size() + 4 + (zip64 ? 20 : 0);
    uint16_t pad = uint16_t((64 - header % 64) % 64);
    std::string extra = {'F', 'B', char(pad & 0xff), char(pad >> 8)};
    extra.append(pad, 'Z');
    zip_fileinfo info{};
    if (zipOpenNewFileInZip4_64(zf, name.c_str(), &info, extra.data(), uInt(extra.size()),
                                nullptr, 0, nullptr, 0, 0, 0, -MAX_WBITS, DEF_MEM_LEVEL,
                                Z_DEFAULT_STRATEGY, nullptr, 0, 0, 0, zip64 ? 1 : 0) != ZIP_OK)
      throw io_fail("cannot add entry " + name);
    auto* b = static_cast<const char*>(data);
    for (uint64_t done = 0; done < n;) {
      unsigned k = unsigned(std::min<uint64_t>(n - done, 1u << 30));
      if (zipWriteInFileInZip(zf, b + done, k) != ZIP_OK)
        throw io_fail("cannot write entry " + name);
      done += k;
    }
    if (zipCloseFileInZip(zf) != ZIP_OK)
      throw io_fail("cannot close entry " + name);
  };
  entry("archive/data.pkl", p.out.data(), p.out.size());
  entry("archive/byteorder", "little", 6);
  for (size_t i = 0; i < state_dict.size(); ++i) {
    // One tensor at a time: the host copy of a single tensor is the most held in memory.
    TensorData d = state_dict[i].second.data();
    entry("archive/data/" + std::to_string(i), d.bytes.data(), d.bytes.size());
  }
  entry("archive/version", "3\n", 2);
  int r = zipClose(zf, nullptr);
  zf = nullptr;
  if (r != ZIP_OK) throw io_fail("cannot finish the zip archive");
  file.commit();
}

}  // namespace ember::store
