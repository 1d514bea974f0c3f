// Mapped loading: tensors whose storage is a private mapping of the file give the same values as
// the read path for every dtype and layout, share one storage per torch storage, outlive their
// reader and file, never write back to the file, and a file cut before or after opening is an
// error (never a SIGBUS). Also: several files loaded as one change nothing on error.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "ember/store/pytorch.h"
#include "store/store_test_util.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

const std::string kTorchDir = std::string(EMBER_TEST_DATA) + "/store/pytorch/";

// Whether `t`'s bytes lie in a mapping of the file `path` (Linux's /proc/self/maps).
bool mapped_from(const Tensor& t, const std::string& path) {
  const auto p = reinterpret_cast<uintptr_t>(t.raw_data());
  const std::string want = fs::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos || line.substr(slash) != want) continue;
    uintptr_t lo = 0, hi = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi);
    if (p >= lo && p < hi) return true;
  }
  return false;
}

// Every dtype ember has, with values that exercise each one's bits.
store::TensorMap every_dtype() {
  Tensor x = arange(-6.0, 6.0).reshape({3, 4}) * 1.37;
  // Widest first, so that in a safetensors file (header padded to 8 bytes) each is aligned.
  return {{"f64", x.to(kF64) / 3.0},
          {"i64", (arange(0.0, 5.0) * 1e9).to(kI64)},
          {"f32", x},
          {"scalar", scalar_tensor(2.5)},
          {"i32", arange(-3.0, 3.0).to(kI32)},
          {"f16", x.to(kF16)},
          {"bf16", x.to(kBF16)},
          {"i16", arange(-3.0, 3.0).to(kI16)},
          {"i8", arange(-3.0, 3.0).to(kI8)},
          {"u8", arange(250.0, 256.0).to(kU8)},
          {"bool", tensor({1, 0, 1, 1, 0}).to(kBool)},
          {"empty", zeros({0, 3})}};
}

// Bit-identical: same dtype, shape and bytes (NaN-safe, -0.0 told from 0.0).
void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  Tensor ca = a.contiguous(), cb = b.contiguous();
  size_t n = size_t(a.numel()) * itemsize(a.dtype());
  EXPECT_EQ(std::memcmp(ca.raw_data(), cb.raw_data(), n), 0);
}

struct EnvGuard {
  explicit EnvGuard(const char* value) { setenv("EMBER_MMAP", value, 1); }
  ~EnvGuard() { unsetenv("EMBER_MMAP"); }
};

}  // namespace

TEST(MappedLoad, SafetensorsBitIdenticalToReadsForEveryDtype) {
  test::ScratchDir dir;
  const std::string path = dir.file("all.safetensors");
  store::TensorMap sd = every_dtype();
  store::save_safetensors(path, sd);
  store::SafetensorsFile mapped(path), read(path, {.mmap = false}),
      ahead(path, {.prefetch = true});
  for (const auto& [k, t] : sd) {
    Tensor m = mapped.get(k), r = read.get(k);
    expect_same_bits(ahead.get(k), t, k + " prefetched");
    expect_same_bits(m, t, k + " mapped");
    expect_same_bits(r, t, k + " read");
    if (t.numel() > 0) {
      EXPECT_TRUE(mapped_from(m, path)) << k;
      EXPECT_FALSE(mapped_from(r, path)) << k;
    }
    // A conversion or another device copies from the mapping, once.
    expect_same_bits(mapped.get(k, kF64), read.get(k, kF64), k + " as f64");
    expect_same_bits(mapped.get(k, {}, Device::cpu()), r, k + " on cpu");
  }
  {
    EnvGuard off("0");
    Tensor r = store::SafetensorsFile(path).get("f32");
    EXPECT_FALSE(mapped_from(r, path));
    expect_same_bits(r, sd[2].second, "EMBER_MMAP=0");
  }
}

