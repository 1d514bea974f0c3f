#pragma once
// ember's exception hierarchy: every user-facing failure throws one of these, tagged with the op.
#include <stdexcept>
#include <string>

namespace ember {

/// Base of every error ember throws; what() reads "[op] what was expected, what was found".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Shapes that do not fit the op (mismatched dims, bad reshape, out-of-range dim).
class ShapeError : public Error { using Error::Error; };
/// A dtype the op does not accept, or a failed checked cast.
class DTypeError : public Error { using Error::Error; };
/// Inputs on different devices, or a device that was not built or has no hardware.
class DeviceError : public Error { using Error::Error; };
/// An index out of range (gather, index_select, embedding, item on a non-scalar, ...).
class IndexError : public Error { using Error::Error; };
/// A bad argument value (negative size, step 0, unknown mode string, ...).
class ValueError : public Error { using Error::Error; };
/// An op with no kernel on a backend and no decomposition to fall back to.
class NotImplementedError : public Error { using Error::Error; };
/// A device allocation that failed after the allocator's cache was freed and the allocation
/// retried; the message names the op, the bytes requested and the bytes free. The process can
/// go on (free tensors, or use smaller ones).
class OutOfMemory : public Error { using Error::Error; };

namespace detail {
[[noreturn]] void throw_shape(const char* op, const std::string& msg);
[[noreturn]] void throw_dtype(const char* op, const std::string& msg);
[[noreturn]] void throw_device(const char* op, const std::string& msg);
[[noreturn]] void throw_index(const char* op, const std::string& msg);
[[noreturn]] void throw_value(const char* op, const std::string& msg);
[[noreturn]] void throw_not_implemented(const char* op, const std::string& msg);
}  // namespace detail

}  // namespace ember

/// Throws `Kind` with the message "[op] msg" when `cond` is false.
#define EMBER_CHECK(cond, Kind, op, msg)                                  \
  do {                                                                    \
    if (!(cond)) throw ::ember::Kind(std::string("[") + (op) + "] " + (msg)); \
  } while (0)
