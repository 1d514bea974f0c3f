// The Tensor methods, with libtorch's names, argument order and defaults. Included inside class
// Tensor (declarations) and by ember/tensor_methods.cpp (definitions), each time with
//   EMBER_METHOD(ret, name, (params), (call))   a const method returning `call`
//   EMBER_INPLACE(name, (params), (call))       an in-place method writing `call` into *this
//   EMBER_METHOD_DEFAULT(v)                     "= v" in a declaration, nothing in a definition
// defined by the includer, and optionally
//   EMBER_TEMPLATE_METHOD(tparam, name, (params), (call))  an inline template method (only the
//                                               class defines it: it has no out-of-line part)
// No include guard: it is meant to be expanded more than once.
//
// The elementwise ops come straight from the op list (ember/ops/op_list.h): every Unary op is a
// method `x.name()` with an in-place `x.name_()`, every Binary op `a.name(b)` / `a.name(2)` with
// `a.name_(b)` / `a.name_(2)`, so a new op of those categories is a method without an edit here.
// The names listed below as EMBER_NO_METHOD_x / EMBER_NO_INPLACE_x are the exceptions. The ops
// whose arguments differ are listed one per line below the generated part;
// tests/api/method_coverage_test.cpp checks that every op of the list is either a method or one
// that libtorch has only as a free function.

#ifndef EMBER_TENSOR_METHODS_PP
#define EMBER_TENSOR_METHODS_PP
// A probe: EMBER_PP_LISTED(EMBER_NO_METHOD_, name) is 1 when EMBER_NO_METHOD_name is defined as
// EMBER_PP_PROBE(), else 0.
#define EMBER_PP_CAT(a, b) EMBER_PP_CAT_(a, b)
#define EMBER_PP_CAT_(a, b) a##b
#define EMBER_PP_SECOND(a, b, ...) b
#define EMBER_PP_IS_PROBE(...) EMBER_PP_SECOND(__VA_ARGS__, 0, )
#define EMBER_PP_PROBE() ~, 1
#define EMBER_PP_LISTED(prefix, name) EMBER_PP_IS_PROBE(EMBER_PP_CAT(prefix, name))
#define EMBER_PP_UNLESS(cond, ...) EMBER_PP_CAT(EMBER_PP_UNLESS_, cond)(__VA_ARGS__)
#define EMBER_PP_UNLESS_0(...) __VA_ARGS__
#define EMBER_PP_UNLESS_1(...)
#define EMBER_PP_IS_UNARY(cat) EMBER_PP_LISTED(EMBER_PP_UNARY_, cat)
#define EMBER_PP_IS_BINARY(cat) EMBER_PP_LISTED(EMBER_PP_BINARY_, cat)
#define EMBER_PP_UNARY_Unary EMBER_PP_PROBE()
#define EMBER_PP_BINARY_Binary EMBER_PP_PROBE()

// Unary ops that are no method: cast is `to(dtype)`.
#define EMBER_NO_METHOD_cast EMBER_PP_PROBE()
// Unary ops without an in-place form (a bool result, or a dtype change).
#define EMBER_NO_INPLACE_cast EMBER_PP_PROBE()
#define EMBER_NO_INPLACE_isnan EMBER_PP_PROBE()
#define EMBER_NO_INPLACE_isinf EMBER_PP_PROBE()
#define EMBER_NO_INPLACE_isfinite EMBER_PP_PROBE()

