#include "ember/fusion/stats.h"

#include <atomic>
#include <initializer_list>

#include "ember/fusion.h"

namespace ember::fusion {
namespace {
std::atomic<int64_t> g_recorded{0}, g_flushes{0}, g_kernels{0}, g_fused{0}, g_eager{0},
    g_hits{0}, g_misses{0};
}  // namespace

void stats_recorded(int64_t n) { g_recorded.fetch_add(n, std::memory_order_relaxed); }
void stats_flush() { g_flushes.fetch_add(1, std::memory_order_relaxed); }
void stats_kernel(int64_t ops) {
  g_kernels.fetch_add(1, std::memory_order_relaxed);
  g_fused.fetch_add(ops, std::memory_order_relaxed);
}
void stats_eager(int64_t ops) { g_eager.fetch_add(ops, std::memory_order_relaxed); }
void stats_plan(bool hit) { (hit ? g_hits : g_misses).fetch_add(1, std::memory_order_relaxed); }

Stats stats() {
  return {g_recorded.load(), g_flushes.load(), g_kernels.load(), g_fused.load(),
          g_eager.load(),    g_hits.load(),    g_misses.load()};
}
void reset_stats() {
  for (auto* c : {&g_recorded, &g_flushes, &g_kernels, &g_fused, &g_eager, &g_hits, &g_misses})
    c->store(0);
}

}  // namespace ember::fusion
