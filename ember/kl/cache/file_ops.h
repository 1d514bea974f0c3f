#pragma once
// The few file operations the kernel cache and the toolchains need, with errors as return values
// (a cache that cannot write falls back; it never throws). Internal.
#include <cstddef>
#include <string>
#include <string_view>

namespace ember::kl::cache {

/// Reads all of `path` (at most `limit` bytes, else false) into `*out`.
bool read_whole_file(const std::string& path, std::string* out, size_t limit = size_t(1) << 30);
/// Creates or truncates `path` and writes `bytes`; false (errno set) when any step fails.
bool write_whole_file(const std::string& path, std::string_view bytes);
/// Publishes `bytes` at `path` atomically: a hidden temporary file beside it, renamed over it.
/// Readers see the old file, no file, or the whole new one. No fsync: the cache checksums what
/// it reads, so a file a crash left short is detected and rebuilt, not trusted.
bool publish_file(const std::string& path, std::string_view bytes, std::string* error);
/// A fresh private (0700) directory `<parent>/<prefix>XXXXXX`; "" when it cannot be made.
std::string make_private_dir(const std::string& parent, const std::string& prefix);
/// strerror(errno), for messages.
std::string errno_text();

}  // namespace ember::kl::cache
