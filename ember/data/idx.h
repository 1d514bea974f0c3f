#pragma once
// The IDX format of MNIST and Fashion-MNIST: a big-endian header (two zero bytes, a dtype code,
// the number of dims, one u32 per dim) followed by the elements, row-major and big-endian.
#include <string>

#include "ember/tensor.h"

namespace ember::data {

/// Reads an IDX file (plain or gzip'd; gzip is detected from the content, not the name) into a
/// host (flex) tensor of the stored dtype and shape: u8 for images and labels. Throws ValueError
/// naming the file for a missing file, a bad magic, a truncated header or body, or trailing data.
Tensor read_idx(const std::string& path);

/// Writes `t` (u8, i8, i16, i32, f32 or f64) as an uncompressed IDX file (for tests and tools).
void write_idx(const std::string& path, const Tensor& t);

}  // namespace ember::data
