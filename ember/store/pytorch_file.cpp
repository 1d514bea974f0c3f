// Opening a PyTorch file. The zip format is read through minizip over ember's own positioned
// reads (so the directory and the pickle never go through a mapping and a shrinking file is an
// IOError): the directory is listed, data.pkl is decompressed and unpickled, and each storage
// entry is located. A stored entry's bytes are mapped in place, at their offset in the file, or
// read from there, when a tensor of it is asked for; a compressed one is inflated then. The legacy format is a stream of pickles followed by each
// storage's element count and bytes, all of which are located (not read) when the file opens.
#include <unzip.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "ember/detail/text.h"
#include "ember/store/mapped.h"
#include "ember/store/pytorch_impl.h"

namespace ember::store {
namespace {

using detail::PtDoc;
using detail::PtNode;
using detail::PtSource;
using detail::PtStorage;
using Kind = PtValue::Kind;

// Deflate expands at most 1032 times; a larger claim is refused before anything is allocated.
constexpr uint64_t kMaxRatio = 1032;
constexpr uint64_t kMaxPickle = uint64_t(1) << 30;
constexpr uint64_t kMaxEntries = 1'000'000;

// minizip's file functions over a PtSource.
struct ZipStream {
  const PtSource* src;
  uint64_t pos = 0;
  bool error = false;
};
voidpf zip_open(voidpf opaque, const void*, int) { return new ZipStream{static_cast<const PtSource*>(opaque)}; }
uLong zip_read(voidpf, voidpf stream, void* buf, uLong size) {
  auto* s = static_cast<ZipStream*>(stream);
  uint64_t total = s->src->size();
  if (s->pos >= total) return 0;
  uLong n = uLong(std::min<uint64_t>(size, total - s->pos));
  std::string e;
  if (!s->src->read(s->pos, buf, n, e)) {
    s->error = true;
    return 0;
  }
  s->pos += n;
  return n;
}
uLong zip_write(voidpf, voidpf, const void*, uLong) { return 0; }
ZPOS64_T zip_tell(voidpf, voidpf stream) { return static_cast<ZipStream*>(stream)->pos; }
long zip_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto* s = static_cast<ZipStream*>(stream);
  uint64_t base = origin == ZLIB_FILEFUNC_SEEK_SET ? 0
                  : origin == ZLIB_FILEFUNC_SEEK_CUR ? s->pos
                                                     : s->src->size();
  if (offset > ~uint64_t(0) - base) return -1;
  s->pos = base + offset;
  return 0;
}
int zip_close(voidpf, voidpf stream) {
  delete static_cast<ZipStream*>(stream);
  return 0;
}
int zip_error(voidpf, voidpf stream) { return static_cast<ZipStream*>(stream)->error; }

// An open archive; closed with its owner.
struct Zip {
  unzFile f = nullptr;
  Zip(const PtSource& src, const PtDoc& doc) {
    zlib_filefunc64_def def{zip_open, zip_read, zip_write, zip_tell, zip_seek, zip_close,
                            zip_error, const_cast<PtSource*>(&src)};
    f = unzOpen2_64("", &def);
    if (!f) doc.fail("not a valid zip archive (its central directory cannot be read)");
    // minizip takes a zip64 archive's directory from its zip64 records and never reads the end
    // record that follows them: check that it is whole, so a cut file is not read as complete.
    unz_global_info64 gi;
    char sig[4] = {};
    std::string error;
    const uint64_t total = src.size();
    if (unzGetGlobalInfo64(f, &gi) != UNZ_OK || total < 22 + uint64_t(gi.size_comment) ||
        !src.read(total - 22 - gi.size_comment, sig, 4, error) ||
        std::memcmp(sig, "PK\x05\x06", 4) != 0) {
      unzClose(f);
      f = nullptr;
      throw TruncatedError(doc.message("truncated: the zip archive's end record is incomplete"));
    }
  }
  ~Zip() {
    if (f) unzClose(f);
  }
  Zip(const Zip&) = delete;
  Zip& operator=(const Zip&) = delete;
};

struct Entry {
  unz64_file_pos pos;
  uint64_t data_offset = 0;  // of the stored bytes
  uint64_t size = 0, compressed = 0;
  bool stored = false;
};

// Inflates the current entry (opened) into `out`, which must come to exactly `size` bytes.
void inflate_entry(unzFile f, const std::string& name, uint64_t size, char* out,
                   const PtDoc& doc) {
  uint64_t got = 0;
  while (got < size) {
    unsigned chunk = unsigned(std::min<uint64_t>(size - got, 1u << 30));
    int k = unzReadCurrentFile(f, out + got, chunk);
    if (k < 0) doc.fail("entry " + name + " cannot be inflated (zip error " + std::to_string(k) + ")");
    if (k == 0) break;
    got += uint64_t(k);
  }
  char extra;
  if (got != size || unzReadCurrentFile(f, &extra, 1) != 0)
    doc.fail("entry " + name + " does not inflate to the " + std::to_string(size) +
             " bytes its header declares");
  if (unzCloseCurrentFile(f) == UNZ_CRCERROR) doc.fail("entry " + name + " fails its CRC check");
}

std::map<std::string, Entry> list_entries(unzFile f, const PtDoc& doc) {
  std::map<std::string, Entry> out;
  int r = unzGoToFirstFile(f);
  for (uint64_t n = 0; r == UNZ_OK; ++n, r = unzGoToNextFile(f)) {
    if (n >= kMaxEntries) doc.fail("more than " + std::to_string(kMaxEntries) + " zip entries");
    unz_file_info64 info;
    char name[1024];
    if (unzGetCurrentFileInfo64(f, &info, name, sizeof name, nullptr, 0, nullptr, 0) != UNZ_OK)
      doc.fail("a zip directory entry cannot be read");
    if (info.size_filename >= sizeof name) doc.fail("a zip entry name longer than 1023 bytes");
    std::string key(name, info.size_filename);
    Entry e;
    unzGetFilePos64(f, &e.pos);
    e.size = info.uncompressed_size;
    e.compressed = info.compressed_size;
    if (info.flag & 1) doc.fail("entry " + ember::detail::shorten(key) + " is encrypted");
    if (info.compression_method != 0 && info.compression_method != Z_DEFLATED)
      doc.fail("entry " + ember::detail::shorten(key) + " uses compression method " +
               std::to_string(info.compression_method) + " (only stored and deflated are read)");
    e.stored = info.compression_method == 0;
    if (e.stored && e.size != e.compressed)
      doc.fail("stored entry " + ember::detail::shorten(key) + " declares " +
               std::to_string(e.size) + " bytes but holds " + std::to_string(e.compressed));
    if (!e.stored && e.size / kMaxRatio > e.compressed)
      doc.fail("entry " + ember::detail::shorten(key) + " claims " + std::to_string(e.size) +
               " bytes from " + std::to_string(e.compressed) + " compressed (more than deflate's " +
               "maximum ratio)");
    if (e.stored) {  // where its bytes start: past the local header, which minizip checks
      if (unzOpenCurrentFile2(f, nullptr, nullptr, 1) != UNZ_OK)
        doc.fail("entry " + ember::detail::shorten(key) + ": bad local header");
      e.data_offset = unzGetCurrentFileZStreamPos64(f);
      unzCloseCurrentFile(f);
      uint64_t total = doc.src->size();
      if (e.data_offset > total || e.size > total - e.data_offset)
        throw TruncatedError(doc.message("truncated: entry " + ember::detail::shorten(key) +
                                         " ends past the end of the file"));
    }
    if (!out.emplace(key, e).second) doc.fail("duplicate zip entry " + ember::detail::shorten(key));
  }
  if (r != UNZ_END_OF_LIST_OF_FILE) doc.fail("the zip directory cannot be read to its end");
  return out;
}

std::string str_of(const PtNode* n, const PtDoc& doc, const char* what) {
  if (n->kind != Kind::kString && n->kind != Kind::kBytes) doc.fail(std::string(what) + " is not a string");
  return n->s;
}

// ('storage', storage_type, key, location, numel[, view_metadata]) -> a storage node, one per key.
struct Storages {
  PtDoc& doc;
  std::map<std::string, const PtNode*> by_key;
  const PtNode* get(const PtNode& pid) {
    const auto& a = pid.items;
    if (a.size() < 5 || str_of(a[0], doc, "a persistent id's tag") != "storage")
      doc.fail("a persistent id that is not ('storage', type, key, location, numel)");
    if (a[1]->internal != detail::PtInternal::kStorageType) doc.fail("a storage of no known type");
    std::string key = str_of(a[2], doc, "a storage key");
    if (a[4]->kind != Kind::kInt || a[4]->big || a[4]->i < 0 || a[4]->i > kMaxNumel)
      doc.fail("storage " + ember::detail::shorten(key) + ": bad element count");
    if (a.size() > 5 && a[5]->kind != Kind::kNone)
      doc.fail("storage views (files from PyTorch before 1.0) are not supported");
    auto it = by_key.find(key);
    if (it != by_key.end()) {
      if (it->second->storage->dtype != a[1]->dtype || it->second->storage->numel != a[4]->i)
        doc.fail("storage " + ember::detail::shorten(key) + " is named with two types or sizes");
      return it->second;
    }
    PtNode* n = doc.add(Kind::kObject, detail::PtInternal::kStorage);
    n->storage = std::make_shared<PtStorage>();
    n->storage->key = key;
    n->storage->dtype = a[1]->dtype;
    n->storage->numel = a[4]->i;
    n->s = a[1]->s;
    by_key.emplace(key, n);
    return n;
  }
};

void open_zip(PtDoc& doc) {
  Zip zip(*doc.src, doc);
  auto entries = list_entries(zip.f, doc);
  std::string prefix;
  for (const auto& [name, e] : entries) {
    auto slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash) == "/data.pkl") {
      if (!prefix.empty()) doc.fail("two data.pkl entries");
      prefix = name.substr(0, slash + 1);
    }
  }
  if (prefix.empty()) doc.fail("a zip archive with no <archive>/data.pkl: not a torch.save file");
  const Entry& pe = entries.at(prefix + "data.pkl");
  if (pe.size > kMaxPickle) doc.fail("data.pkl is larger than 1 GiB");
  std::string pickle(size_t(pe.size), '\0');
  if (unzGoToFilePos64(zip.f, &pe.pos) != UNZ_OK || unzOpenCurrentFile(zip.f) != UNZ_OK)
    doc.fail("data.pkl cannot be opened");
  inflate_entry(zip.f, "data.pkl", pe.size, pickle.data(), doc);

  PtSource mem;
  mem.in_memory = true;
  mem.bytes = std::move(pickle);
  detail::PtReader in(mem, 0, mem.size(), doc);
  Storages storages{doc, {}};
  doc.root = detail::unpickle(doc, in, [&](const PtNode& pid) { return storages.get(pid); });
  for (auto& [key, node] : storages.by_key) {
    PtStorage& st = *node->storage;
    st.entry = prefix + "data/" + key;
    auto it = entries.find(st.entry);
    if (it == entries.end()) doc.fail("storage " + ember::detail::shorten(key) + " has no entry " +
                                      ember::detail::shorten(st.entry));
    uint64_t want = uint64_t(st.numel) * itemsize(st.dtype);
    if (it->second.size != want)
      doc.fail("entry " + ember::detail::shorten(st.entry) + " holds " +
               std::to_string(it->second.size) + " bytes but its storage needs " +
               std::to_string(want) + " (" + std::to_string(st.numel) + " elements of " +
               std::string(dtype_name(st.dtype)) + ")");
    st.in_place = it->second.stored;
    st.offset = it->second.data_offset;
    st.zip_pos[0] = it->second.pos.pos_in_zip_directory;
    st.zip_pos[1] = it->second.pos.num_of_file;
  }
}

