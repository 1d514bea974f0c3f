#pragma once
// The CUDA renderer's device helpers, each emitted once per source and only when a kernel uses
// it (private to the CUDA renderer).
#include <set>
#include <string>

#include "ember/kl/ir.h"

namespace ember::kl::cuda {

/// The C type of a value of dtype d (f16/bf16: their 16 bits; bool: bool).
const char* ctype(DType d);
/// The C type of d in memory (bool is a byte 0/1).
const char* mem_ctype(DType d);
/// The unsigned type integer arithmetic of d wraps in.
const char* uctype(DType d);

class Helpers {
 public:
  std::string to_half(DType half);    // f32 -> f16/bf16 bits, as ember/half.h rounds
  std::string from_half(DType half);  // f16/bf16 bits -> f32
  std::string bitcast();              // kl_bitcast<To>(from)
  /// Integer Div/Rem/Shl/Shr with the IR's edge cases (zero divisors, INT_MIN / -1, counts).
  std::string int_op(Op op, DType d);
  /// Float -> integer by ember/detail/convert.h's rule (returns int or long long).
  std::string float_to_int(DType from, DType to);
  /// The CUDA maths function for op on f32 or f64 (built into NVRTC, no header).
  static std::string math(Op op, DType d);
  const std::string& text() const { return text_; }

 private:
  bool once(const std::string& name);
  std::set<std::string> have_;
  std::string text_;
};

}  // namespace ember::kl::cuda
