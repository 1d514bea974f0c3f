#pragma once
// Text for messages. Internal. Text taken from a file (a name, a field, a JSON value) quoted in an
// error message is cut to a readable length, since the file may hold megabytes of it; numbers are
// formatted with printf's %g rather than a stream (what `os << v` prints, without linking
// iostreams and locales into the WebAssembly module).
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace ember::detail {

/// `s`, or its first n - 3 characters and "..." when it is longer than n.
inline std::string shorten(std::string_view s, size_t n = 200) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n - 3)) + "...";
}

/// `v` as `std::ostream << v` prints it at this precision (printf's %.*g): 0.001, 1e-05, 3.
inline std::string format_g(double v, int precision = 6) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

}  // namespace ember::detail
