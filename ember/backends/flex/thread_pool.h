#pragma once
// A small persistent thread pool for the flex backend. Work below `grain` runs inline; nested
// calls from a worker run inline too. Set EMBER_NUM_THREADS to choose the size (1 = no threads).
#include <cstdint>
#include <type_traits>

namespace ember::flex {

/// Threads the pool uses (the caller counts as one).
int num_threads();
void set_num_threads(int n);
/// Whether the calling thread runs inside a parallel_for (where nested calls run inline).
bool in_parallel_region();

namespace detail {
using RangeFn = void (*)(const void* ctx, int64_t begin, int64_t end);
void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, const void* ctx);
}  // namespace detail

/// Calls f(begin, end) over disjoint ranges covering [0, n), in parallel when n > grain.
template <class F>
void parallel_for(int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
  detail::parallel_for_impl(
      n, grain,
      [](const void* ctx, int64_t b, int64_t e) { (*static_cast<const F*>(ctx))(b, e); }, &f);
}

}  // namespace ember::flex
