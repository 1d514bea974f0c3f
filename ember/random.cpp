#include "ember/random.h"

#include <mutex>
#include <string>
#include <vector>

#include "ember/detail/capture.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/ops/registry.h"

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

std::vector<uint64_t> get_rng_state() {
  std::lock_guard lock(g_mu);
  std::vector<uint64_t> out;
  out.reserve(sizeof(g_gens) / sizeof(uint64_t));
  for (auto& row : g_gens)
    for (auto& g : row) {
      out.push_back(g.seed);
      out.push_back(g.offset);
    }
  return out;
}

void set_rng_state(const std::vector<uint64_t>& state) {
  constexpr size_t n = sizeof(g_gens) / sizeof(Gen) * 2;
  if (state.size() != n)
    throw ValueError("[set_rng_state] expected a state of " + std::to_string(n) +
                     " words (from get_rng_state), found " + std::to_string(state.size()));
  std::lock_guard lock(g_mu);
  size_t i = 0;
  for (auto& row : g_gens)
    for (auto& g : row) {
      g.seed = state[i++];
      g.offset = state[i++];
    }
}

struct Generator::State {
  std::mutex mu;
  Gen gen;
};
Generator::Generator(uint64_t seed) : state_(std::make_shared<State>()) { manual_seed(seed); }
void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(state_->mu);
  state_->gen = {seed, 0};
}
uint64_t Generator::initial_seed() const {
  std::lock_guard lock(state_->mu);
  return state_->gen.seed;
}
std::vector<uint64_t> Generator::get_state() const {
  std::lock_guard lock(state_->mu);
  return {state_->gen.seed, state_->gen.offset};
}
void Generator::set_state(const std::vector<uint64_t>& state) {
  if (state.size() != 2)
    throw ValueError("[Generator::set_state] expected a state of 2 words (from get_state), "
                     "found " + std::to_string(state.size()));
  std::lock_guard lock(state_->mu);
  state_->gen = {state[0], state[1]};
}
std::pair<uint64_t, uint64_t> Generator::next() const {
  std::lock_guard lock(state_->mu);
  return {state_->gen.seed, state_->gen.offset++};
}

namespace detail {
PhiloxState next_philox(Device d) {
  PhiloxState st;
  {
    std::lock_guard lock(g_mu);
    Gen& g = gen_for(d);
    st = {g.seed, g.offset++};
  }
  // Inside ember::capture each replay must draw anew: the capture learns where this one went.
  if (Capture* c = capture_on(d)) [[unlikely]] c->note_draw(st.offset);
  return st;
}
uint64_t philox_counter(Device d) {
  std::lock_guard lock(g_mu);
  return gen_for(d).offset;
}
void set_philox_counter(Device d, uint64_t offset) {
  std::lock_guard lock(g_mu);
  gen_for(d).offset = offset;
}
void draw_philox(Attrs& a, Device d) {
  const PhiloxState st = next_philox(d);
  a.seed = st.seed;
  a.offset = st.offset;
}
PhiloxState philox_of(const Attrs& a) { return {a.seed, a.offset}; }
}  // namespace detail

}  // namespace ember