#define EMBER_PP_UNARY_METHOD(name)                                                  \
  EMBER_PP_UNLESS(EMBER_PP_LISTED(EMBER_NO_METHOD_, name),                           \
                  EMBER_METHOD(Tensor, name, (), (ember::name(*this))))              \
  EMBER_PP_UNLESS(EMBER_PP_LISTED(EMBER_NO_INPLACE_, name),                          \
                  EMBER_INPLACE(name##_, (), (ember::name(*this))))
#define EMBER_PP_BINARY_METHOD(name)                                                 \
  EMBER_METHOD(Tensor, name, (const Tensor& other), (ember::name(*this, other)))     \
  EMBER_METHOD(Tensor, name, (Scalar other), (ember::name(*this, other)))            \
  EMBER_INPLACE(name##_, (const Tensor& other), (ember::name(*this, other)))         \
  EMBER_INPLACE(name##_, (Scalar other), (ember::name(*this, other)))
#define EMBER_PP_WHEN(cond, ...) EMBER_PP_CAT(EMBER_PP_WHEN_, cond)(__VA_ARGS__)
#define EMBER_PP_WHEN_0(...)
#define EMBER_PP_WHEN_1(...) __VA_ARGS__
#define EMBER_PP_OP_METHODS(name, cat)                                    \
  EMBER_PP_WHEN(EMBER_PP_IS_UNARY(cat), EMBER_PP_UNARY_METHOD(name))      \
  EMBER_PP_WHEN(EMBER_PP_IS_BINARY(cat), EMBER_PP_BINARY_METHOD(name))
#endif

#ifndef EMBER_TEMPLATE_METHOD
#define EMBER_TEMPLATE_METHOD(...)
#define EMBER_TEMPLATE_METHOD_UNSET
#endif

EMBER_OPS(EMBER_PP_OP_METHODS)

#define EMBER_D EMBER_METHOD_DEFAULT
// --- elementwise ops with more arguments than the generated forms ---
EMBER_METHOD(Tensor, add, (const Tensor& other, Scalar alpha), (ember::add(*this, other, alpha)))
EMBER_METHOD(Tensor, sub, (const Tensor& other, Scalar alpha), (ember::sub(*this, other, alpha)))
EMBER_INPLACE(add_, (const Tensor& other, Scalar alpha), (ember::add(*this, other, alpha)))
EMBER_INPLACE(sub_, (const Tensor& other, Scalar alpha), (ember::sub(*this, other, alpha)))
EMBER_METHOD(Tensor, div, (const Tensor& other, const std::string& rounding_mode),
             (ember::div(*this, other, rounding_mode)))
EMBER_INPLACE(div_, (const Tensor& other, const std::string& rounding_mode),
              (ember::div(*this, other, rounding_mode)))
EMBER_METHOD(Tensor, gelu, (const std::string& approximate), (ember::gelu(*this, approximate)))
EMBER_METHOD(Tensor, softplus, (double beta, double threshold EMBER_D(20.0)),
             (ember::softplus(*this, beta, threshold)))
EMBER_METHOD(Tensor, elu, (double alpha), (ember::elu(*this, alpha)))
EMBER_METHOD(Tensor, leaky_relu, (double negative_slope), (ember::leaky_relu(*this, negative_slope)))
EMBER_METHOD(Tensor, nan_to_num,
             (double nan, std::optional<double> posinf EMBER_D({}), std::optional<double> neginf EMBER_D({})),
             (ember::nan_to_num(*this, nan, posinf, neginf)))
EMBER_METHOD(Tensor, where, (const Tensor& condition, const Tensor& other),
             (ember::where(condition, *this, other)))
EMBER_METHOD(Tensor, where, (const Tensor& condition, Scalar other),
             (ember::where(condition, *this, other)))
EMBER_METHOD(Tensor, clamp, (std::optional<Scalar> min EMBER_D({}), std::optional<Scalar> max EMBER_D({})),
             (ember::clamp(*this, min, max)))
EMBER_METHOD(Tensor, clamp, (const Tensor& min, const Tensor& max), (ember::clamp(*this, min, max)))
EMBER_METHOD(Tensor, clamp_min, (Scalar min), (ember::clamp(*this, min, std::nullopt)))
EMBER_METHOD(Tensor, clamp_max, (Scalar max), (ember::clamp(*this, std::nullopt, max)))
EMBER_INPLACE(clamp_, (std::optional<Scalar> min EMBER_D({}), std::optional<Scalar> max EMBER_D({})),
              (ember::clamp(*this, min, max)))
EMBER_INPLACE(clamp_, (const Tensor& min, const Tensor& max), (ember::clamp(*this, min, max)))
EMBER_INPLACE(clamp_min_, (Scalar min), (ember::clamp(*this, min, std::nullopt)))
EMBER_INPLACE(clamp_max_, (Scalar max), (ember::clamp(*this, std::nullopt, max)))
EMBER_METHOD(Tensor, lerp, (const Tensor& end, Scalar weight), (ember::lerp(*this, end, weight)))
EMBER_METHOD(Tensor, lerp, (const Tensor& end, const Tensor& weight),
             (ember::lerp(*this, end, weight)))
EMBER_INPLACE(lerp_, (const Tensor& end, Scalar weight), (ember::lerp(*this, end, weight)))
EMBER_INPLACE(lerp_, (const Tensor& end, const Tensor& weight), (ember::lerp(*this, end, weight)))
EMBER_METHOD(Tensor, addcmul, (const Tensor& t1, const Tensor& t2, Scalar value EMBER_D(1)),
             (ember::addcmul(*this, t1, t2, value)))
EMBER_METHOD(Tensor, addcdiv, (const Tensor& t1, const Tensor& t2, Scalar value EMBER_D(1)),
             (ember::addcdiv(*this, t1, t2, value)))
EMBER_INPLACE(addcmul_, (const Tensor& t1, const Tensor& t2, Scalar value EMBER_D(1)),
              (ember::addcmul(*this, t1, t2, value)))
EMBER_INPLACE(addcdiv_, (const Tensor& t1, const Tensor& t2, Scalar value EMBER_D(1)),
              (ember::addcdiv(*this, t1, t2, value)))

// --- complex numbers (ember/ops/complex.h) ---
EMBER_METHOD(Tensor, real, (), (ember::real(*this)))
EMBER_METHOD(Tensor, imag, (), (ember::imag(*this)))
EMBER_METHOD(Tensor, conj, (), (ember::conj(*this)))
EMBER_METHOD(Tensor, conj_physical, (), (ember::conj_physical(*this)))
EMBER_METHOD(Tensor, angle, (), (ember::angle(*this)))

// --- reductions ---
// Each `dims` form also takes one integer, as libtorch's IntArrayRef does (`x.sum(1)`,
// `x.mean(-1, true)`, `x.norm(2, 1)`): a template (detail::IntegralDim) so that a braced `{}` or
// `{1}` still means a Shape.
#define EMBER_DIM_FORM(name, params, call) \
  EMBER_TEMPLATE_METHOD(detail::IntegralDim I, name, params, call)
EMBER_METHOD(Tensor, sum, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false),
                           std::optional<DType> dtype EMBER_D({})),
             (ember::sum(*this, dim, keepdim, dtype)))
EMBER_DIM_FORM(sum, (I dim, bool keepdim EMBER_D(false), std::optional<DType> dtype EMBER_D({})),
               (sum(Shape{int64_t(dim)}, keepdim, dtype)))
EMBER_METHOD(Tensor, mean, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false),
                            std::optional<DType> dtype EMBER_D({})),
             (ember::mean(*this, dim, keepdim, dtype)))
