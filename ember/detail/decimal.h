#pragma once
// Numbers as text that reads back exactly: the shortest decimal that parses to the same double
// (std::to_chars), "inf"/"-inf" and "nan" for the rest. Shared by the files that store doubles as
// text (state metadata, metric logs, best-weights metadata). Internal.
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>

namespace ember::detail {

inline std::string exact_decimal(double v) {
  if (std::isnan(v)) return "nan";  // not "-nan": the sign of a NaN is not kept
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// The whole of `s` as a number (integers, or doubles including "inf", "-inf" and "nan"); false
/// for empty text, trailing characters or anything else.
template <class T>
bool parse_exact(std::string_view s, T& v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace ember::detail
