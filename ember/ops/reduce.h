#pragma once
// Reductions (over one dim, several dims or all), scans, sorting and order statistics.
// An empty `dims` list means "all dims".
#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = {});
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
Tensor prod(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
/// Largest element of the whole tensor (0-d).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// (values, indices) along `dim`.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Index of the max (flattened when dim is empty), int64.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Variance with `correction` (1 = unbiased, Bessel's).
Tensor var(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
/// p-norm (p = inf for max-abs, 0 for count of non-zeros).
Tensor norm(const Tensor& x, double p = 2, const Shape& dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, const Shape& dims = {});

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
/// (values, indices) of the running max/min along dim.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
/// (values, indices), stable.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// (values, indices) of the k largest (or smallest) along dim.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
/// (values, indices) of the k-th smallest (1-based) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
/// Lower median of all elements (0-d).
Tensor median(const Tensor& x);
/// (values, indices) of the lower median along dim.
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace ember