TEST(MappedLoad, PyTorchBitIdenticalToReadsForEveryDtypeAndLayout) {
  test::ScratchDir dir;
  const std::string path = dir.file("all.pt");
  store::save_pytorch(path, every_dtype());
  std::vector<std::string> files = {path};
  for (const char* f : {"dtypes.pt", "dtypes_legacy.pt", "views.pt", "views_legacy.pt",
                        "views_deflated.pt", "nested.pt", "nested_legacy.pt"})
    files.push_back(kTorchDir + f);
  for (const auto& f : files) {
    store::PtValue mapped = store::load_pytorch(f), read = store::load_pytorch(f, {.mmap = false});
    auto mt = mapped.tensors(), rt = read.tensors();
    ASSERT_EQ(mt.size(), rt.size());
    for (size_t i = 0; i < mt.size(); ++i) {
      Tensor m = mt[i].second.tensor(), r = rt[i].second.tensor();
      expect_same_bits(m, r, f + " " + mt[i].first);
      EXPECT_EQ(m.strides(), r.strides()) << f << " " << mt[i].first;
      // Zip entries are 64-byte aligned and mapped unless deflated; a legacy file's storages
      // follow 8-byte counts at any offset, and are mapped where that is aligned.
      const bool deflated = f.find("deflated") != std::string::npos,
                 legacy = f.find("legacy") != std::string::npos;
      if (m.numel() > 0 && !legacy)
        EXPECT_EQ(mapped_from(m, f), !deflated) << f << " " << mt[i].first;
      EXPECT_FALSE(mapped_from(r, f));
    }
  }
}

TEST(MappedLoad, ViewsOfOneStorageShareIt) {
  // views.pt: base (24 floats) and slice, transposed, strided and scalar views of it.
  for (bool mmap : {true, false}) {
    SCOPED_TRACE(mmap);
    store::PtValue r = store::load_pytorch(kTorchDir + "views.pt", {.mmap = mmap});
    Tensor base = r.at("base").tensor(), tr = r.at("transposed").tensor(),
           strided = r.at("strided").tensor(), slice = r.at("slice").tensor();
    EXPECT_TRUE(base.is_alias_of(tr));
    EXPECT_TRUE(base.is_alias_of(strided));
    EXPECT_TRUE(base.is_alias_of(slice));
    EXPECT_FALSE(tr.is_contiguous());
    EXPECT_EQ(tr.strides(), Shape({1, 6}));
    EXPECT_EQ(strided.strides(), Shape({6, 2}));
    EXPECT_TRUE(equal(tr, base.reshape({4, 6}).t()));
    EXPECT_TRUE(equal(strided, base.reshape({4, 6}).slice(0, 1, 4).slice(1, 0, 6, 2)));
    EXPECT_TRUE(equal(slice, base.slice(0, 4, 10)));
    // As with torch.load, a write through one view shows in the others (and not in the file).
    NoGradGuard ng;
    slice.fill_(7.0);
    EXPECT_EQ(base.select(0, 5).item<float>(), 7.0f);
    EXPECT_EQ(r.at("slice").tensor().select(0, 0).item<float>(), 7.0f);  // still shared
  }
  EXPECT_NE(store::load_pytorch(kTorchDir + "views.pt").at("base").tensor().select(0, 5)
                .item<float>(), 7.0f);
}

TEST(MappedLoad, TensorsOutliveTheReaderAndTheFile) {
  test::ScratchDir dir;
  const std::string st = dir.file("w.safetensors"), pt = dir.file("w.pt");
  Tensor w = arange(0.0, 1000.0).reshape({10, 100});
  store::save_safetensors(st, {{"w", w}});
  store::save_pytorch(pt, {{"w", w}});
  Tensor a = store::SafetensorsFile(st).get("w");
  Tensor b = store::load_pytorch(pt).at("w").tensor();
  store::TensorMap all = store::load_safetensors(st);
  fs::remove(st);  // the mapping keeps the file's pages
  fs::remove(pt);
  EXPECT_TRUE(equal(a, w));
  EXPECT_TRUE(equal(b, w));
  EXPECT_TRUE(equal(all[0].second, w));
  EXPECT_EQ(sum(b).item<float>(), 499500.0f);
}

