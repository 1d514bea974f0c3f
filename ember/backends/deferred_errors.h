#pragma once
// Deferred kernel errors kept apart for one group of work (private). An ember server runs each
// client's session on a thread of its own; with a scope alive on that thread, the errors its
// queued kernels report (detail::defer_error) and the syncs it runs (raise_deferred_errors) use
// the scope's slots instead of the process-wide ones, so one client's error never surfaces at
// another client's sync.
#include <exception>

#include "ember/backends/backend.h"

namespace ember::detail {

class DeferredErrors {
 public:
  /// Makes `e` the calling thread's slots while alive (restoring the previous ones after).
  class Scope {
   public:
    explicit Scope(DeferredErrors& e);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    DeferredErrors* prev_;
  };
  std::exception_ptr& slot(Device d) { return slots_[int(d.backend())][d.index() & 15]; }

 private:
  std::exception_ptr slots_[kNumBackends][16];
};

}  // namespace ember::detail
