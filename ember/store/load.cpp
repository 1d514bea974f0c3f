// load_into: match file keys to target names (rename, filter), check every pair, then copy.
#include "ember/store/load.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/store/format.h"
#include "ember/store/mapped.h"
#include "ember/store/pytorch.h"

namespace ember::store {
namespace {

// Rules are RE2 patterns (Debian libre2): linear-time matching whatever the pattern or the
// name, bounded memory, no recursion per character; std::regex backtracks exponentially on
// patterns such as "(a*)*b" and recursed per character (found by fuzz_safetensors_load).
constexpr size_t kMaxPattern = 4096;
constexpr int64_t kMaxRegexMemory = int64_t(8) << 20;

std::string quoted(const std::string& s) {
  return "\"" + s.substr(0, 60) + (s.size() > 60 ? "..." : "") + "\"";
}

std::unique_ptr<re2::RE2> compile(const std::string& pattern, const std::string& path,
                                  const char* what) {
  if (pattern.size() > kMaxPattern)
    throw ValueError(detail::message(path, std::string(what) + " regex " + quoted(pattern) +
                                               " is " + std::to_string(pattern.size()) +
                                               " bytes long (at most " +
                                               std::to_string(kMaxPattern) + ")"));
  re2::RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(kMaxRegexMemory);
  auto re = std::make_unique<re2::RE2>(pattern, o);
  if (!re->ok())
    throw ValueError(detail::message(
        path, std::string("bad ") + what + " regex " + quoted(pattern) + ": " + re->error()));
  return re;
}

// std::regex_replace's format ($1..$9, $&, $$; other text literal) as an RE2 rewrite (\1, \0).
std::string rewrite_of(const std::string& format, const re2::RE2& re, const std::string& pattern,
                       const std::string& path) {
  auto refuse = [&](const std::string& why) {
    throw ValueError(detail::message(
        path, "rename replacement " + quoted(format) + " for " + quoted(pattern) + ": " + why));
  };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c != '$' || i + 1 == format.size()) {
      out += c;
    } else if (const char n = format[i + 1]; n == '$') {
      out += '$', ++i;
    } else if (n == '&') {
      out += "\\0", ++i;
    } else if (std::isdigit(static_cast<unsigned char>(n))) {
      if (i + 2 < format.size() && std::isdigit(static_cast<unsigned char>(format[i + 2])))
        refuse("groups above $9 are not supported");
      if (n - '0' > re.NumberOfCapturingGroups())
        refuse(std::string("$") + n + " names a group the pattern does not have");
      out += '\\', out += n, ++i;
    } else if (n == '`' || n == '\'') {
      refuse(std::string("$") + n + " is not supported");
    } else {
      out += c;
    }
  }
  return out;
}

// Names given to the rules are bounded (a key of a hostile file can be megabytes long).
constexpr size_t kMaxRegexName = 1024;

