// safetensors write/read: round trips, the atomic write, and every validation error on bad files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>

#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "store/store_test_util.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

// A file with this header text (padded to 8 bytes) and data section.
std::string make_file(const std::string& header, const std::string& data) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + h + data;
}

// Expects opening `bytes` as a file to throw E with a message naming the file and `needle`.
template <class E>
void expect_bad(const std::string& bytes, const std::string& needle) {
  test::ScratchDir dir;
  std::string p = dir.file("bad.safetensors");
  test::write_bytes(p, bytes);
  try {
    store::SafetensorsFile f(p);
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const E& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

const std::string kOne = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

}  // namespace

TEST(Store, RoundTripsEveryDtypeShapeAndMetadata) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  Tensor base = arange(0.0, 12.0).reshape({3, 4});
  store::TensorMap in;
  for (DType d : {kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64})
    in.emplace_back(std::string(dtype_name(d)), base.to(d));
  in.emplace_back("transposed", base.t());  // non-contiguous: written in logical order
  in.emplace_back("scalar", scalar_tensor(-3.5));
  in.emplace_back("empty", zeros({0, 5}));
  store::save_safetensors(p, in, {{"epoch", "3"}});

  store::SafetensorsFile f(p);
  EXPECT_EQ(f.metadata().at("epoch"), "3");
  ASSERT_EQ(f.keys().size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].first);
    EXPECT_EQ(f.keys()[i], in[i].first);  // data order is the order given
    Tensor t = f.get(in[i].first);
    EXPECT_EQ(t.dtype(), in[i].second.dtype());
    EXPECT_EQ(t.shape(), in[i].second.shape());
    EXPECT_EQ(t.to_vector<double>(), in[i].second.to_vector<double>());
  }
  EXPECT_EQ(f.get("float16", kF32).dtype(), kF32);
  EXPECT_EQ(f.get("bfloat16", kF32).to_vector<float>(), base.to_vector<float>());
  EXPECT_EQ(store::load_safetensors(p).size(), in.size());
}

TEST(Store, HeaderIsPaddedToEightBytesAndTheFileIsExact) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"x", ones({3}, {kF16})}});
  std::string b = test::read_bytes(p);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(b.size(), 8 + n + 6);
  EXPECT_EQ(b.substr(8, n).find_last_not_of(' ') + 1,
            std::string(R"({"x":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})").size());
}

TEST(Store, MappingOutlivesTheFileObjectAndTheFileName) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"x", arange(5.0)}});
  std::optional<store::SafetensorsFile> copy;
  {
    store::SafetensorsFile f(p);
    copy = f;
  }
  // A replaced file does not disturb an open one: the rename swaps names, the mapping stays.
  store::save_safetensors(p, {{"x", zeros({5})}});
  EXPECT_EQ(copy->get("x").to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  fs::remove(p);
  Tensor t = copy->get("x");
  t.fill_(9);  // a copy, not a window into the mapping
  EXPECT_EQ(copy->get("x").to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_THROW(copy->get("nope"), store::KeyError);
  EXPECT_TRUE(copy->contains("x"));
}

TEST(Store, FailedWriteLeavesTheOldFileAndNoTemporary) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"x", arange(4.0)}});
  std::string before = test::read_bytes(p);

  // Make the write itself fail half way: a file-size limit turns write() into EFBIG.
  std::string err = test::io_error_with_file_size_limit(
      4096, [&] { store::save_safetensors(p, {{"x", zeros({100000})}}); });
  EXPECT_NE(err.find(p), std::string::npos) << err;

  EXPECT_EQ(test::read_bytes(p), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
  EXPECT_THROW(store::save_safetensors(dir.file("no/such/dir.safetensors"), {{"x", ones({1})}}),
               store::IOError);
}

TEST(Store, SavedFileGetsUmaskPermissionsNotTheTemporaryDefault) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  mode_t mask = umask(022);
  store::save_safetensors(p, {{"x", ones({1})}});
  umask(mask);
  EXPECT_EQ(fs::status(p).permissions(), fs::perms(0644));
}

TEST(Store, RejectsBadNamesBeforeWriting) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  EXPECT_THROW(store::save_safetensors(p, {{"a", ones({1})}, {"a", ones({1})}}), ValueError);
  EXPECT_THROW(store::save_safetensors(p, {{"__metadata__", ones({1})}}), ValueError);
  EXPECT_THROW(store::save_safetensors(p, {{"a", Tensor()}}), ValueError);
  EXPECT_FALSE(fs::exists(p));
}

TEST(Store, ErrorsAreStoreErrorsNamingTheFile) {
  std::string ok = make_file(kOne, std::string(8, '\0'));
  expect_bad<store::TruncatedError>("abc", "truncated file");
  expect_bad<store::TruncatedError>(ok.substr(0, 20), "truncated file");  // inside the header
  expect_bad<store::TruncatedError>(ok.substr(0, ok.size() - 1), "truncated file");  // in data
  expect_bad<store::TruncatedError>("", "truncated file");
  EXPECT_THROW(store::SafetensorsFile("/nonexistent/x.safetensors"), store::IOError);
  static_assert(std::is_base_of_v<store::FormatError, store::TruncatedError>);
  static_assert(std::is_base_of_v<store::StoreError, store::FormatError>);
  static_assert(std::is_base_of_v<Error, store::StoreError>);
}

TEST(Store, ValidatesTheHeader) {
  std::string d8(8, '\0');
  std::string huge(8, '\0');
  uint64_t big = 200'000'000;
  std::memcpy(huge.data(), &big, 8);
  expect_bad<store::FormatError>(huge + std::string(16, ' '), "exceeds the limit");
  expect_bad<store::FormatError>(make_file("[1,2]", ""), "does not start with '{'");
  expect_bad<store::FormatError>(make_file("{\"a\":", ""), "not valid JSON");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8),
      "duplicate key \"a\"");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", d8),
      "unknown dtype \"F8_E4M3\"");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8), "needs 12");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8), "negative");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", d8), "end before");
  expect_bad<store::FormatError>(make_file(R"({"a":{"dtype":"F32","shape":[2]}})", d8),
                                 "data_offsets");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8),
      "(overlap)");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), "(gap)");
  expect_bad<store::FormatError>(make_file(kOne, d8 + "xx"), "2 unused bytes");
  expect_bad<store::FormatError>(make_file(R"({"__metadata__":{"k":1}})", ""), "not a string");
  expect_bad<store::FormatError>(make_file(R"({"a":3})", ""), "not an object");
  expect_bad<store::FormatError>(
      make_file(R"({"a":{"dtype":"I64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                d8),
      "too large");
}

TEST(Store, ChecksBoolBytesWhenMaterialised) {
  test::ScratchDir dir;
  std::string p = dir.file("b.safetensors");
  test::write_bytes(p, make_file(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                                 std::string("\x01\x02", 2)));
  store::SafetensorsFile f(p);
  EXPECT_THROW(f.get("m"), store::FormatError);
}
