#pragma once
// Private helpers of ember/nn: option values printed the way PyTorch's repr prints them.
#include <string>

#include "ember/detail/text.h"
#include "ember/nn/module.h"
#include "ember/ops/creation.h"

namespace ember::nn::fmt {

/// One spatial option expanded to `dims` values as a tuple: "(3, 3)", "(3,)".
inline std::string tuple_str(const Shape& v, size_t dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims; ++i) {
    s += std::to_string(v.size() == 1 ? v[0] : v[i]);
    s += (i + 1 < dims) ? ", " : (dims == 1 ? ",)" : ")");
  }
  return s;
}
/// As given: "2" for one value, "(2, 3)" for several.
inline std::string as_given(const Shape& v) {
  return v.size() == 1 ? std::to_string(v[0]) : tuple_str(v, v.size());
}
inline bool all_equal(const Shape& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}
inline const char* py_bool(bool b) { return b ? "True" : "False"; }
/// Python's float repr for the values options hold: 1.0, 0.25, 1e-05.
inline std::string py_float(double d) {
  std::string s = ember::detail::format_g(d);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
inline TensorOptions topts(const ParamOptions& p) { return {p.dtype, p.device}; }
/// A parameter's shape, checked under the module's name: sizes no tensor may have are the
/// module's error (ValueError naming it), not one of empty().
inline Shape param_shape(const std::string& module, Shape s) {
  check_shape(s, module.c_str());
  return s;
}

}  // namespace ember::nn::fmt
