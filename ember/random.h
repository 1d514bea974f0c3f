#pragma once
// Per-device random generators (counter-based Philox). Seed with ember::manual_seed.
#include <cstdint>

#include "ember/detail/philox.h"
#include "ember/device.h"

namespace ember::detail {
/// Reserves one op's worth of counters on `d`'s generator.
PhiloxState next_philox(Device d);
}  // namespace ember::detail
