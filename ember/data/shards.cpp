// The sharded dataset format (see shards.h for the layout): the writer's appends, the reader's
// index and mappings.
#include "ember/data/shards.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "ember/data/transforms.h"
#include "ember/detail/file.h"
#include "ember/store/mapped.h"

namespace ember::data {
namespace {

constexpr char kIndexMagic[8] = {'E', 'M', 'B', 'E', 'R', 'S', 'H', '1'};
constexpr uint64_t kHeader = 16, kEntry = 24, kAlign = 64;
constexpr uint32_t kRecordMagic = 0x43524d45;  // "EMRC" little-endian

struct Entry {
  uint32_t shard, reserved;
  uint64_t offset, length;
};
static_assert(sizeof(Entry) == kEntry);

struct FieldHead {
  uint8_t dtype, ndim, reserved[6];
  uint64_t offset, nbytes;
};
static_assert(sizeof(FieldHead) == 24);

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::string shard_name(const std::string& dir, uint32_t k) {
  char b[32];
  std::snprintf(b, sizeof b, "/shard-%05u.bin", k);
  return dir + b;
}

[[noreturn]] void fail(const char* who, const std::string& dir, const std::string& what) {
  throw ValueError(std::string("[") + who + "] '" + dir + "': " + what);
}

std::string os_error() { return std::strerror(errno); }

void write_all(int fd, const void* p, size_t n, const char* who, const std::string& dir) {
  const char* b = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = ::write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(who, dir, "write failed: " + os_error());
    b += w, n -= size_t(w);
  }
}

}  // namespace

// ------------------------------------------------------------------ writer

struct DatasetWriter::State {
  std::string dir;
  DatasetWriterOptions o;
  int index_fd = -1, shard_fd = -1;
  uint32_t shard = 0;
  uint64_t shard_size = 0;
  int64_t count = 0;
};

DatasetWriter::DatasetWriter(const std::string& dir, const DatasetWriterOptions& o)
    : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.dir = dir, s.o = o;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("DatasetWriter", dir, "cannot create the directory: " + ec.message());
  const std::string index = dir + "/index.bin";
  s.index_fd = ::open(index.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s.index_fd < 0) fail("DatasetWriter", dir, "cannot open index.bin: " + os_error());
  if (::flock(s.index_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(s.index_fd);
    fail("DatasetWriter", dir, "another DatasetWriter has the dataset open");
  }
  struct stat st {};
  ::fstat(s.index_fd, &st);
  uint64_t size = uint64_t(st.st_size);
  if (size < kHeader) {  // a new dataset (or a header cut short): start the index
    if (::ftruncate(s.index_fd, 0) != 0) fail("DatasetWriter", dir, "cannot reset index.bin");
    char head[kHeader] = {};
    std::memcpy(head, kIndexMagic, 8);
    write_all(s.index_fd, head, kHeader, "DatasetWriter", dir);
    size = kHeader;
  } else {
    char magic[8];
    if (::pread(s.index_fd, magic, 8, 0) != 8 || std::memcmp(magic, kIndexMagic, 8) != 0)
      fail("DatasetWriter", dir, "index.bin is not a sharded dataset's index");
    // A partial entry (a writer died mid-append) is dropped.
    const uint64_t whole = kHeader + (size - kHeader) / kEntry * kEntry;
    if (whole != size && ::ftruncate(s.index_fd, off_t(whole)) != 0)
      fail("DatasetWriter", dir, "cannot drop a partial index entry");
    size = whole;
  }
  ::lseek(s.index_fd, 0, SEEK_END);
  s.count = int64_t((size - kHeader) / kEntry);
  // New records go to a fresh shard after every existing one.
  while (std::filesystem::exists(shard_name(dir, s.shard))) ++s.shard;
}

DatasetWriter::~DatasetWriter() {
  try {
    close();
  } catch (...) {
  }
}

int64_t DatasetWriter::size() const { return s_->count; }