void open_legacy(PtDoc& doc) {
  const PtSource& src = *doc.src;
  detail::PtReader in(src, 0, src.size(), doc);
  auto none = [&](const PtNode&) -> const PtNode* {
    doc.fail("a persistent id in the file's header");
  };
  // The magic number 0x1950a86a20f9469cfc6c (a 10-byte LONG1), then protocol version 1001.
  const PtNode* magic = detail::unpickle(doc, in, none);
  static const char kMagic[] = "\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
  if (magic->kind != Kind::kInt || !magic->big || magic->s != std::string(kMagic, 10))
    doc.fail("not a PyTorch file: a pickle without torch.save's magic number");
  const PtNode* version = detail::unpickle(doc, in, none);
  if (version->kind != Kind::kInt || version->big || version->i != 1001)
    doc.fail("legacy format protocol version is not 1001");
  detail::unpickle(doc, in, none);  // sys_info: byte order and type sizes (always little-endian)
  Storages storages{doc, {}};
  doc.root = detail::unpickle(doc, in, [&](const PtNode& pid) { return storages.get(pid); });
  const PtNode* keys = detail::unpickle(doc, in, none);
  if (keys->kind != Kind::kList) doc.fail("the storage key list is not a list");
  uint64_t at = in.pos();
  std::map<std::string, bool> placed;
  for (const PtNode* k : keys->items) {
    std::string key = str_of(k, doc, "a storage key");
    auto it = storages.by_key.find(key);
    if (it == storages.by_key.end() || !placed.emplace(key, true).second)
      doc.fail("storage key " + ember::detail::shorten(key) + " is unknown or repeated");
    PtStorage& st = *it->second->storage;
    int64_t n = 0;
    std::string error;
    if (at > src.size() || src.size() - at < 8)
      throw TruncatedError(doc.message("truncated: the file ends before storage " +
                                       ember::detail::shorten(key)));
    if (!src.read(at, &n, 8, error)) throw IOError(doc.message(error));
    if (n != st.numel)
      doc.fail("storage " + ember::detail::shorten(key) + " holds " + std::to_string(n) +
               " elements, but the pickle says " + std::to_string(st.numel));
    uint64_t bytes = uint64_t(n) * itemsize(st.dtype);
    if (bytes > src.size() - at - 8)
      throw TruncatedError(doc.message("truncated: storage " + ember::detail::shorten(key) +
                                       " needs " + std::to_string(bytes) + " bytes"));
    st.offset = at + 8;
    at += 8 + bytes;
  }
  if (placed.size() != storages.by_key.size()) doc.fail("a storage with no data");
}

