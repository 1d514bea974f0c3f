#pragma once
// A test guard that removes flex's kernel of an op for its lifetime, so calls on flex take the
// op's decomposition (what backends without a kernel of their own run).
#include "ember/backends/backend.h"

namespace ember::test {

class KernelOff {
 public:
  explicit KernelOff(OpId op) : op_(op) {
    detail::init();
    b_ = backend_for(Backend::Flex);
    saved_ = b_->kernel(op);
    b_->set_kernel(op, nullptr, 0);
  }
  ~KernelOff() { b_->set_kernel(op_, saved_.fn, saved_.dtypes); }
  KernelOff(const KernelOff&) = delete;
  KernelOff& operator=(const KernelOff&) = delete;

 private:
  OpId op_;
  BackendImpl* b_;
  KernelEntry saved_;
};

}  // namespace ember::test
