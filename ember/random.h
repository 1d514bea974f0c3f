#pragma once
// Per-device random generators (counter-based Philox). Seed with ember::manual_seed.
#include <cstdint>

#include "ember/detail/philox.h"
#include "ember/device.h"

namespace ember {
struct Attrs;
namespace detail {
/// Reserves one op's worth of counters on `d`'s generator.
PhiloxState next_philox(Device d);
/// Draws one op's Philox key and counter offset on `d` into `a.seed` / `a.offset`. Random ops
/// call it when the user calls them, never when a kernel runs, so deferred, fused or replayed
/// work draws exactly what eager execution draws.
void draw_philox(Attrs& a, Device d);
/// The state a random op drew (see draw_philox).
PhiloxState philox_of(const Attrs& a);
}  // namespace detail
}  // namespace ember
