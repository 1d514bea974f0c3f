#pragma once
// The IDX format of MNIST and Fashion-MNIST: a big-endian header (two zero bytes, a dtype code,
// the number of dims, one u32 per dim) followed by the elements, row-major and big-endian.
#include <string>
#include <string_view>

#include "ember/tensor.h"

namespace ember::data {

/// Reads an IDX file (plain or gzip'd; gzip is detected from the content, not the name) into a
/// host (flex) tensor of the stored dtype and shape: u8 for images and labels. Throws ValueError
/// naming the file for a missing or non-regular file, a bad magic, more than 16 dims or 2^56
/// elements, a truncated header or body, trailing data, or a corrupt gzip stream. Declared sizes
/// are checked against the file before the body is allocated.
Tensor read_idx(const std::string& path);

/// Writes `t` (u8, i8, i16, i32, f32 or f64) as an uncompressed IDX file (for tests and tools),
/// atomically. Sizes beyond 2^32 - 1 are a ValueError (IDX stores them in 32 bits).
void write_idx(const std::string& path, const Tensor& t);

namespace detail {
/// read_idx of bytes in memory (`name` stands for the path in messages); for fuzzing and tests.
Tensor read_idx_bytes(std::string_view bytes, const std::string& name);
}  // namespace detail

}  // namespace ember::data
