#pragma once
// The C++ renderer's prelude: vector typedefs and inline helpers, each emitted once per source
// and only when a kernel uses it (private to the C++ renderer).
#include <set>
#include <string>

#include "ember/kl/ir.h"

namespace ember::kl::cpp {

/// C element type of a tag ("f32" -> "float", "u16" -> "unsigned short", ...).
const char* tag_ctype(const std::string& tag);
/// Tag of a dtype's storage ("f16" and "bf16" are "u16"; bool is "u8").
std::string dtype_tag(DType d);
/// Tag of the signed integer type of `bits`.
std::string int_tag(int bits);
/// Tag of the unsigned integer type of `bits`.
std::string uint_tag(int bits);

class Prelude {
 public:
  /// The type for `tag` with `lanes` (a typedef when lanes > 1).
  std::string type(const std::string& tag, int lanes);
  /// The helper computing float maths `op` (Exp .. RoundEven, Pow, Atan2, Fmod, Rem) on a
  /// float dtype with `lanes`.
  std::string math(Op op, DType d, int lanes);
  /// Integer division, remainder and shifts with the IR's defined edge cases.
  std::string int_op(Op op, DType d, int lanes);
  /// Float -> integer conversion by ember/detail/convert.h's rule.
  std::string float_to_int(DType from, DType to, int lanes);
  /// f32 <-> f16/bf16 conversions, bit-exact with ember/half.h.
  std::string to_half(DType half, int lanes);
  std::string from_half(DType half, int lanes);
  /// The source so far: typedefs, then helpers in the order they were first needed.
  std::string text() const { return types_ + funcs_; }

 private:
  bool once(const std::string& name);
  std::string own_math(Op op, int lanes);  // f32 exp, log, tanh, erf
  std::set<std::string> have_;
  std::string types_, funcs_;
};

}  // namespace ember::kl::cpp
