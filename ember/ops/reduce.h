#pragma once
// Reductions (over one dim, several dims or all), scans, sorting and order statistics, with
// PyTorch's semantics. An empty `dims` list means "all dims". Integer and bool inputs sum to
// int64 (sum, prod, cumsum, cumprod) unless `dtype` is given; max-like ops propagate NaN, and
// ops without an identity (max, argmax, median, ...) throw IndexError on an empty reduction.
#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

/// Sum over `dims` (of the input cast to `dtype` when given); 0 for nothing.
Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = {});
/// Mean of a floating input (or of any input with a floating `dtype`); NaN for nothing.
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
/// Product over one dim or all; 1 for nothing.
Tensor prod(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
/// Largest element of the whole tensor (0-d); NaN if any element is NaN.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// (values, int64 indices) along `dim`; ties give the first occurrence, NaN wins.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// Largest (smallest) values over `dims`, NaN-propagating.
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Index of the max (of the flattened tensor when dim is empty), int64; the first occurrence
/// wins ties and NaN counts as the max. Bool inputs are rejected, as in torch.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
/// Logical or (and) over `dims`: bool, except uint8 inputs give uint8 (as torch 1.13 does).
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Variance of a floating input with `correction` (1 = unbiased, Bessel's), dividing by
/// max(0, n - correction).
Tensor var(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
/// (var, mean) and (std, mean) over `dims` in one call (torch::var_mean, torch::std_mean).
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, const Shape& dims = {}, double correction = 1,
                                    bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, const Shape& dims = {}, double correction = 1,
                                    bool keepdim = false);
/// log(sum(exp(x))) computed stably; integer inputs give the default float dtype.
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
/// p-norm of a floating input (p = inf for max-abs, -inf for min-abs, 0 for the count of
/// non-zeros); like torch.norm, the norm of nothing is 0.
Tensor norm(const Tensor& x, double p = 2, const Shape& dims = {}, bool keepdim = false);
/// Number of non-zero elements over `dims`, int64.
Tensor count_nonzero(const Tensor& x, const Shape& dims = {});

// The same reductions over one integer dim, as libtorch's IntArrayRef converts from one
// (`sum(x, 1)`, `mean(x, -1, true)`); templates (detail::IntegralDim), so `{}` stays a Shape.
template <detail::IntegralDim I>
Tensor sum(const Tensor& x, I dim, bool keepdim = false, std::optional<DType> dtype = {}) {
  return sum(x, Shape{int64_t(dim)}, keepdim, dtype);
}
template <detail::IntegralDim I>
Tensor mean(const Tensor& x, I dim, bool keepdim = false, std::optional<DType> dtype = {}) {
  return mean(x, Shape{int64_t(dim)}, keepdim, dtype);
}
#define EMBER_DIM_FORM(name)                                     \
  template <detail::IntegralDim I>                               \
  Tensor name(const Tensor& x, I dim, bool keepdim = false) {    \
    return name(x, Shape{int64_t(dim)}, keepdim);                \
  }
EMBER_DIM_FORM(amax) EMBER_DIM_FORM(amin) EMBER_DIM_FORM(any) EMBER_DIM_FORM(all)
EMBER_DIM_FORM(logsumexp)
#undef EMBER_DIM_FORM
template <detail::IntegralDim I>
Tensor var(const Tensor& x, I dim, double correction = 1, bool keepdim = false) {
  return var(x, Shape{int64_t(dim)}, correction, keepdim);
}
template <detail::IntegralDim I>
Tensor std(const Tensor& x, I dim, double correction = 1, bool keepdim = false) {
  return std(x, Shape{int64_t(dim)}, correction, keepdim);
}
template <detail::IntegralDim I>
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, I dim, double correction = 1,
                                    bool keepdim = false) {
  return var_mean(x, Shape{int64_t(dim)}, correction, keepdim);
}
template <detail::IntegralDim I>
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, I dim, double correction = 1,
                                    bool keepdim = false) {
  return std_mean(x, Shape{int64_t(dim)}, correction, keepdim);
}
template <detail::IntegralDim I>
Tensor norm(const Tensor& x, double p, I dim, bool keepdim = false) {
  return norm(x, p, Shape{int64_t(dim)}, keepdim);
}
template <detail::IntegralDim I>
Tensor count_nonzero(const Tensor& x, I dim) {
  return count_nonzero(x, Shape{int64_t(dim)});
}

/// Running sum (product) along `dim`, of the input cast to `dtype` when given.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
/// (values, indices) of the running max/min along dim; ties move the index to the latest
/// occurrence and NaN takes over, as in torch.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
/// (values, indices), stable; NaN sorts last ascending and first descending.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// (values, indices) of the k largest (or smallest) along dim, NaN counting as the largest;
/// 0 <= k <= size(dim), else IndexError. Results always come sorted.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
/// (values, indices) of the k-th smallest (1-based, 1 <= k <= size(dim)) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
/// Lower median of all elements (0-d); NaN if any element is NaN or there are none.
Tensor median(const Tensor& x);
/// (values, indices) of the lower median along dim; a lane holding NaN gives its first NaN.
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace ember