TEST(MappedLoad, WritingIntoALoadedTensorLeavesTheFileUnchanged) {
  test::ScratchDir dir;
  const std::string st = dir.file("w.safetensors"), pt = dir.file("w.pt");
  Tensor w = arange(0.0, 64.0);
  store::save_safetensors(st, {{"w", w}});
  store::save_pytorch(pt, {{"w", w}});
  const std::string st_bytes = test::read_bytes(st), pt_bytes = test::read_bytes(pt);
  {
    store::SafetensorsFile f(st);
    Tensor a = f.get("w"), b = store::load_pytorch(pt).at("w").tensor();
    ASSERT_TRUE(mapped_from(a, st));
    ASSERT_TRUE(mapped_from(b, pt));
    a.fill_(-1.0);
    b += 100.0;
    EXPECT_EQ(a.select(0, 3).item<float>(), -1.0f);
    EXPECT_EQ(b.select(0, 3).item<float>(), 103.0f);
    EXPECT_TRUE(equal(f.get("w"), w));  // a fresh tensor reads the file again
  }
  EXPECT_EQ(test::read_bytes(st), st_bytes);
  EXPECT_EQ(test::read_bytes(pt), pt_bytes);
  EXPECT_TRUE(equal(store::load_safetensors(st)[0].second, w));
}

TEST(MappedLoad, LoadIntoCopiesOnceAndMatchesTheReadPath) {
  test::ScratchDir dir;
  const std::string pt = dir.file("m.pt");
  Tensor w = arange(0.0, 12.0).reshape({3, 4}), b = tensor({1.5, -2.0, 3.0}).to(kF32);
  store::save_pytorch(pt, {{"fc.weight", w.to(kBF16)}, {"fc.bias", b}});
  for (bool mmap : {true, false}) {
    Tensor tw = zeros({3, 4}), tb = zeros({3});
    store::load_into({{"fc.weight", tw}, {"fc.bias", tb}}, pt, {.mmap = mmap});
    EXPECT_TRUE(equal(tw, w));  // bf16 in the file, cast while copying
    EXPECT_TRUE(equal(tb, b));
    EXPECT_FALSE(mapped_from(tb, pt));  // the target keeps its own storage
  }
}

// load_into reads tensors stored as they are straight into matching targets (every dtype but
// bool, .pt and safetensors, a .pt view at an offset into its storage), and copies the rest (a
// cast, a strided target, bools): the values equal the read path's either way.
TEST(MappedLoad, LoadIntoReadsStraightIntoTargetsOrCopies) {
  test::ScratchDir dir;
  store::TensorMap sd = every_dtype();
  const std::string st = dir.file("w.safetensors"), pt = dir.file("w.pt");
  store::save_safetensors(st, sd);
  Tensor base = arange(0.0, 20.0).to(kF32);
  sd.emplace_back("view", base.narrow(0, 4, 12).reshape({3, 4}));  // offset into its storage
  sd.emplace_back("strided", arange(0.0, 6.0).reshape({2, 3}).t());
  store::save_pytorch(pt, sd);
  for (const auto& path : {st, pt}) {
    SCOPED_TRACE(path);
    const store::TensorMap want = path == st ? store::load_safetensors(path, {.mmap = false})
                                             : store::load_pytorch(path, {.mmap = false})
                                                   .state_dict();
    store::TensorMap targets;
    for (const auto& [k, v] : want) {
      if (k == "f32") targets.emplace_back(k, zeros({3, 4}, {.dtype = kF64}));  // a cast
      else if (k == "i32")  // a strided target
        targets.emplace_back(k, zeros({12}, {.dtype = kI32}).slice(0, 0, 12, 2));
      else targets.emplace_back(k, zeros_like(v));
    }
    store::load_into(targets, path);
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto& [k, t] = targets[i];
      if (k == "f32") EXPECT_TRUE(equal(t, want[i].second.to(kF64))) << k;
      else expect_same_bits(t, want[i].second, k);
    }
  }
}

