// Sizes a file declares are checked against the bytes that exist, and against the limits on
// tensors, before anything is allocated: a tiny file announcing terabytes is an ember error,
// never a std::bad_alloc or an out-of-memory kill.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "ember/data/csv.h"
#include "ember/data/idx.h"
#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "hostile/expect_error.h"
#include "hostile/files_util.h"
#include "store/store_test_util.h"
#include "gzip_util.h"

using namespace ember;

namespace {

std::string idx_bytes(std::vector<uint8_t> head, size_t body = 0) {
  std::string s(head.begin(), head.end());
  s.append(body, '\x01');
  return s;
}

store::SafetensorsFile open_st(const std::string& header, const std::string& data = "") {
  return store::SafetensorsFile::from_bytes(test::st_file(header, data), "x.safetensors");
}

}  // namespace

TEST(HostileFileSizes, SafetensorsShapesAreTensorShapes) {
  // The element count is 0, but the strides of such a tensor would overflow.
  EXPECT_ERROR(
      open_st(
          R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})"),
      store::FormatError, "store");
  EXPECT_ERROR(
      open_st(
          R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})",
          std::string(8, '\0')),
      store::FormatError, "store");
  EXPECT_ERROR(
      open_st(R"({"a":{"dtype":"F64","shape":[18446744073709551615],"data_offsets":[0,0]}})"),
      store::FormatError, "store");
  EXPECT_ERROR(open_st(R"({"a":{"dtype":"F64","shape":[72057594037927937],"data_offsets":[0,0]}})"),
               store::FormatError, "store");
  EXPECT_ERROR(open_st(R"({"a":{"dtype":"F64","shape":[-1],"data_offsets":[0,0]}})"),
               store::FormatError, "store");
  EXPECT_ERROR(open_st(R"({"a":{"dtype":"F64","shape":[1.5],"data_offsets":[0,8]}})", "12345678"),
               store::FormatError, "store");
  // A zero-element tensor of 16 dims is fine.
  auto ok = open_st(
      R"({"a":{"dtype":"F32","shape":[0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,0]}})");
  EXPECT_EQ(ok.get("a").dim(), 16);
}

TEST(HostileFileSizes, SafetensorsRangesAreCheckedAgainstTheFile) {
  // 2^40 doubles announced, 8 bytes present: refused when opened, before anything is allocated.
  EXPECT_ERROR(
      open_st(R"({"a":{"dtype":"F64","shape":[1099511627776],"data_offsets":[0,8796093022208]}})",
              std::string(8, 'x')),
      store::TruncatedError, "store");
  EXPECT_ERROR(
      open_st(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          std::string(12, 'x')),
      store::FormatError, "store");
  std::string huge_len(8, '\xff');
  EXPECT_ERROR(store::SafetensorsFile::from_bytes(huge_len + "{}"), store::FormatError, "store");
  std::string len_past_end(8, '\0');
  len_past_end[0] = 100;
  EXPECT_ERROR(store::SafetensorsFile::from_bytes(len_past_end + "{}"), store::TruncatedError,
               "store");
  test::ScratchDir dir;
  test::write_bytes(dir.file("short"), "short");
  EXPECT_ERROR(store::SafetensorsFile(dir.file("short")), store::TruncatedError, "store");
}