EMBER_DIM_FORM(mean, (I dim, bool keepdim EMBER_D(false), std::optional<DType> dtype EMBER_D({})),
               (mean(Shape{int64_t(dim)}, keepdim, dtype)))
EMBER_METHOD(Tensor, prod, (std::optional<int64_t> dim EMBER_D({}), bool keepdim EMBER_D(false),
                            std::optional<DType> dtype EMBER_D({})),
             (ember::prod(*this, dim, keepdim, dtype)))
EMBER_METHOD(Tensor, max, (), (ember::max(*this)))
EMBER_METHOD(Tensor, min, (), (ember::min(*this)))
EMBER_METHOD(TensorPair, max, (int64_t dim, bool keepdim EMBER_D(false)), (ember::max(*this, dim, keepdim)))
EMBER_METHOD(TensorPair, min, (int64_t dim, bool keepdim EMBER_D(false)), (ember::min(*this, dim, keepdim)))
EMBER_METHOD(Tensor, max, (const Tensor& other), (ember::maximum(*this, other)))
EMBER_METHOD(Tensor, min, (const Tensor& other), (ember::minimum(*this, other)))
EMBER_METHOD(Tensor, amax, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::amax(*this, dim, keepdim)))
EMBER_DIM_FORM(amax, (I dim, bool keepdim EMBER_D(false)), (amax(Shape{int64_t(dim)}, keepdim)))
EMBER_METHOD(Tensor, amin, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::amin(*this, dim, keepdim)))
EMBER_DIM_FORM(amin, (I dim, bool keepdim EMBER_D(false)), (amin(Shape{int64_t(dim)}, keepdim)))
EMBER_METHOD(Tensor, argmax, (std::optional<int64_t> dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::argmax(*this, dim, keepdim)))
EMBER_METHOD(Tensor, argmin, (std::optional<int64_t> dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::argmin(*this, dim, keepdim)))
EMBER_METHOD(Tensor, any, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::any(*this, dim, keepdim)))
EMBER_DIM_FORM(any, (I dim, bool keepdim EMBER_D(false)), (any(Shape{int64_t(dim)}, keepdim)))
EMBER_METHOD(Tensor, all, (const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::all(*this, dim, keepdim)))
EMBER_DIM_FORM(all, (I dim, bool keepdim EMBER_D(false)), (all(Shape{int64_t(dim)}, keepdim)))
// `unbiased` as libtorch's bool, or any correction: true = 1 (Bessel's), false = 0, so
// libtorch's var(dim, unbiased, keepdim) reads the same; var(bool unbiased) reduces everything.
EMBER_METHOD(Tensor, var, (const Shape& dim EMBER_D({}), double correction EMBER_D(1), bool keepdim EMBER_D(false)),
             (ember::var(*this, dim, correction, keepdim)))