// Tensors larger than a read's piece (4 MiB) are read in several, shared among the threads.
TEST(MappedLoad, LoadIntoReadsLargeTensorsInPieces) {
  test::ScratchDir dir;
  const store::TensorMap sd = {{"small", arange(0.0, 10.0)},
                               {"big", arange(0.0, 1500001.0).to(kF32)},
                               {"last", arange(0.0, 3.0).to(kI64)}};
  for (const auto& path : {dir.file("w.safetensors"), dir.file("w.pt")}) {
    SCOPED_TRACE(path);
    if (path.size() > 3 && path.substr(path.size() - 3) == ".pt") store::save_pytorch(path, sd);
    else store::save_safetensors(path, sd);
    store::TensorMap targets;
    for (const auto& [k, v] : sd) targets.emplace_back(k, zeros_like(v));
    store::load_into(targets, path);
    for (size_t i = 0; i < sd.size(); ++i)
      expect_same_bits(targets[i].second, sd[i].second, sd[i].first);
  }
}

// Targets on a lazy device: queued work that reads a target runs before the file's bytes are
// read into it.
TEST(MappedLoad, LoadIntoALazyTargetKeepsQueuedReadsOfItsOldValues) {
  test::ScratchDir dir;
  const std::string st = dir.file("w.safetensors");
  store::save_safetensors(st, {{"w", full({64, 64}, 3.0)}});
  DeviceGuard on(Device::cpu());
  Tensor w = zeros({64, 64});
  Tensor before = w + 1.0;  // queued on a lazy device
  store::load_into({{"w", w}}, st);
  EXPECT_TRUE(equal(before, full({64, 64}, 1.0)));
  EXPECT_TRUE(equal(w, full({64, 64}, 3.0)));
}

// A file cut after it was opened and before load_into reads it changes no target.
TEST(MappedLoad, LoadIntoFromACutFileChangesNothing) {
  test::ScratchDir dir;
  const std::string st = dir.file("w.safetensors"), pt = dir.file("w.pt");
  const store::TensorMap sd = {{"a", full({256}, 1.0)}, {"b", full({256}, 2.0)}};
  store::save_safetensors(st, sd);
  store::save_pytorch(pt, sd);
  store::SafetensorsFile f(st);
  store::PtValue v = store::load_pytorch(pt);
  fs::resize_file(st, fs::file_size(st) - 16);
  fs::resize_file(pt, 1200);
  for (int which = 0; which < 2; ++which) {
    Tensor a = zeros({256}), b = zeros({256});
    if (which == 0) EXPECT_THROW(store::load_into({{"a", a}, {"b", b}}, f), store::IOError);
    else EXPECT_THROW(store::load_into({{"a", a}, {"b", b}}, v), store::IOError);
    EXPECT_TRUE(equal(a, zeros({256})));
    EXPECT_TRUE(equal(b, zeros({256})));
  }
}

TEST(MappedLoad, UnalignedSafetensorsEntriesAreRead) {
  test::ScratchDir dir;
  // A 1-byte U8 tensor first puts the F32 tensor at an odd offset, which is read, not mapped.
  std::string header =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  while ((8 + header.size()) % 8) header += ' ';
  uint64_t n = header.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  float vals[2] = {1.25f, -3.5f};
  bytes += header + std::string(1, char(42)) + std::string(reinterpret_cast<char*>(vals), 8);
  const std::string path = dir.file("odd.safetensors");
  test::write_bytes(path, bytes);
  store::SafetensorsFile f(path);
  Tensor a = f.get("a"), b = f.get("b");
  EXPECT_TRUE(mapped_from(a, path));
  EXPECT_FALSE(mapped_from(b, path));
  EXPECT_EQ(a.item<uint8_t>(), 42);
  EXPECT_TRUE(equal(b, tensor({1.25, -3.5}).to(kF32)));
}