void check_name_length(const std::string& name, const std::string& path, const char* what) {
  if (name.size() > kMaxRegexName)
    throw ValueError(detail::message(
        path, std::string(what) + " \"" + name.substr(0, 60) + "...\" is " +
                  std::to_string(name.size()) + " bytes long; rename, include and exclude " +
                  "rules apply to names of at most " + std::to_string(kMaxRegexName) + " bytes"));
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// What load_into needs of a file: its keys in order, each one's dtype and shape without reading
// it, and a read converted to a dtype on a device.
struct Source {
  std::string path;
  std::vector<std::string> keys;
  std::function<std::pair<DType, const Shape*>(const std::string&)> info;
  std::function<Tensor(const std::string&, DType, Device)> get;
  // Where a key's bytes lie in a file as they are (see detail::FileRange), when they do.
  std::function<std::optional<detail::FileRange>(const std::string&)> range;
};

// The file range of `key` when it can be read straight into `target`'s memory: a host tensor,
// contiguous, of the file's dtype and byte count. One positioned read per tensor then replaces
// mapping the file and faulting its pages in, and no second copy is made.
std::optional<detail::FileRange> direct_range(const Source& file, const std::string& key,
                                              const Tensor& target) {
  if (!file.range || ember::detail::is_constant(target) || !target.is_contiguous())
    return std::nullopt;
  BackendImpl* b = backend_for(target.device().backend());
  if (!b || !b->is_host()) return std::nullopt;
  std::optional<detail::FileRange> r = file.range(key);
  if (!r || r->dtype != target.dtype() || r->nbytes != target.nbytes()) return std::nullopt;
  return r;
}

// Reads every range into its target, in file order, after checking that each file still holds
// all of its ranges (so a file cut since it was opened changes nothing; one cut while this runs
// is an IOError with the targets before it written). Queued work on a lazy target's device runs
// first: it may read the old values.
void read_ranges(std::vector<std::tuple<Tensor, detail::FileRange, std::string>>& reads,
                 const std::string& path) {
  // In file order: the disk streams them with its read-ahead (in key order, "layers.10" comes
  // between "layers.1" and "layers.2", and each read would seek).
  std::sort(reads.begin(), reads.end(), [](const auto& a, const auto& b) {
    const detail::FileRange &x = std::get<1>(a), &y = std::get<1>(b);
    return std::pair(x.src.get(), x.offset) < std::pair(y.src.get(), y.offset);
  });
  std::map<const ember::detail::ByteSource*, uint64_t> ends;
  for (const auto& [target, r, key] : reads) {
    uint64_t& end = ends[r.src.get()];
    end = std::max(end, r.offset + r.nbytes);
  }
  std::string error;
  for (const auto& [src, end] : ends)
    if (!src->file.still_holds(end, error)) throw IOError(detail::message(path, error));
  // Per file, in one pass before any read: a stray cached page met by one read's read-ahead
  // would slow the reads of the ranges after it.
  for (size_t i = 0; i < reads.size();) {
    const ember::detail::ByteSource* src = std::get<1>(reads[i]).src.get();
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (; i < reads.size() && std::get<1>(reads[i]).src.get() == src; ++i)
      spans.emplace_back(std::get<1>(reads[i]).offset, std::get<1>(reads[i]).nbytes);
    src->file.drop_stray_pages(spans);
  }
  std::vector<Device> synced;
  for (const auto& [target, r, key] : reads) {
    const Device d = target.device();
    if (d.is_lazy() && std::find(synced.begin(), synced.end(), d) == synced.end()) {
      synchronize(d);
      synced.push_back(d);
    }
  }
  // Pieces of at most 4 MiB, shared out to the threads in runs of equal bytes: each thread reads
  // one stretch of the files in order (from a warm cache the copies out of the page cache are
  // the whole cost, and they run side by side).
  struct Piece {
    size_t read;  // index in `reads`
    uint64_t at, n;
    char* dst;
  };
  constexpr uint64_t kPiece = uint64_t(4) << 20;
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const auto& [target, r, key] = reads[i];
    char* dst = static_cast<char*>(target.raw_data());
    for (uint64_t done = 0; done < r.nbytes; done += kPiece)
      pieces.push_back({i, r.offset + done, std::min(kPiece, r.nbytes - done), dst + done});
    total += r.nbytes;
  }
  const int64_t parts =
      std::max<int64_t>(1, std::min<int64_t>(flex::num_threads(), int64_t(pieces.size())));
  std::vector<size_t> first(size_t(parts) + 1, pieces.size());
  first[0] = 0;
  for (uint64_t seen = 0, part = 1, i = 0; i < pieces.size(); seen += pieces[i++].n)
    while (part < uint64_t(parts) && seen >= total * part / uint64_t(parts)) first[part++] = i;
  std::mutex mu;
  std::optional<std::pair<size_t, std::string>> failed;  // the read and its error
  flex::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    std::string e;
    for (size_t i = first[size_t(p0)]; i < first[size_t(p1)]; ++i) {
      const Piece& pc = pieces[i];
      if (std::get<1>(reads[pc.read]).src->file.read_exact(pc.at, pc.dst, size_t(pc.n), e))
        continue;
      std::lock_guard<std::mutex> lock(mu);
      if (!failed) failed.emplace(pc.read, e);
      return;
    }
  });
  for (const auto& [target, r, key] : reads) target.impl()->storage->version.fetch_add(1);
  if (failed)
    throw IOError(detail::message(
        path, "tensor \"" + std::get<2>(reads[failed->first]) + "\": " + failed->second));
}

