#include "ember/autodiff/rules.h"

namespace ember::autodiff {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - int64_t(shape.size());
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead) dims.push_back(d);
    else if (shape[size_t(d - lead)] == 1 && grad.size(d) != 1) dims.push_back(d);
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  if (lead > 0) r = r.reshape(shape);
  return r.shape() == shape ? r : r.reshape(shape);
}

Tensor zeros_for(const Tensor& t) { return zeros_like(t); }

}  // namespace ember::autodiff
