// The safetensors dtype names and the message format shared by the reader and writer.
#include "ember/store/format.h"

#include <cerrno>
#include <cstring>

#include "ember/store/safetensors.h"

namespace ember::store {
namespace {

struct Names {
  DType dtype;
  const char* name;
};
constexpr Names kNames[] = {{kBool, "BOOL"}, {kU8, "U8"},     {kI8, "I8"},   {kI16, "I16"},
                            {kI32, "I32"},   {kI64, "I64"},   {kF16, "F16"}, {kBF16, "BF16"},
                            {kF32, "F32"},   {kF64, "F64"},   {kC64, "C64"},
                            // not in the safetensors spec (it has C64 only): ember's own name
                            {kC128, "C128"}};

}  // namespace

std::string_view safetensors_dtype_name(DType d) {
  for (const auto& n : kNames)
    if (n.dtype == d) return n.name;
  return "?";
}

std::optional<DType> detail::dtype_from_safetensors(std::string_view s) {
  for (const auto& n : kNames)
    if (s == n.name) return n.dtype;
  return std::nullopt;
}

std::string detail::os_error() { return std::strerror(errno); }

std::string detail::message(const std::string& path, const std::string& msg) {
  return "[store] " + path + ": " + msg;
}

}  // namespace ember::store