LoadReport load_from(const TensorMap& targets, const Source& file, const LoadOptions& o) {
  const std::string& path = file.path;
  std::vector<std::pair<std::unique_ptr<re2::RE2>, std::string>> rules;
  for (const auto& r : o.rename) {
    auto re = compile(r.pattern, path, "rename");
    std::string rewrite = rewrite_of(r.replacement, *re, r.pattern, path);
    rules.emplace_back(std::move(re), std::move(rewrite));
  }
  std::vector<std::unique_ptr<re2::RE2>> inc, exc;
  for (const auto& p : o.include) inc.push_back(compile(p, path, "include"));
  for (const auto& p : o.exclude) exc.push_back(compile(p, path, "exclude"));
  const bool any_rules = !rules.empty() || !inc.empty() || !exc.empty();
  auto selected = [&](const std::string& name) {
    if (any_rules) check_name_length(name, path, "name");
    auto hit = [&](const std::unique_ptr<re2::RE2>& r) { return re2::RE2::PartialMatch(name, *r); };
    return (inc.empty() || std::any_of(inc.begin(), inc.end(), hit)) &&
           std::none_of(exc.begin(), exc.end(), hit);
  };

  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : targets) {
    if (!by_name.emplace(name, &t).second)
      throw ValueError(detail::message(path, "duplicate target name \"" + name + "\""));
    if (!t.defined())
      throw ValueError(detail::message(path, "target \"" + name + "\" is undefined"));
  }

  LoadReport rep;
  std::vector<std::string> mismatched;
  std::map<std::string, std::string> source;  // target name -> file key
  for (const auto& key : file.keys) {
    std::string name = key;
    if (o.map_key) {
      std::optional<std::string> mapped = o.map_key(key);
      if (!mapped) continue;
      name = std::move(*mapped);
    }
    if (any_rules) check_name_length(key, path, "file key");
    for (const auto& [re, rep_with] : rules) {
      re2::RE2::GlobalReplace(&name, *re, rep_with);
      check_name_length(name, path, "renamed key");
    }
    if (!selected(name)) continue;
    std::string shown = name == key ? name : name + " (file key " + key + ")";
    auto [it, fresh] = source.emplace(name, key);
    if (!fresh) {
      mismatched.push_back(name + ": file keys " + it->second + " and " + key + " both map to it");
      continue;
    }
    auto t = by_name.find(name);
    if (t == by_name.end()) {
      rep.unexpected.push_back(shown);
      continue;
    }
    auto [fi_dtype, fi_shape] = file.info(key);
    const Tensor& target = *t->second;
    if (*fi_shape != target.shape()) {
      mismatched.push_back(shown + ": shape " + shape_str(*fi_shape) + " in the file, " +
                           shape_str(target.shape()) + " in the target");
    } else if (fi_dtype != target.dtype() &&
               !(o.cast_floating && is_floating(fi_dtype) && is_floating(target.dtype()))) {
      mismatched.push_back(shown + ": dtype " + std::string(dtype_name(fi_dtype)) +
                           " in the file, " + std::string(dtype_name(target.dtype())) +
                           " in the target");
    }
  }
  for (const auto& [name, t] : targets)
    if (selected(name) && !source.count(name)) rep.missing.push_back(name);

  bool bad_missing = !rep.missing.empty() && !o.allow_partial;
  bool bad_unexpected = !rep.unexpected.empty() && !o.allow_unexpected;
  if (bad_missing || bad_unexpected || !mismatched.empty()) {
    std::string msg = "cannot load into the targets:";
    if (bad_missing) msg += "\n  missing (a target, not in the file): " + join(rep.missing);
    if (bad_unexpected) msg += "\n  unexpected (in the file, no target): " + join(rep.unexpected);
    for (const auto& m : mismatched) msg += "\n  mismatched: " + m;
    throw LoadError(detail::message(path, msg), std::move(rep), std::move(mismatched));
  }

  // All or nothing: every value is taken (and its bytes checked) and every file range checked
  // before any target is written, so a bad BOOL byte or a file that shrank since it was opened
  // changes nothing.
  NoGradGuard no_grad;  // parameters are autodiff leaves: writing them must not be recorded
  std::vector<std::pair<Tensor, Tensor>> writes;
  std::vector<std::tuple<Tensor, detail::FileRange, std::string>> reads;
  for (const auto& [name, key] : source) {
    auto t = by_name.find(name);
    if (t == by_name.end()) continue;
    const Tensor& target = *t->second;
    if (auto r = direct_range(file, key, target))
      reads.emplace_back(target, std::move(*r), key);
    else
      writes.emplace_back(target, file.get(key, target.dtype(), target.device()));
    rep.loaded.push_back(name);
  }
  read_ranges(reads, path);
  for (auto& [target, value] : writes) Tensor(target).copy_(value);
  return rep;
}

