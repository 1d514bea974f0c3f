#pragma once
// A caching host allocator: freed blocks are kept by size class and reused, so repeated ops do
// not pay for fresh pages. EMBER_FLEX_CACHE_MB caps what is kept (default 4096). Built with
// AddressSanitizer it allocates each storage exactly and caches nothing, so the sanitizer sees
// every overrun and use after free.
#include <cstddef>
#include <memory>

#include "ember/backends/backend.h"

namespace ember::flex {

std::shared_ptr<Storage> allocate_host(size_t nbytes, Device place);
/// Returns every cached block to the system.
void empty_cache();
/// Bytes currently held in the cache (not in use).
size_t cached_bytes();
/// True in AddressSanitizer builds: exact allocations, nothing cached.
bool allocates_exactly();

}  // namespace ember::flex