PtValue open(std::shared_ptr<PtDoc> doc) {
  const PtSource& src = *doc->src;
  char head[4] = {};
  std::string error;
  if (src.size() < 4) throw TruncatedError(doc->message("truncated: " + std::to_string(src.size()) + " bytes"));
  if (!src.read(0, head, 4, error)) throw IOError(doc->message(error));
  if (std::memcmp(head, "PK\x03\x04", 4) == 0) open_zip(*doc);
  else if (uint8_t(head[0]) == 0x80) open_legacy(*doc);
  else doc->fail("not a PyTorch file: neither a zip archive nor a pickle");
  detail::check_tree(*doc, doc->root);
  const PtNode* root = doc->root;
  return doc->value(std::move(doc), root);
}

}  // namespace

PtValue load_pytorch(const std::string& path, const ReadOptions& options) {
  auto doc = std::make_shared<PtDoc>();
  doc->path = path;
  auto src = std::make_shared<PtSource>();
  std::string error;
  src->file = ember::detail::ReadFile::open(path, error);
  if (!src->file) throw IOError(doc->message(error));
  src->mapped = ember::detail::mmap_enabled(options.mmap);
  src->prefetch = options.prefetch;
  doc->src = std::move(src);
  return open(std::move(doc));
}

PtValue load_pytorch_bytes(std::string bytes, const std::string& name) {
  auto doc = std::make_shared<PtDoc>();
  doc->path = name;
  auto src = std::make_shared<PtSource>();
  src->in_memory = true;
  src->bytes = std::move(bytes);
  doc->src = std::move(src);
  return open(std::move(doc));
}

