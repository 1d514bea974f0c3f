#include "ember/train/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "ember/detail/crc32c.h"
#include "ember/detail/file.h"
#include "ember/store/atomic_file.h"
#include "ember/store/format.h"
#include "ember/store/safetensors.h"

// The protocol buffers are encoded and decoded by hand: an Event with a scalar is five fields,
// and a reader of our own can bound every length it trusts (libprotobuf would add a build step
// and a .proto copied from TensorFlow for that much). Field numbers, from tensorflow's
// event.proto and summary.proto: Event { double wall_time = 1; int64 step = 2; string
// file_version = 3; Summary summary = 5; }, Summary { repeated Value value = 1; },
// Value { string tag = 1; float simple_value = 2; }.

namespace ember::train {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "events.out.tfevents.";
// An event of ours is tens of bytes; a record claiming more than this is a corrupt length.
constexpr uint64_t kMaxRecord = uint64_t(1) << 30;
constexpr uint64_t kMaxFile = uint64_t(1) << 34;

std::string where(const std::string& path, const std::string& msg) {
  return store::detail::message(path, "[tensorboard] " + msg);
}

// --- encoding ---

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += char(uint8_t(v) | 0x80);
  out += char(uint8_t(v));
}
template <class T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, const std::string& s) {
  put_varint(out, uint64_t(field) << 3 | 2);
  put_varint(out, s.size());
  out += s;
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_varint(e, 1 << 3 | 1);
  put_fixed(e, wall_time);
  if (step != 0) {
    put_varint(e, 2 << 3 | 0);
    put_varint(e, uint64_t(step));  // negative steps take ten bytes, as protobuf's int64 does
  }
  return e;
}

std::string scalar_event(const std::string& tag, float value, int64_t step, double wall_time) {
  std::string v;
  put_bytes(v, 1, tag);
  put_varint(v, 2 << 3 | 5);
  put_fixed(v, value);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string framed(const std::string& data) {
  std::string r;
  const uint64_t n = data.size();
  put_fixed(r, n);
  put_fixed(r, detail::mask_crc32c(detail::crc32c(r.data(), 8)));
  r += data;
  put_fixed(r, detail::mask_crc32c(detail::crc32c(data.data(), data.size())));
  return r;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// --- decoding ---

// A bounded view of protobuf bytes; each read returns false when the bytes run out.
struct Wire {
  const unsigned char* p;
  const unsigned char* end;
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;  // more than ten bytes
  }
  template <class T>
  bool fixed(T& v) {
    if (size_t(end - p) < sizeof(T)) return false;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return true;
  }
  bool bytes(Wire& sub) {
    uint64_t n;
    if (!varint(n) || n > uint64_t(end - p)) return false;
    sub = {p, p + n};
    p += n;
    return true;
  }
  // Skips a field of `wire_type`; false for groups (unused by these messages) and short data.
  bool skip(uint64_t wire_type) {
    uint64_t v;
    uint32_t f32;
    Wire sub;
    switch (wire_type) {
      case 0:
        return varint(v);
      case 1:
        return fixed(v);
      case 2:
        return bytes(sub);
      case 5:
        return fixed(f32);
      default:
        return false;
    }
  }
};

struct Decoded {
  bool ok = true;
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // simple_value entries
};

bool decode_value(Wire w, Decoded& d) {
  std::string tag;
  bool has_value = false;
  float value = 0;
  while (w.p != w.end) {
    uint64_t key;
    if (!w.varint(key)) return false;
    Wire s;
    if (key == (1 << 3 | 2)) {
      if (!w.bytes(s)) return false;
      tag.assign(reinterpret_cast<const char*>(s.p), size_t(s.end - s.p));
    } else if (key == (2 << 3 | 5)) {
      if (!w.fixed(value)) return false;
      has_value = true;
    } else if (!w.skip(key & 7)) {
      return false;
    }
  }
  if (has_value) d.values.emplace_back(std::move(tag), value);
  return true;
}

Decoded decode_event(Wire w) {
  Decoded d;
  while (w.p != w.end && d.ok) {
    uint64_t key, u;
    Wire s;
    if (!w.varint(key)) {
      d.ok = false;
      break;
    }
    if (key == (1 << 3 | 1)) {
      d.ok = w.fixed(d.wall_time);
    } else if (key == (2 << 3 | 0)) {
      d.ok = w.varint(u);
      d.step = int64_t(u);
    } else if (key == (3 << 3 | 2)) {
      d.ok = w.bytes(s);
      if (d.ok) d.file_version.assign(reinterpret_cast<const char*>(s.p), size_t(s.end - s.p));
    } else if (key == (5 << 3 | 2)) {
      d.ok = w.bytes(s);
      while (d.ok && s.p != s.end) {  // Summary: repeated Value value = 1
        uint64_t k;
        Wire v;
        if (!s.varint(k))
          d.ok = false;
        else if (k == (1 << 3 | 2))
          d.ok = s.bytes(v) && decode_value(v, d);
        else
          d.ok = s.skip(k & 7);
      }
    } else {
      d.ok = w.skip(key & 7);
    }
  }
  return d;
}

uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

struct Record {
  std::string_view raw;  // the whole framed record
  Decoded event;
};

// Every record of `bytes`, checked; throws the errors read_event_file documents. With `torn` set,
// a file ending inside a record (a write cut short by a power loss or a full disk) stops the
// records there instead and sets *torn.
std::vector<Record> parse_records(const std::string& path, const std::string& bytes,
                                  bool* torn = nullptr) {
  std::vector<Record> out;
  size_t at = 0;
  auto u32 = [&](size_t off) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + off, 4);
    return v;
  };
  auto hex = [](uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return std::string(b);
  };
  while (at < bytes.size()) {
    const std::string rec =
        "record " + std::to_string(out.size() + 1) + " at byte " + std::to_string(at);
    // A file ending inside a record: an error, or with `torn` where the records stop.
    auto cut_short = [&](const std::string& what) {
      if (!torn) throw store::TruncatedError(where(path, rec + ": " + what));
      *torn = true;
    };
    const size_t left = bytes.size() - at;
    if (left < 12) {
      cut_short("the file ends inside the record's length (" + std::to_string(left) +
                " of 12 bytes)");
      break;
    }
    const uint64_t n = u64_at(bytes, at);
    const uint32_t want_len = detail::mask_crc32c(detail::crc32c(bytes.data() + at, 8));
    if (u32(at + 8) != want_len)
      throw store::FormatError(where(path, rec + ": length CRC " + hex(u32(at + 8)) +
                                               " does not match the length's " + hex(want_len)));
    if (n > left - 12 || left - 12 - n < 4) {
      cut_short(std::to_string(n) + " bytes of data and their CRC announced, " +
                std::to_string(left - 12) + " left in the file");
      break;
    }
    if (n > kMaxRecord)
      throw store::FormatError(where(path, rec + ": a length of " + std::to_string(n) +
                                               " bytes (at most " + std::to_string(kMaxRecord) +
                                               " expected)"));
    const char* data = bytes.data() + at + 12;
    const uint32_t want = detail::mask_crc32c(detail::crc32c(data, n));
    if (u32(at + 12 + n) != want)
      throw store::FormatError(where(path, rec + ": data CRC " + hex(u32(at + 12 + n)) +
                                               " does not match the data's " + hex(want)));
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    Record r{std::string_view(bytes.data() + at, 16 + n), decode_event({p, p + n})};
    if (!r.event.ok)
      throw store::FormatError(where(path, rec + ": not a valid Event protocol buffer"));
    out.push_back(std::move(r));
    at += 16 + n;
  }
  return out;
}

