#pragma once
// Canonical hashing and the serialised form of kernels. The canonical form leaves out every
// name (kernel, parameters, debug names) and the spec note, so alpha-renamed kernels hash equal
// while any change to types, operands, constants or the signature changes the hash.
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/kl/ir.h"

namespace ember::kl {

/// Bumped whenever the IR or its serialised form changes meaning; part of every cache key.
inline constexpr uint32_t kSchemaVersion = 1;

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  bool operator==(const Hash128&) const = default;
  /// 32 lowercase hex digits, hi first.
  std::string hex() const;
};
/// A 128-bit non-cryptographic hash (MurmurHash3 x64_128).
Hash128 hash128(const void* data, size_t n, uint64_t seed = 0);

/// The kernel without names, as bytes: what canonical_hash() hashes.
std::string canonical_bytes(const Kernel& k);
/// Hash of the canonical form (schema version included).
Hash128 canonical_hash(const Kernel& k);

/// The kernel with names, as bytes: "EMKL", the schema version, the signature and the body.
std::string serialize(const Kernel& k);
/// Parses serialize()'s output exactly; throws ValueError "[kl] ..." on a bad magic, another
/// schema version, truncated or trailing bytes, out-of-range fields, or a kernel that fails
/// verify().
Kernel parse(std::string_view bytes);

}  // namespace ember::kl