TEST(MappedLoad, CutFilesAreErrorsNotSignals) {
  test::ScratchDir dir;
  const std::string st = dir.file("w.safetensors"), pt = dir.file("w.pt");
  const std::string cut = dir.file("cut.bin");
  store::TensorMap sd = every_dtype();
  store::save_safetensors(st, sd);
  store::save_pytorch(pt, sd);
  // Cut before opening: every length is refused when opened or when a tensor is taken.
  for (const auto& src : {st, pt}) {
    const std::string bytes = test::read_bytes(src);
    for (size_t n = 0; n < bytes.size(); n += 37) {
      test::write_bytes(cut, bytes.substr(0, n));
      try {
        if (src == st) {
          store::load_safetensors(cut);
        } else {
          for (auto& [k, v] : store::load_pytorch(cut).tensors()) (void)sum(v.tensor(kF64));
        }
        ADD_FAILURE() << src << " cut at " << n << " loaded";
      } catch (const store::StoreError&) {
      }
    }
  }
  // Cut after opening (mapped): the tensors not yet taken are an IOError, not a SIGBUS.
  store::SafetensorsFile f(st);
  store::PtValue v = store::load_pytorch(pt);
  fs::resize_file(st, 100);
  fs::resize_file(pt, 100);
  EXPECT_THROW(f.get("f64"), store::IOError);
  EXPECT_THROW(v.at("f64").tensor(), store::IOError);
  try {
    f.get("i64");
    FAIL();
  } catch (const store::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
  }
}

// Another process cuts the file while tensors over it are mapped: the pages past the new end
// would raise SIGBUS when touched. Each read of them (an op, lazy or eager, a host read, a save)
// is an IOError naming the file, then and every later time; the process goes on.
TEST(MappedLoad, FileCutWhileMappedIsAnIOErrorForEveryRead) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.safetensors"), saved = dir.file("saved.safetensors");
  // Four pages of floats each, so that every tensor has whole pages past the cut.
  auto big = [](double from) { return arange(from, from + 4 * 1024.0).to(kF32); };
  store::save_safetensors(path, {{"a", big(0)}, {"b", big(1)}, {"c", big(2)}, {"d", big(3)}});
  store::save_safetensors(saved, {{"old", tensor({1.0, 2.0})}});
  const std::string old_bytes = test::read_bytes(saved);
  store::TensorMap m = store::load_safetensors(path);
  auto at = [&](const std::string& k) {
    for (auto& [name, t] : m)
      if (name == k) return t;
    throw std::logic_error(k);
  };
  store::SafetensorsFile file(path);
  Tensor d = file.get("d", std::nullopt, Device::flex());  // eager, on flex
  ASSERT_TRUE(mapped_from(at("a"), path));
  fs::resize_file(path, 64);
  auto expect_io = [&](const std::function<void()>& read, const std::string& op) {
    try {
      read();
      ADD_FAILURE() << op << ": no error";
    } catch (const store::IOError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("w.safetensors"), std::string::npos) << what;
      EXPECT_NE(what.find("was cut"), std::string::npos) << what;
      if (!op.empty()) EXPECT_NE(what.find("[" + op + "]"), std::string::npos) << what;
    }
  };
  // An op on the default (lazy) device: the error comes where the result is read.
  expect_io([&] { (void)at("a").sum().item<double>(); }, "");
  // The same tensor again: refused when the op is called, under the op's name.
  expect_io([&] { (void)(at("a") * 2.0); }, "mul");
  // An eager op on flex, touching the cut pages for the first time.
  expect_io([&] { (void)d.sum().item<double>(); }, "");
  // A host read touching them first.
  expect_io([&] { (void)at("b").to_vector<float>(); }, "to_vector");
  expect_io([&] { (void)at("b").raw_data(); }, "data_ptr");
  // A save reading them first leaves the file it would replace as it was.
  expect_io([&] { store::save_safetensors(saved, {{"c", at("c")}}); }, "");
  EXPECT_EQ(test::read_bytes(saved), old_bytes);
  // Everything else goes on working.
  EXPECT_TRUE(equal(tensor({1.0, 2.0}) + 1.0, tensor({2.0, 3.0})));
  EXPECT_TRUE(equal(store::load_safetensors(saved).front().second.to(kF64), tensor({1.0, 2.0}).to(kF64)));
}