EMBER_DIM_FORM(var, (I dim, double correction EMBER_D(1), bool keepdim EMBER_D(false)),
               (var(Shape{int64_t(dim)}, correction, keepdim)))
EMBER_TEMPLATE_METHOD(detail::ExactlyBool B, var, (B unbiased),
                      (var(Shape{}, unbiased ? 1.0 : 0.0)))
EMBER_METHOD(Tensor, std, (const Shape& dim EMBER_D({}), double correction EMBER_D(1), bool keepdim EMBER_D(false)),
             (ember::std(*this, dim, correction, keepdim)))
EMBER_DIM_FORM(std, (I dim, double correction EMBER_D(1), bool keepdim EMBER_D(false)),
               (std(Shape{int64_t(dim)}, correction, keepdim)))
EMBER_TEMPLATE_METHOD(detail::ExactlyBool B, std, (B unbiased),
                      (std(Shape{}, unbiased ? 1.0 : 0.0)))
EMBER_METHOD(Tensor, logsumexp, (const Shape& dim, bool keepdim EMBER_D(false)),
             (ember::logsumexp(*this, dim, keepdim)))
EMBER_DIM_FORM(logsumexp, (I dim, bool keepdim EMBER_D(false)),
               (logsumexp(Shape{int64_t(dim)}, keepdim)))
EMBER_METHOD(Tensor, norm, (double p EMBER_D(2), const Shape& dim EMBER_D({}), bool keepdim EMBER_D(false)),
             (ember::norm(*this, p, dim, keepdim)))
EMBER_DIM_FORM(norm, (double p, I dim, bool keepdim EMBER_D(false)),
               (norm(p, Shape{int64_t(dim)}, keepdim)))
