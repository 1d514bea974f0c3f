#pragma once
// CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected), the checksum of TensorBoard's records
// (and of iSCSI, ext4, LevelDB). The SSE 4.2 instruction is used when the CPU has it (asked at
// run time), a table otherwise; both give the same values. Internal.
#include <cstddef>
#include <cstdint>

namespace ember::detail {

/// The CRC-32C of `n` bytes, continuing from `crc` (the result for the bytes before; 0 to start):
/// crc32c(ab) == crc32c(b, crc32c(a)).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
/// The same from the table alone (what crc32c uses without the instruction).
uint32_t crc32c_portable(const void* data, size_t n, uint32_t crc = 0);
/// Whether crc32c runs on the CPU's instruction.
bool crc32c_hardware();

/// TensorBoard's (and TFRecord's) masked CRC: rotated right by 15 bits plus a constant, so that a
/// CRC of data holding CRCs is not degenerate.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ember::detail
