#pragma once
// Helpers for the hostile-file tests: safetensors files built byte by byte, deeply nested JSON,
// and a guard that fails a call which blocks instead of hanging the suite.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace ember::test {

/// A safetensors file with this header text (padded to 8 bytes) and data section.
inline std::string st_file(const std::string& header, const std::string& data = "") {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + h + data;
}

/// "[[[...]]]", `depth` levels deep.
inline std::string nested(int depth) {
  return std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
}

/// Runs f on another thread; fails (instead of hanging the suite) when it takes over 10 s.
template <class F>
void within_seconds(F f, const char* what) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  std::thread([f, done]() mutable {
    f();
    done->set_value();
  }).detach();
  if (fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    ADD_FAILURE() << what << ": still blocked after 10 s";
}

}  // namespace ember::test