EMBER_METHOD(Tensor, count_nonzero, (const Shape& dim EMBER_D({})), (ember::count_nonzero(*this, dim)))
EMBER_DIM_FORM(count_nonzero, (I dim), (count_nonzero(Shape{int64_t(dim)})))
#undef EMBER_DIM_FORM
// Comparisons of whole tensors (host syncs: they return a bool).
EMBER_METHOD(bool, equal, (const Tensor& other), (ember::equal(*this, other)))
EMBER_METHOD(bool, allclose,
             (const Tensor& other, double rtol EMBER_D(1e-5), double atol EMBER_D(1e-8),
              bool equal_nan EMBER_D(false)),
             (ember::allclose(*this, other, rtol, atol, equal_nan)))

// --- scans and order statistics ---
EMBER_METHOD(Tensor, cumsum, (int64_t dim, std::optional<DType> dtype EMBER_D({})),
             (ember::cumsum(*this, dim, dtype)))
EMBER_METHOD(Tensor, cumprod, (int64_t dim, std::optional<DType> dtype EMBER_D({})),
             (ember::cumprod(*this, dim, dtype)))
EMBER_INPLACE(cumsum_, (int64_t dim), (ember::cumsum(*this, dim)))
EMBER_METHOD(TensorPair, cummax, (int64_t dim), (ember::cummax(*this, dim)))
EMBER_METHOD(TensorPair, cummin, (int64_t dim), (ember::cummin(*this, dim)))
EMBER_METHOD(TensorPair, sort, (int64_t dim EMBER_D(-1), bool descending EMBER_D(false)),
             (ember::sort(*this, dim, descending)))
EMBER_METHOD(Tensor, argsort, (int64_t dim EMBER_D(-1), bool descending EMBER_D(false)),
             (ember::argsort(*this, dim, descending)))
EMBER_METHOD(TensorPair, topk,
             (int64_t k, int64_t dim EMBER_D(-1), bool largest EMBER_D(true), bool sorted EMBER_D(true)),
             (ember::topk(*this, k, dim, largest, sorted)))
EMBER_METHOD(TensorPair, kthvalue, (int64_t k, int64_t dim EMBER_D(-1), bool keepdim EMBER_D(false)),
             (ember::kthvalue(*this, k, dim, keepdim)))
EMBER_METHOD(Tensor, median, (), (ember::median(*this)))
EMBER_METHOD(TensorPair, median, (int64_t dim, bool keepdim EMBER_D(false)),
             (ember::median(*this, dim, keepdim)))

// --- matrix products ---
EMBER_METHOD(Tensor, matmul, (const Tensor& other), (ember::matmul(*this, other)))
EMBER_METHOD(Tensor, mm, (const Tensor& other), (ember::mm(*this, other)))
EMBER_METHOD(Tensor, bmm, (const Tensor& other), (ember::bmm(*this, other)))
EMBER_METHOD(Tensor, outer, (const Tensor& other), (ember::outer(*this, other)))
EMBER_METHOD(Tensor, dot, (const Tensor& other), (ember::dot(*this, other)))

// --- linear algebra (ember/linalg.h) ---
EMBER_METHOD(Tensor, inverse, (), (ember::inverse(*this)))
EMBER_METHOD(Tensor, det, (), (ember::det(*this)))
EMBER_METHOD(Tensor, logdet, (), (ember::logdet(*this)))
EMBER_METHOD(TensorPair, slogdet, (), (ember::slogdet(*this)))
EMBER_METHOD(Tensor, cholesky, (bool upper EMBER_D(false)), (ember::cholesky(*this, upper)))
EMBER_METHOD(Tensor, pinverse, (double rcond EMBER_D(1e-15)), (ember::pinverse(*this, rcond)))
EMBER_METHOD(Tensor, trace, (), (ember::trace(*this)))
EMBER_METHOD(Tensor, diag, (int64_t diagonal EMBER_D(0)), (ember::diag(*this, diagonal)))
EMBER_METHOD(Tensor, diag_embed,
             (int64_t offset EMBER_D(0), int64_t dim1 EMBER_D(-2), int64_t dim2 EMBER_D(-1)),
             (ember::diag_embed(*this, offset, dim1, dim2)))
