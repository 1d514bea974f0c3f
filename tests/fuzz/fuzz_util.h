#pragma once
// Shared by the fuzz targets: the promise they check is that a reader given any bytes either
// succeeds or throws an ember::Error. Anything else (a foreign exception, a crash, a sanitizer
// report, a hang) is a finding: foreign exceptions abort, so libFuzzer records the input.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <typeinfo>

#include "ember/error.h"

namespace ember::fuzz {

/// Runs f; an ember::Error is an accepted outcome, any other exception aborts.
template <class F>
void run(F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "foreign exception %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "foreign exception of unknown type\n");
    std::abort();
  }
}

/// A scratch file (per process, in $EMBER_FUZZ_TMP, else /dev/shm when it exists, else /tmp)
/// that each input is written to, for the readers that take a path. Memory-backed by default:
/// the writers fsync, and a million runs must not wait on a disk.
inline std::string scratch_path(const char* name) {
  static const std::string prefix = [] {
    const char* dir = std::getenv("EMBER_FUZZ_TMP");
    std::string d = dir && *dir ? dir : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return d + "/ember_fuzz_" + std::to_string(::getpid()) + "_";
  }();
  return prefix + name;
}
inline std::string write_scratch(const char* name, const uint8_t* data, size_t size) {
  std::string p = scratch_path(name);
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return p;
}

}  // namespace ember::fuzz