Source source_of(const SafetensorsFile& file) {
  return {file.path(), file.keys(),
          [file](const std::string& k) {
            const TensorInfo& i = file.info(k);
            return std::pair<DType, const Shape*>(i.dtype, &i.shape);
          },
          [file](const std::string& k, DType d, Device dev) { return file.get(k, d, dev); },
          [file](const std::string& k) { return detail::RangeAccess::range(file, k); }};
}

Source source_of(const PtValue& value) {
  auto by_key = std::make_shared<std::map<std::string, PtValue>>();
  Source src{value.path(), {}, {}, {}, {}};
  for (auto& [k, v] : value.tensors()) {
    if (!by_key->emplace(k, v).second)
      throw FormatError(detail::message(value.path(), "two tensors are named \"" + k + "\""));
    src.keys.push_back(k);
  }
  src.info = [by_key](const std::string& k) {
    const PtValue& v = by_key->at(k);
    return std::pair<DType, const Shape*>(v.tensor_dtype(), &v.tensor_shape());
  };
  src.get = [by_key](const std::string& k, DType d, Device dev) {
    return by_key->at(k).tensor(d, dev);
  };
  src.range = [by_key](const std::string& k) { return detail::RangeAccess::range(by_key->at(k)); };
  return src;
}

Source source_of(const std::string& path, const LoadOptions& o) {
  // Values not read straight into their target (casts, strided or compressed tensors, other
  // devices) are all taken before any is copied: prefetching starts their reads at once.
  const ReadOptions read{.mmap = o.mmap, .prefetch = true};
  if (is_pytorch_file(path)) return source_of(load_pytorch(path, read).model_state());
  return source_of(SafetensorsFile(path, read));
}

}  // namespace

LoadReport load_into(const TensorMap& targets, const SafetensorsFile& file, const LoadOptions& o) {
  return load_from(targets, source_of(file), o);
}

LoadReport load_into(const TensorMap& targets, const PtValue& value, const LoadOptions& o) {
  return load_from(targets, source_of(value), o);
}

LoadReport load_into(const TensorMap& targets, const std::string& path, const LoadOptions& o) {
  return load_from(targets, source_of(path, o), o);
}

LoadReport load_into(const TensorMap& targets, const std::vector<std::string>& paths,
                     const LoadOptions& o) {
  if (paths.empty()) throw ValueError("[store] load_into: no files given");
  if (paths.size() == 1) return load_into(targets, paths[0], o);
  // One source over all files: each key read from the file that holds it.
  auto parts = std::make_shared<std::vector<Source>>();
  auto owner = std::make_shared<std::map<std::string, size_t>>();
  Source all{paths[0] + " and " + std::to_string(paths.size() - 1) + " more file" +
                 (paths.size() > 2 ? "s" : ""),
             {},
             {},
             {},
             {}};
  for (const auto& p : paths) {
    parts->push_back(source_of(p, o));
    for (const auto& k : parts->back().keys) {
      auto [it, fresh] = owner->emplace(k, parts->size() - 1);
      if (!fresh)
        throw FormatError(
            detail::message(p, "tensor \"" + k + "\" is also in " + (*parts)[it->second].path));
      all.keys.push_back(k);
    }
  }
  all.info = [parts, owner](const std::string& k) { return (*parts)[owner->at(k)].info(k); };
  all.get = [parts, owner](const std::string& k, DType d, Device dev) {
    return (*parts)[owner->at(k)].get(k, d, dev);
  };
  all.range = [parts, owner](const std::string& k) { return (*parts)[owner->at(k)].range(k); };
  return load_from(targets, all, o);
}

}  // namespace ember::store