EMBER_METHOD(Tensor, matrix_power, (int64_t n), (ember::matrix_power(*this, n)))
EMBER_METHOD(Tensor, matrix_exp, (), (ember::matrix_exp(*this)))
EMBER_METHOD(Tensor, cross, (const Tensor& other, std::optional<int64_t> dim EMBER_D({})),
             (ember::cross(*this, other, dim)))

// --- indexing ---
EMBER_METHOD(Tensor, index_select, (int64_t dim, const Tensor& index),
             (ember::index_select(*this, dim, index)))
EMBER_METHOD(Tensor, gather, (int64_t dim, const Tensor& index), (ember::gather(*this, dim, index)))
EMBER_METHOD(Tensor, scatter, (int64_t dim, const Tensor& index, const Tensor& src),
             (ember::scatter(*this, dim, index, src)))
EMBER_METHOD(Tensor, scatter, (int64_t dim, const Tensor& index, Scalar value),
             (ember::scatter(*this, dim, index, value)))
EMBER_METHOD(Tensor, scatter_add, (int64_t dim, const Tensor& index, const Tensor& src),
             (ember::scatter_add(*this, dim, index, src)))
EMBER_METHOD(Tensor, scatter_reduce,
             (int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
              bool include_self EMBER_D(true)),
             (ember::scatter_reduce(*this, dim, index, src, reduce, include_self)))
EMBER_METHOD(Tensor, index_add,
             (int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha EMBER_D(1)),
             (ember::index_add(*this, dim, index, source, alpha)))
EMBER_METHOD(Tensor, index_put, (const TensorList& indices, const Tensor& values,
                                 bool accumulate EMBER_D(false)),
             (ember::index_put(*this, indices, values, accumulate)))
EMBER_METHOD(Tensor, masked_fill, (const Tensor& mask, Scalar value),
             (ember::masked_fill(*this, mask, value)))
EMBER_METHOD(Tensor, masked_fill, (const Tensor& mask, const Tensor& value),
             (ember::masked_fill(*this, mask, value)))
EMBER_METHOD(Tensor, masked_select, (const Tensor& mask), (ember::masked_select(*this, mask)))
EMBER_METHOD(Tensor, nonzero, (), (ember::nonzero(*this)))
EMBER_METHOD(Tensor, take, (const Tensor& index), (ember::take(*this, index)))
EMBER_INPLACE(scatter_, (int64_t dim, const Tensor& index, const Tensor& src),
              (ember::scatter(*this, dim, index, src)))
EMBER_INPLACE(scatter_, (int64_t dim, const Tensor& index, Scalar value),
              (ember::scatter(*this, dim, index, value)))
EMBER_INPLACE(scatter_add_, (int64_t dim, const Tensor& index, const Tensor& src),
              (ember::scatter_add(*this, dim, index, src)))
EMBER_INPLACE(scatter_reduce_,
              (int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
               bool include_self EMBER_D(true)),
              (ember::scatter_reduce(*this, dim, index, src, reduce, include_self)))
EMBER_INPLACE(index_add_,
              (int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha EMBER_D(1)),
              (ember::index_add(*this, dim, index, source, alpha)))
// The list form; t.index_put_({i, j}, v) with TensorIndex entries is declared in tensor.h.
EMBER_INPLACE(index_put_, (const TensorList& indices, const Tensor& values, bool accumulate),
              (ember::index_put(*this, indices, values, accumulate)))
EMBER_INPLACE(masked_fill_, (const Tensor& mask, Scalar value),
              (ember::masked_fill(*this, mask, value)))
EMBER_INPLACE(masked_fill_, (const Tensor& mask, const Tensor& value),
              (ember::masked_fill(*this, mask, value)))

// --- layout ---
EMBER_METHOD(Tensor, unflatten, (int64_t dim, const Shape& sizes),
             (ember::unflatten(*this, dim, sizes)))
EMBER_METHOD(Tensor, movedim, (const Shape& source, const Shape& destination),
             (ember::movedim(*this, source, destination)))
