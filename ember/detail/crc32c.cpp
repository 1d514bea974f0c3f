#include "ember/detail/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define EMBER_CRC32C_X86 1
#endif

namespace ember::detail {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // 0x1EDC6F41 bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (c & 1 ? kPoly : 0);
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

#ifdef EMBER_CRC32C_X86
// Compiled for SSE 4.2 on its own; called only when the CPU reports the instruction.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const unsigned char* p, size_t n,
                                                        uint32_t c) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
  }
  c = uint32_t(c64);
  for (; n > 0; --n, ++p) c = _mm_crc32_u8(c, *p);
  return c;
}
#endif

bool detect_hardware() {
#ifdef EMBER_CRC32C_X86
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

}  // namespace

bool crc32c_hardware() {
  static const bool has = detect_hardware();
  return has;
}

uint32_t crc32c_portable(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
#ifdef EMBER_CRC32C_X86
  if (crc32c_hardware()) return ~crc32c_sse42(static_cast<const unsigned char*>(data), n, ~crc);
#endif
  return crc32c_portable(data, n, crc);
}

}  // namespace ember::detail
