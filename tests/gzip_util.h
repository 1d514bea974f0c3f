#pragma once
// A gzip stream of some bytes (zlib, level 9), for the tests and the fuzzers' seed corpora that
// need gzip'd IDX files. Header-only: the user links zlib.
#include <zlib.h>

#include <string>

namespace ember::test {

inline std::string gzip(const std::string& raw) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, uLong(raw.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = uInt(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace ember::test