void DatasetWriter::write(const Record& fields) {
  State& s = *s_;
  if (s.index_fd < 0) fail("DatasetWriter", s.dir, "write after close()");
  std::vector<Tensor> host;
  for (const Tensor& t : fields) {
    if (!t.defined()) fail("DatasetWriter", s.dir, "a record field is an undefined tensor");
    if (t.dim() > 255) fail("DatasetWriter", s.dir, "a tensor of more than 255 dims");
    host.push_back(t.to(Device::flex()).contiguous());
  }
  // The record: header, field heads and sizes, then each field's bytes, all 64-byte aligned.
  uint64_t head = 8;
  for (const Tensor& t : host) head += sizeof(FieldHead) + 8 * uint64_t(t.dim());
  std::vector<FieldHead> heads(host.size());
  uint64_t at = align_up(head);
  for (size_t f = 0; f < host.size(); ++f) {
    heads[f] =
        FieldHead{uint8_t(host[f].dtype()), uint8_t(host[f].dim()), {}, at, host[f].nbytes()};
    at = align_up(at + host[f].nbytes());
  }
  std::string bytes(size_t(at), '\0');
  const uint32_t n = uint32_t(host.size());
  std::memcpy(bytes.data(), &kRecordMagic, 4);
  std::memcpy(bytes.data() + 4, &n, 4);
  size_t p = 8;
  for (size_t f = 0; f < host.size(); ++f) {
    std::memcpy(bytes.data() + p, &heads[f], sizeof(FieldHead));
    p += sizeof(FieldHead);
    for (int64_t d : host[f].shape()) std::memcpy(bytes.data() + p, &d, 8), p += 8;
    if (host[f].nbytes())
      std::memcpy(bytes.data() + heads[f].offset, host[f].raw_data(), host[f].nbytes());
  }
  if (s.shard_fd >= 0 && s.shard_size > 0 && s.shard_size + at > s.o.shard_bytes) {
    if (::fdatasync(s.shard_fd) != 0)
      fail("DatasetWriter", s.dir, "fdatasync failed: " + os_error());
    ::close(s.shard_fd);
    s.shard_fd = -1;
    ++s.shard;
  }
  if (s.shard_fd < 0) {
    s.shard_fd =
        ::open(shard_name(s.dir, s.shard).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (s.shard_fd < 0) fail("DatasetWriter", s.dir, "cannot create a shard: " + os_error());
    s.shard_size = 0;
  }
  write_all(s.shard_fd, bytes.data(), bytes.size(), "DatasetWriter", s.dir);
  if (s.o.sync_each && ::fdatasync(s.shard_fd) != 0)
    fail("DatasetWriter", s.dir, "fdatasync failed: " + os_error());
  const Entry e{s.shard, 0, s.shard_size, at};
  write_all(s.index_fd, &e, sizeof e, "DatasetWriter", s.dir);
  if (s.o.sync_each) ::fdatasync(s.index_fd);
  s.shard_size += at;
  ++s.count;
}

void DatasetWriter::flush() {
  State& s = *s_;
  if (s.shard_fd >= 0 && ::fdatasync(s.shard_fd) != 0)
    fail("DatasetWriter", s.dir, "fdatasync failed: " + os_error());
  if (s.index_fd >= 0 && ::fdatasync(s.index_fd) != 0)
    fail("DatasetWriter", s.dir, "fdatasync failed: " + os_error());
}

void DatasetWriter::close() {
  State& s = *s_;
  if (s.index_fd < 0) return;
  flush();
  if (s.shard_fd >= 0) ::close(s.shard_fd);
  ::close(s.index_fd);  // releases the lock
  s.shard_fd = s.index_fd = -1;
}

// ------------------------------------------------------------------ reader

struct ShardedDataset::State {
  std::string dir;
  std::mutex mu;
  std::vector<Entry> entries;
  struct Shard {
    std::shared_ptr<Storage> map;  // the whole shard as mapped when last needed
    uint64_t mapped = 0;
  };
  std::vector<Shard> shards;
};

ShardedDataset::ShardedDataset(const std::string& dir) : s_(std::make_shared<State>()) {
  s_->dir = dir;
  refresh();
}

int64_t ShardedDataset::size() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return int64_t(s_->entries.size());
}

