#pragma once
// Counter updates (private; ember/fusion.h reads them).
#include <cstdint>

namespace ember::fusion {
void stats_recorded(int64_t n);
void stats_flush();
void stats_kernel(int64_t ops);
void stats_eager(int64_t ops);
void stats_plan(bool hit);
}  // namespace ember::fusion
