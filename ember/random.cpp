#include "ember/random.h"

#include <mutex>

#include "ember/ops/creation.h"

namespace ember {
namespace {
struct Gen {
  uint64_t seed = 0x2545F4914F6CDD1Dull, offset = 0;
};
std::mutex g_mu;
Gen g_gens[kNumBackends][16];
Gen& gen_for(Device d) { return g_gens[int(d.backend())][d.index() & 15]; }
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard lock(g_mu);
  for (auto& row : g_gens)
    for (auto& g : row) g = {seed, 0};
}
void manual_seed(Device d, uint64_t seed) {
  std::lock_guard lock(g_mu);
  gen_for(d) = {seed, 0};
}

namespace detail {
PhiloxState next_philox(Device d) {
  std::lock_guard lock(g_mu);
  Gen& g = gen_for(d);
  return {g.seed, g.offset++};
}
}  // namespace detail

}  // namespace ember
