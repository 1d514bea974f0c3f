#pragma once
// Data-movement helpers shared by the flex index and layout kernels (private): strided copies
// that only care about an element's width, and checked index loading.
#include <cstdint>
#include <cstring>

#include "ember/backends/flex/loops.h"

namespace ember::flex {

/// Writes src into dst: src broadcasts to dst's shape and is cast when the dtypes differ. Any
/// strides work, including the negative ones flip uses. Parallel above a size threshold.
void copy_into(const Tensor& dst, const Tensor& src);

/// The values of an int32/int64 index tensor as a contiguous int64 tensor of the same shape
/// (no copy when it already is one and needs no wrapping). Every value is checked against
/// [0, n) — [-n, n) with negatives wrapped when `wrap` — before anything is written anywhere;
/// a bad one throws IndexError naming `op`, the value and the extent: "dim `dim` with size n",
/// or, when dim < 0, "a tensor of n elements".
Tensor checked_index(const Tensor& index, int64_t n, bool wrap, const char* op, int64_t dim);

/// A view of `base`'s storage (elements of base's dtype) with the given geometry.
inline Tensor view_of(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  return ember::detail::make_view(base, std::move(shape), std::move(strides), offset);
}

/// `t` viewed as 1-d of size 1 when it is 0-d (gather/scatter treat 0-d operands that way).
Tensor as_1d_if_scalar(const Tensor& t);

}  // namespace ember::flex

namespace ember::flex {
/// A 16-byte element (a complex128) for width dispatch.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};
}  // namespace ember::flex

// Width dispatch: data movement needs only an element's size, so it instantiates five unsigned
// types instead of twelve dtypes. Binds `W` to the type as wide as `dt`'s elements.
#define EMBER_DISPATCH_WIDTH(dt, ...)           \
  switch (::ember::itemsize(dt)) {              \
    case 1: { using W = uint8_t; __VA_ARGS__; break; }  \
    case 2: { using W = uint16_t; __VA_ARGS__; break; } \
    case 4: { using W = uint32_t; __VA_ARGS__; break; } \
    case 16: { using W = ::ember::flex::Bytes16; __VA_ARGS__; break; } \
    default: { using W = uint64_t; __VA_ARGS__; break; } \
  }