// A SIGBUS that is not a fault on a mapped file still ends the process, as it would without
// ember's handler (by SIGBUS; under a sanitizer, whose handler ember chains to, by its abort).
TEST(MappedLoadDeathTest, OtherSigbusStillKills) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.safetensors");
  store::save_safetensors(path, {{"a", arange(0.0, 4096.0).to(kF32)}});
  EXPECT_EXIT(
      {
        store::TensorMap m = store::load_safetensors(path);  // installs the handler
        std::raise(SIGBUS);
      },
      [](int status) { return WIFSIGNALED(status); }, "");
}

TEST(MappedLoad, SeveralFilesLoadAsOneAndChangeNothingOnError) {
  test::ScratchDir dir;
  const std::string a = dir.file("a.safetensors"), b = dir.file("b.pt"),
                    c = dir.file("c.safetensors");
  store::save_safetensors(a, {{"l1.weight", full({2, 2}, 1.0)}, {"l1.bias", full({2}, 1.0)}});
  store::save_pytorch(b, {{"l2.weight", full({2, 2}, 2.0)}});
  store::save_safetensors(c, {{"l2.bias", full({2}, 3.0)}});
  auto fresh = [] {
    return store::TensorMap{{"l1.weight", zeros({2, 2})}, {"l1.bias", zeros({2})},
                            {"l2.weight", zeros({2, 2})}, {"l2.bias", zeros({2})}};
  };
  auto untouched = [](const store::TensorMap& m) {
    for (const auto& [k, t] : m)
      if (!equal(t, zeros_like(t))) return false;
    return true;
  };
  store::TensorMap ok = fresh();
  store::LoadReport r = store::load_into(ok, {a, b, c});
  EXPECT_EQ(r.loaded.size(), 4u);
  EXPECT_EQ(sum(ok[2].second).item<float>(), 8.0f);
  EXPECT_EQ(sum(ok[3].second).item<float>(), 6.0f);

  // The last file mis-shaped, damaged, or repeating a key: nothing is written.
  store::save_safetensors(c, {{"l2.bias", full({3}, 3.0)}});
  store::TensorMap t1 = fresh();
  try {
    store::load_into(t1, {a, b, c});
    FAIL();
  } catch (const store::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("l2.bias: shape [3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("and 2 more files"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(untouched(t1));
  std::string bytes = test::read_bytes(a);
  test::write_bytes(c, bytes.substr(0, bytes.size() - 3));
  store::TensorMap t2 = fresh();
  EXPECT_THROW(store::load_into(t2, {a, b, c}), store::TruncatedError);
  EXPECT_TRUE(untouched(t2));
  store::save_safetensors(c, {{"l2.bias", full({2}, 3.0)}, {"l1.bias", full({2}, 3.0)}});
  store::TensorMap t3 = fresh();
  EXPECT_THROW(store::load_into(t3, {a, b, c}), store::FormatError);
  EXPECT_TRUE(untouched(t3));
  // Keys mapped first (nullopt drops one), then renamed.
  store::TensorMap t4 = fresh();
  store::save_safetensors(c, {{"l2.bias", full({2}, 3.0)}, {"rotary.inv_freq", ones({4})}});
  store::load_into(t4, {a, b, c}, {.map_key = [](const std::string& k) -> std::optional<std::string> {
                                     if (k == "rotary.inv_freq") return std::nullopt;
                                     return k;
                                   }});
  EXPECT_EQ(sum(t4[3].second).item<float>(), 6.0f);
}