EMBER_METHOD(Tensor, movedim, (int64_t source, int64_t destination),
             (ember::movedim(*this, {source}, {destination})))
EMBER_METHOD(Tensor, broadcast_to, (const Shape& size), (ember::broadcast_to(*this, size)))
EMBER_METHOD(Tensor, expand_as, (const Tensor& other), (ember::expand(*this, other.shape())))
EMBER_METHOD(Tensor, view_as, (const Tensor& other), (ember::view(*this, other.shape())))
EMBER_METHOD(Tensor, reshape_as, (const Tensor& other), (ember::reshape(*this, other.shape())))
EMBER_METHOD(Tensor, type_as, (const Tensor& other), (to(other.dtype())))
EMBER_METHOD(TensorList, split, (int64_t split_size, int64_t dim EMBER_D(0)),
             (ember::split(*this, split_size, dim)))
EMBER_METHOD(TensorList, split, (const Shape& split_sizes, int64_t dim EMBER_D(0)),
             (ember::split(*this, split_sizes, dim)))
EMBER_METHOD(TensorList, chunk, (int64_t chunks, int64_t dim EMBER_D(0)),
             (ember::chunk(*this, chunks, dim)))
EMBER_METHOD(TensorList, unbind, (int64_t dim EMBER_D(0)), (ember::unbind(*this, dim)))
EMBER_METHOD(Tensor, repeat, (const Shape& repeats), (ember::repeat(*this, repeats)))
EMBER_METHOD(Tensor, tile, (const Shape& dims), (ember::tile(*this, dims)))
EMBER_METHOD(Tensor, repeat_interleave, (int64_t repeats, std::optional<int64_t> dim EMBER_D({})),
             (ember::repeat_interleave(*this, repeats, dim)))
EMBER_METHOD(Tensor, repeat_interleave,
             (const Tensor& repeats, std::optional<int64_t> dim EMBER_D({}),
              std::optional<int64_t> output_size EMBER_D({})),
             (ember::repeat_interleave(*this, repeats, dim, output_size)))
EMBER_METHOD(Tensor, flip, (const Shape& dims), (ember::flip(*this, dims)))
EMBER_METHOD(Tensor, roll, (const Shape& shifts, const Shape& dims EMBER_D({})),
             (ember::roll(*this, shifts, dims)))
EMBER_METHOD(Tensor, tril, (int64_t diagonal EMBER_D(0)), (ember::tril(*this, diagonal)))
EMBER_METHOD(Tensor, triu, (int64_t diagonal EMBER_D(0)), (ember::triu(*this, diagonal)))
EMBER_INPLACE(tril_, (int64_t diagonal EMBER_D(0)), (ember::tril(*this, diagonal)))
EMBER_INPLACE(triu_, (int64_t diagonal EMBER_D(0)), (ember::triu(*this, diagonal)))

// --- nn ops that libtorch also has as methods ---
EMBER_METHOD(Tensor, softmax, (int64_t dim), (ember::softmax(*this, dim)))
EMBER_METHOD(Tensor, log_softmax, (int64_t dim), (ember::log_softmax(*this, dim)))

// --- creation and random ops ---
EMBER_METHOD(Tensor, bernoulli, (), (ember::bernoulli(*this)))
EMBER_METHOD(Tensor, new_empty, (const Shape& size), (ember::empty(size, options())))
EMBER_METHOD(Tensor, new_zeros, (const Shape& size), (ember::zeros(size, options())))
EMBER_METHOD(Tensor, new_ones, (const Shape& size), (ember::ones(size, options())))
EMBER_METHOD(Tensor, new_full, (const Shape& size, Scalar value),
             (ember::full(size, value, options())))
#undef EMBER_D
#ifdef EMBER_TEMPLATE_METHOD_UNSET
#undef EMBER_TEMPLATE_METHOD
#undef EMBER_TEMPLATE_METHOD_UNSET
#endif