bool is_pytorch_file(const std::string& path) {
  std::string error;
  auto f = ember::detail::ReadFile::open(path, error);
  char head[9] = {};
  if (!f || f.size() < 4 || !f.read_exact(0, head, std::min<uint64_t>(9, f.size()), error))
    return false;
  if (std::memcmp(head, "PK\x03\x04", 4) == 0) return true;
  // A safetensors file whose header length ends in byte 0x80 (128, 384, ...) also starts with
  // 0x80; its ninth byte is the header's '{', where a pickle has torch's magic number.
  return uint8_t(head[0]) == 0x80 && !(f.size() >= 9 && head[8] == '{');
}

// Reads all of the storage's bytes into `dst`: in place, or inflated from its entry.
static void read_storage(const PtDoc& doc, const PtStorage& st, void* dst) {
  const uint64_t n = uint64_t(st.numel) * itemsize(st.dtype);
  std::string error;
  if (st.in_place) {
    if (n && !doc.src->read(st.offset, dst, size_t(n), error))
      throw IOError(doc.message("storage " + ember::detail::shorten(st.key) + ": " + error));
    return;
  }
  Zip zip(*doc.src, doc);
  unz64_file_pos pos{st.zip_pos[0], st.zip_pos[1]};
  if (unzGoToFilePos64(zip.f, &pos) != UNZ_OK || unzOpenCurrentFile(zip.f) != UNZ_OK)
    doc.fail("entry " + ember::detail::shorten(st.entry) + " cannot be opened");
  inflate_entry(zip.f, st.entry, n, static_cast<char*>(dst), doc);
}

