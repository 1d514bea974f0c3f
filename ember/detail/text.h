#pragma once
// Text taken from a file (a name, a field, a JSON value) quoted in an error message: cut to a
// readable length, since the file may hold megabytes of it. Internal.
#include <cstddef>
#include <string>
#include <string_view>

namespace ember::detail {

/// `s`, or its first n - 3 characters and "..." when it is longer than n.
inline std::string shorten(std::string_view s, size_t n = 200) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n - 3)) + "...";
}

}  // namespace ember::detail
