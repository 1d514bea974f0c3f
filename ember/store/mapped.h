#pragma once
// Private to the readers: tensors whose storage is a range of a mapped file, and the steps that
// every read shares (the bool byte check, the move to the device asked for).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ember/detail/file.h"
#include "ember/tensor_impl.h"

namespace ember::store {
class SafetensorsFile;
class PtValue;
}  // namespace ember::store

namespace ember::store::detail {

/// Where a tensor's bytes lie in an open file, exactly as the tensor holds them (contiguous,
/// stored in place, not compressed): what load_into reads straight into a target's memory.
struct FileRange {
  std::shared_ptr<const ember::detail::ByteSource> src;  // a file, never bytes in memory
  DType dtype = DType::U8;
  uint64_t offset = 0, nbytes = 0;
};

/// The readers' side of FileRange (a friend of both).
struct RangeAccess {
  /// The range of tensor `key`; nullopt for a file in memory or a BOOL tensor (whose bytes
  /// must be checked before they are handed out).
  static std::optional<FileRange> range(const SafetensorsFile& file, const std::string& key);
  /// The same for a tensor value; nullopt also when it is strided or its storage compressed.
  static std::optional<FileRange> range(const PtValue& value);
};

/// Whether `nbytes` at file offset `offset` may serve as the storage of `dtype` elements in
/// place: some bytes, aligned to the element size (all that ember's kernels assume; torch's zip
/// writer aligns each storage to 64 bytes, safetensors files usually to 8).
bool mappable(uint64_t offset, uint64_t nbytes, DType dtype);

/// A storage of `nbytes` at `offset` of `file` for the host backend `place`, over a mapping of
/// its own that it keeps alive (so the tensors over it outlive the reader and the file handle).
/// Nothing is read or copied; pages are read from the file when first touched. Null, with
/// `error` set, when the range cannot be mapped (or the file no longer holds it).
std::shared_ptr<Storage> mapped_storage(const ember::detail::ReadFile& file, uint64_t offset,
                                        uint64_t nbytes, Device place, std::string& error,
                                        bool prefetch = false);

/// Raises IOError (naming `op` and the file) if `s` lies over a mapping of a file that was cut
/// and then touched: its bytes past the cut now read as zeros (see ember/detail/file.h). Returns
/// at once while no fault has happened (ember::detail::map_faults() is 0).
void check_storage(const Storage& s, const char* op);
/// check_storage for the storage of every defined input.
void check_inputs(std::span<const Tensor> inputs, const char* op);
/// Raises IOError naming `op` and every damaged live mapping, if there is one: for code that
/// saw map_faults() change while it read memory it cannot attribute to one storage.
void check_damaged(const char* op);

/// A tensor with the given geometry over `storage` (elements of `dtype`) on `device`.
Tensor tensor_over(std::shared_ptr<Storage> storage, DType dtype, const Shape& shape,
                   const Shape& strides, int64_t offset, Device device);

/// The index of the first byte of `n` that is neither 0 nor 1 (a bool that C++ may not hold).
std::optional<uint64_t> bad_bool_byte(const void* data, uint64_t n);

/// The host device a reader builds a tensor on before moving it to `place` (a device without
/// layers): `place` itself for host backends, else flex.
Device host_for(Device place);

/// `raw` (on host_for(place)) on `want` (a device, with its layers), converted to `dtype`.
Tensor deliver(Tensor raw, std::optional<DType> dtype, Device want);

}  // namespace ember::store::detail
