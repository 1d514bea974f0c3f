// ZeroRedundancyOptimizer: whole parameters dealt out greedily by size; the owner steps, then
// broadcasts (all broadcasts in flight at once, waited together).
#include "ember/distributed/zero.h"

#include <algorithm>

#include "ember/optim/optimizer.h"

namespace ember::distributed {

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const Make& make,
                                                 ProcessGroup* group)
    : params_(std::move(params)), group_(group ? group : &world()) {
  std::vector<int64_t> load(size_t(group_->size()), 0);
  std::vector<Tensor> mine;
  for (const Tensor& p : params_) {
    if (!p.defined())
      throw ValueError("[ZeroRedundancyOptimizer] expected defined parameters, found an undefined one");
    const int r = int(std::min_element(load.begin(), load.end()) - load.begin());
    owner_.push_back(r);
    load[size_t(r)] += p.numel();
    if (r == group_->rank()) mine.push_back(p);
  }
  if (!mine.empty()) local_ = make(std::move(mine));
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

void ZeroRedundancyOptimizer::step(const Gradients& grads) {
  if (local_) local_->step(grads);
  NoGradGuard no_grad;
  std::vector<Work> works;
  works.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) works.push_back(group_->broadcast(params_[i], owner_[i]));
  for (Work& w : works) w.wait();
}

}  // namespace ember::distributed