std::string read_bytes(const std::string& path) {
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, kMaxFile, bytes, error))
    throw store::IOError(where(path, error));
  return bytes;
}

std::string host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0 || !h[0]) return "localhost";
  std::string s(h);
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string base =
      (fs::path(dir) / (kPrefix + std::to_string(int64_t(now_seconds())) + "." + host_name()))
          .string();
  for (int k = 0; fd_ < 0; ++k) {
    path_ = k == 0 ? base : base + "." + std::to_string(k);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || k >= 1000))
      throw store::IOError(where(path_, "cannot create: " + store::detail::os_error()));
  }
  std::string e = event_header(now_seconds(), 0);
  put_bytes(e, 3, "brain.Event:2");
  write_record(e);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::write_record(const std::string& data) {
  const std::string r = framed(data);
  for (size_t done = 0; done < r.size();) {
    ssize_t k = ::write(fd_, r.data() + done, r.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw store::IOError(where(path_, "cannot write: " + store::detail::os_error()));
    done += size_t(k);
  }
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   double wall_time) {
  write_record(scalar_event(tag, float(value), step, wall_time < 0 ? now_seconds() : wall_time));
}

void TensorBoardWriter::sync() {
  if (::fsync(fd_) != 0)
    throw store::IOError(where(path_, "cannot fsync: " + store::detail::os_error()));
}

EventFile read_event_file(const std::string& path) {
  const std::string bytes = read_bytes(path);
  EventFile f;
  for (Record& r : parse_records(path, bytes)) {
    ++f.records;
    if (f.file_version.empty()) f.file_version = r.event.file_version;
    for (auto& [tag, v] : r.event.values)
      f.scalars.push_back({std::move(tag), r.event.step, r.event.wall_time, v});
  }
  return f;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(kPrefix, 0) == 0 && it->is_regular_file(ec))
      out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ScalarEvent> read_event_dir(const std::string& dir) {
  std::vector<ScalarEvent> out;
  for (const auto& f : event_files(dir)) {
    EventFile e = read_event_file(f);
    out.insert(out.end(), std::make_move_iterator(e.scalars.begin()),
               std::make_move_iterator(e.scalars.end()));
  }
  return out;
}

void drop_scalars(const std::string& dir,
                  const std::function<bool(const std::string& tag, int64_t step)>& keep) {
  for (const auto& f : event_files(dir)) {
    const std::string bytes = read_bytes(f);
    std::string kept;
    bool dropped = false;
    for (const Record& r : parse_records(f, bytes, &dropped)) {
      const bool all = std::all_of(r.event.values.begin(), r.event.values.end(),
                                   [&](const auto& v) { return keep(v.first, r.event.step); });
      if (all) kept += r.raw;
      dropped |= !all;
    }
    if (dropped) store::write_file_atomic(f, kept);
  }
}

}  // namespace ember::train
