// The sanitizer build instruments the library, not only the tests: its allocator then gives each
// storage exactly its bytes (a redzone right after the last one) and reuses nothing, so an
// overrunning kernel or a use after free is reported. This only holds when the library's own
// sources were compiled with AddressSanitizer (the flags come before add_library).
#include <gtest/gtest.h>

#include "ember/backends/flex/allocator.h"
#include "ember/ember.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_ASAN 1
#endif
#endif

#ifdef EMBER_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

using namespace ember;

#ifdef EMBER_TEST_ASAN
TEST(Sanitizers, TheLibraryIsInstrumentedToo) {
  EXPECT_TRUE(flex::allocates_exactly());
  Tensor t = empty({25});  // 100 bytes
  const char* p = static_cast<const char*>(t.raw_data());
  EXPECT_FALSE(__asan_address_is_poisoned(p + 99));
  EXPECT_TRUE(__asan_address_is_poisoned(p + 100));  // an overrun by one byte is seen
}

TEST(Sanitizers, FreedStorageIsPoisoned) {
  const char* p;
  {
    Tensor t = ones({64});
    p = static_cast<const char*>(t.raw_data());
    EXPECT_FALSE(__asan_address_is_poisoned(p));
  }
  EXPECT_TRUE(__asan_address_is_poisoned(p));  // freed, not kept for reuse
}
#else
TEST(Sanitizers, TheLibraryIsInstrumentedToo) {
  EXPECT_FALSE(flex::allocates_exactly());  // a plain build caches
  GTEST_SKIP() << "not an AddressSanitizer build";
}
#endif
