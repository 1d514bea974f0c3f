#pragma once
// The argument-pack ABI between the host and every rendered kernel, and the host-side packer.
//
// A kernel is entered as `extern "C" void NAME(const void* args, int64_t begin, int64_t end)`
// over the work items [begin, end) (ember's thread pool splits [0, items) into such ranges;
// each template says what an item is). `args` points at one 8-byte slot per parameter, in the
// kernel's order:
//   1. buffers: the element pointer of each (for a list buffer: a pointer to an array of element
//      pointers, one per tensor of the list);
//   2. scalar parameters: the value in its dtype's representation in the slot's low bytes
//      (f16/bf16 as their 16 bits, bool as one byte 0/1), the rest zero;
//   3. index parameters: int64 (extents, strides, offsets; strides in elements).
#include <cstdint>
#include <vector>

#include "ember/kl/ir.h"
#include "ember/kl/toolchain.h"  // KernelFn
#include "ember/scalar.h"

namespace ember::kl {

class ArgPack {
 public:
  ArgPack() = default;
  explicit ArgPack(const Kernel& k);
  /// Buffer i's element pointer (or, for a list buffer, the array of element pointers).
  ArgPack& buffer(int i, const void* p);
  /// Scalar parameter i, converted to its dtype as a Cast does (ir.h).
  ArgPack& scalar(int i, Scalar v);
  ArgPack& index(int i, int64_t v);
  const void* data() const { return slots_.data(); }
  size_t slots() const { return slots_.size(); }
  int num_buffers() const { return nb_; }
  int num_scalars() const { return int(scalar_types_.size()); }
  int num_indices() const { return ni_; }

 private:
  std::vector<uint64_t> slots_;
  std::vector<DType> scalar_types_;
  int nb_ = 0, ni_ = 0;
};

/// The bits a scalar parameter of dtype d holds for value v (as ArgPack::scalar stores them).
uint64_t scalar_slot(DType d, Scalar v);

}  // namespace ember::kl
