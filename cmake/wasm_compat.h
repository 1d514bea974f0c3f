// Forced into the WebAssembly build's files that need it (cmake/wasm.cmake): Debian's
// emscripten 3.1.6 ships a libc++ without std::bit_cast, which clang's builtin provides.
#pragma once
#include <bit>
#if !defined(__cpp_lib_bit_cast)
namespace std {
template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif
