#include "ember/error.h"

namespace ember::detail {
namespace {
std::string tag(const char* op, const std::string& msg) { return std::string("[") + op + "] " + msg; }
}  // namespace
void throw_shape(const char* op, const std::string& msg) { throw ShapeError(tag(op, msg)); }
void throw_dtype(const char* op, const std::string& msg) { throw DTypeError(tag(op, msg)); }
void throw_device(const char* op, const std::string& msg) { throw DeviceError(tag(op, msg)); }
void throw_index(const char* op, const std::string& msg) { throw IndexError(tag(op, msg)); }
void throw_value(const char* op, const std::string& msg) { throw ValueError(tag(op, msg)); }
void throw_not_implemented(const char* op, const std::string& msg) {
  throw NotImplementedError(tag(op, msg));
}
}  // namespace ember::detail