TEST(HostileFileSizes, IdxSizesAreCheckedBeforeAllocating) {
  using data::detail::read_idx_bytes;
  // 2^40 u8 elements announced by a 12-byte file.
  EXPECT_ERROR(read_idx_bytes(idx_bytes({0, 0, 8, 2, 0, 16, 0, 0, 0, 16, 0, 0}), "a.idx"),
               ValueError, "read_idx");
  // 16 GiB of f64 announced, 8 bytes there.
  EXPECT_ERROR(read_idx_bytes(idx_bytes({0, 0, 0x0e, 1, 0x80, 0, 0, 0}, 8), "b.idx"), ValueError,
               "read_idx");
  EXPECT_ERROR(read_idx_bytes(idx_bytes({0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff}),
                              "c.idx"),
               ValueError, "read_idx");
  std::vector<uint8_t> many = {0, 0, 8, 20};
  for (int i = 0; i < 20; ++i) many.insert(many.end(), {0, 0, 0, 1});
  EXPECT_ERROR(read_idx_bytes(idx_bytes(many, 1), "d.idx"), ValueError, "read_idx");
  // A zero dim with huge others: no elements, but the shape itself is beyond the limits.
  EXPECT_ERROR(read_idx_bytes(idx_bytes({0, 0, 8, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff}),
                              "e.idx"),
               ValueError, "read_idx");
  EXPECT_ERROR(read_idx_bytes(idx_bytes({0, 0, 8, 1, 0, 0, 0, 3}, 4), "f.idx"), ValueError,
               "read_idx");  // one byte too many
  EXPECT_EQ(read_idx_bytes(idx_bytes({0, 0, 8, 2, 0, 0, 0, 0, 0, 0, 0, 5}), "g.idx").shape(),
            Shape({0, 5}));
}

TEST(HostileFileSizes, GzipClaimsAreBoundedByTheStream) {
  using data::detail::read_idx_bytes;
  // A 30-byte stream cannot inflate to the 16 GiB its header claims (deflate's ratio is at most
  // 1032:1): refused before allocating.
  std::string claim = idx_bytes({0, 0, 0x0e, 1, 0x80, 0, 0, 0}, 64);
  EXPECT_ERROR(read_idx_bytes(test::gzip(claim), "a.idx.gz"), ValueError, "read_idx");
  // Within the ratio but not there: what decompresses is checked.
  std::string short_body = idx_bytes({0, 0, 8, 1, 0, 0, 0x10, 0}, 100);
  EXPECT_ERROR(read_idx_bytes(test::gzip(short_body), "b.idx.gz"), ValueError, "read_idx");
  std::string good = idx_bytes({0, 0, 8, 1, 0, 0, 0, 3}, 3);
  EXPECT_EQ(read_idx_bytes(test::gzip(good), "c.idx.gz").numel(), 3);
  EXPECT_ERROR(read_idx_bytes(test::gzip(good) + "junk", "d.idx.gz"), ValueError, "read_idx");
  std::string z = test::gzip(good);
  z[z.size() / 2] ^= 0x55;
  EXPECT_ERROR(read_idx_bytes(z, "e.idx.gz"), ValueError, "read_idx");
  EXPECT_ERROR(read_idx_bytes(test::gzip(good).substr(0, test::gzip(good).size() - 6), "f.idx.gz"), ValueError,
               "read_idx");
  // Two gzip members in a row are one stream, as gzip reads them.
  EXPECT_EQ(read_idx_bytes(test::gzip(good.substr(0, 5)) + test::gzip(good.substr(5)), "g.idx.gz").numel(), 3);
  // A highly compressible body that is really there still loads (1 MiB of zeros).
  std::string zeros_body = idx_bytes({0, 0, 8, 1, 0, 0x10, 0, 0});
  zeros_body.append(size_t(1) << 20, '\0');
  EXPECT_EQ(read_idx_bytes(test::gzip(zeros_body), "h.idx.gz").numel(), int64_t(1) << 20);
}

TEST(HostileFileSizes, CsvOddBytes) {
  using data::detail::parse_csv;
  EXPECT_EQ(parse_csv(std::string("1,2\n\0,3\n", 8), "x.csv", {}).size(), 2u);
  EXPECT_ERROR(parse_csv("1,\"2\n", "x.csv", {}), ValueError, "CsvDataset");
  EXPECT_EQ(parse_csv("\r\n\n \t\n", "x.csv", {}).size(), 0u);
  EXPECT_EQ(parse_csv("a,b", "x.csv", {}).size(), 1u);  // no final newline
  test::ScratchDir dir;
  test::write_bytes(dir.file("a.csv"), "1,2\n3\n");
  EXPECT_ERROR(data::CsvTensorDataset(dir.file("a.csv")), ValueError, "CsvDataset");
  test::write_bytes(dir.file("b.csv"), "1,1e999\n");
  EXPECT_ERROR(data::CsvTensorDataset(dir.file("b.csv")), ValueError, "CsvDataset");
}