// The ember storage of `st` on the host device `place`, shared by every live tensor of it: the
// mapped file's bytes for a stored, aligned entry (or legacy data), else a read into memory.
// Its bool bytes are checked when it is made.
static std::shared_ptr<Storage> storage_of(const PtDoc& doc, const PtStorage& st, Device place) {
  std::lock_guard<std::mutex> lock(st.mu);
  if (auto s = st.made.lock(); s && st.made_on == place) return s;
  const uint64_t n = uint64_t(st.numel) * itemsize(st.dtype);
  std::shared_ptr<Storage> s;
  if (st.in_place && doc.src->mapped && detail::mappable(st.offset, n, st.dtype)) {
    // Mapped after the file's size is checked; a file that shrank, or a file system that
    // cannot map it, is read (and a shrunk file is then an IOError).
    std::string error;
    s = detail::mapped_storage(doc.src->file, st.offset, n, place, error, doc.src->prefetch);
  }
  if (!s) {
    Tensor flat = ember::detail::empty_tensor({st.numel}, st.dtype, place);
    read_storage(doc, st, flat.raw_data());
    s = flat.impl()->storage;
  }
  if (st.dtype == kBool)
    if (auto i = detail::bad_bool_byte(s->data, n))
      doc.fail("storage " + ember::detail::shorten(st.key) + ": bool byte " + std::to_string(*i) +
               " is " + std::to_string(static_cast<const uint8_t*>(s->data)[*i]) +
               ", not 0 or 1");
  st.made = s;
  st.made_on = place;
  return s;
}

Tensor PtValue::tensor(std::optional<DType> dtype, std::optional<Device> device) const {
  if (!is_tensor()) {
    if (!node_) throw ValueError("[PtValue] tensor() of an empty value");
    throw ValueError("[PtValue] " + path() + ": tensor() of a value that is not a tensor");
  }
  const detail::PtTensor& t = *node_->tensor;
  const PtStorage& st = *t.storage;
  const Device want = resolve_device(device);
  const Device host = detail::host_for(want.without_layers());
  Tensor raw = numel_of(t.shape) == 0
                   ? ember::detail::empty_tensor(t.shape, st.dtype, host)
                   : detail::tensor_over(storage_of(*doc_, st, host), st.dtype, t.shape,
                                         t.strides, t.offset, host);
  return detail::deliver(std::move(raw), dtype, want);
}

}  // namespace ember::store

namespace ember::store::detail {

std::optional<FileRange> RangeAccess::range(const PtValue& value) {
  if (!value.is_tensor() || value.doc_->src->in_memory) return std::nullopt;
  const PtTensor& t = *value.node_->tensor;
  const PtStorage& st = *t.storage;
  const int64_t n = numel_of(t.shape);
  if (!st.in_place || st.dtype == kBool || n == 0 || t.strides != contiguous_strides(t.shape))
    return std::nullopt;
  const uint64_t size = itemsize(st.dtype);
  return FileRange{value.doc_->src, st.dtype, st.offset + uint64_t(t.offset) * size,
                   uint64_t(n) * size};
}

}  // namespace ember::store::detail
