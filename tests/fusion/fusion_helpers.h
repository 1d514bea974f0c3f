#pragma once
// Helpers of the fusion tests: waiting for kernels (so counts do not depend on the compiler's
// speed) and the counters of a step's second run (the first plans and compiles).
#include "ember/ember.h"
#include "ember/fusion.h"

namespace ember::fusion_test {

struct WaitForKernels {
  WaitForKernels() { fusion::set_wait_for_kernels(true); }
  ~WaitForKernels() { fusion::set_wait_for_kernels(false); }
};

template <class F>
fusion::Stats run_twice(F&& f) {
  f();
  synchronize(Device::cpu());
  fusion::reset_stats();
  f();
  synchronize(Device::cpu());
  return fusion::stats();
}

}  // namespace ember::fusion_test
