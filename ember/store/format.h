#pragma once
// Internal pieces shared by the safetensors reader and writer.
#include <optional>
#include <string>
#include <string_view>

#include "ember/dtype.h"

namespace ember::store::detail {

/// The dtype for a safetensors dtype string, or nothing for strings ember does not know.
std::optional<DType> dtype_from_safetensors(std::string_view s);
/// "<strerror(errno)>" for the current errno.
std::string os_error();
/// "[store] <path>: <msg>", the message of every store error.
std::string message(const std::string& path, const std::string& msg);

}  // namespace ember::store::detail