int64_t ShardedDataset::refresh() {
  State& s = *s_;
  std::string bytes, error;
  if (!ember::detail::read_whole_file(s.dir + "/index.bin", uint64_t(1) << 40, bytes, error))
    fail("ShardedDataset", s.dir, "cannot read index.bin: " + error);
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kIndexMagic, 8) != 0)
    fail("ShardedDataset", s.dir, "index.bin is not a sharded dataset's index");
  const size_t n = (bytes.size() - kHeader) / kEntry;
  std::lock_guard<std::mutex> lock(s.mu);
  const size_t had = s.entries.size();
  s.entries.resize(std::max(had, n));
  if (n > had)
    std::memcpy(s.entries.data() + had, bytes.data() + kHeader + had * kEntry, (n - had) * kEntry);
  for (size_t i = had; i < n; ++i)
    if (s.entries[i].shard >= s.shards.size()) s.shards.resize(s.entries[i].shard + 1);
  return int64_t(s.entries.size());
}

Record ShardedDataset::get(int64_t i) const {
  State& s = *s_;
  Entry e;
  std::shared_ptr<Storage> map;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    detail::check_item_index("ShardedDataset", i, int64_t(s.entries.size()));
    e = s.entries[size_t(i)];
    State::Shard& sh = s.shards[e.shard];
    if (sh.mapped < e.offset + e.length) {  // a shard that grew since it was mapped: map it again
      std::string error;
      const std::string path = shard_name(s.dir, e.shard);
      ember::detail::ReadFile f = ember::detail::ReadFile::open(path, error);
      if (!f) fail("ShardedDataset", s.dir, "cannot open " + path + ": " + error);
      if (f.size() < e.offset + e.length)
        fail("ShardedDataset", s.dir, path + " is shorter than its index says");
      sh.map = store::detail::mapped_storage(f, 0, f.size(), Device::flex(), error);
      if (!sh.map) fail("ShardedDataset", s.dir, "cannot map " + path + ": " + error);
      sh.mapped = f.size();
    }
    map = sh.map;
  }
  const char* base = static_cast<const char*>(map->data) + e.offset;
  auto bad = [&](const std::string& why) {
    fail("ShardedDataset", s.dir, "record " + std::to_string(i) + " is damaged: " + why);
  };
  if (e.length < 8) bad("too short");
  uint32_t magic, n;
  std::memcpy(&magic, base, 4);
  std::memcpy(&n, base + 4, 4);
  if (magic != kRecordMagic) bad("no record header");
  Record r;
  uint64_t p = 8;
  for (uint32_t f = 0; f < n; ++f) {
    if (p + sizeof(FieldHead) > e.length) bad("field table past its end");
    FieldHead h;
    std::memcpy(&h, base + p, sizeof h);
    p += sizeof h;
    if (h.dtype >= kNumDTypes || p + 8 * uint64_t(h.ndim) > e.length) bad("bad field header");
    Shape shape(h.ndim);
    std::memcpy(shape.data(), base + p, 8 * size_t(h.ndim));
    p += 8 * uint64_t(h.ndim);
    const DType dt = DType(h.dtype);
    uint64_t count = 1;
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t(1) << 48)) bad("bad size");
      count *= uint64_t(d);
    }
    if (count * itemsize(dt) != h.nbytes || h.offset + h.nbytes > e.length ||
        (e.offset + h.offset) % itemsize(dt) != 0)
      bad("field bytes out of place");
    r.push_back(store::detail::tensor_over(map, dt, shape, contiguous_strides(shape),
                                           int64_t((e.offset + h.offset) / itemsize(dt)),
                                           Device::flex()));
  }
  return r;
}

DatasetPtr<Example> as_examples(DatasetPtr<Record> records) {
  return map(std::move(records), [](const Record& r) {
    if (r.size() != 2)
      throw ValueError("[as_examples] expected records of 2 fields, found " +
                       std::to_string(r.size()));
    return Example{r[0], r[1]};
  });
}

}  // namespace ember::data
