// Kernel timing for ember/profile.h. run_on_backend calls detail::timed_kernel only while
// profiling is on; the counters are per thread so kernels dispatched by pool workers (if any)
// never add to the caller's numbers twice.
#include "ember/profile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "ember/ops/profile_hook.h"

namespace ember {
namespace profile {

namespace {
bool env_enabled() {
  const char* e = std::getenv("EMBER_PROFILE");
  return e && *e && std::strcmp(e, "0") != 0;
}

struct Counters {
  std::array<int64_t, kNumOps> calls{};
  std::array<double, kNumOps> ns{};
  double total_ns = 0;
  int64_t total_calls = 0;
  int depth = 0;  // > 0 inside a timed kernel: nested kernel calls are part of it
};
thread_local Counters t_counters;
}  // namespace

namespace detail {
bool g_enabled = env_enabled();

TensorList timed_kernel(Kernel fn, const OpCall& call) {
  Counters& c = t_counters;
  if (c.depth > 0) return fn(call);
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(c.depth);
  const auto t0 = std::chrono::steady_clock::now();
  TensorList out = fn(call);
  const auto t1 = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double, std::nano>(t1 - t0).count();
  c.ns[size_t(call.op)] += dt;
  c.calls[size_t(call.op)] += 1;
  c.total_ns += dt;
  c.total_calls += 1;
  return out;
}
}  // namespace detail

bool enabled() { return detail::g_enabled; }
void set_enabled(bool on) { detail::g_enabled = on; }
void reset() {
  const int depth = t_counters.depth;
  t_counters = Counters{};
  t_counters.depth = depth;
}
double kernel_ns() { return t_counters.total_ns; }
int64_t kernel_calls() { return t_counters.total_calls; }

std::vector<OpStat> op_stats() {
  std::vector<OpStat> r;
  for (int i = 0; i < kNumOps; ++i)
    if (t_counters.calls[size_t(i)])
      r.push_back({op_name(OpId(i)), t_counters.calls[size_t(i)], t_counters.ns[size_t(i)]});
  std::sort(r.begin(), r.end(), [](const OpStat& a, const OpStat& b) { return a.ns > b.ns; });
  return r;
}

}  // namespace profile
}  // namespace ember
