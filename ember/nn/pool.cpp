// Pooling modules over nn::functional's pooling ops.
#include "ember/nn/pool.h"

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/nn/repr.h"

namespace ember::nn {

namespace F = ember::nn::functional;
using fmt::as_given;
using fmt::py_bool;

namespace {
F::PoolOptions pool_opts(const PoolOptions& o) {
  return {.kernel_size = o.kernel.v,
          .stride = o.stride ? o.stride->v : o.kernel.v,
          .padding = o.padding.v,
          .dilation = o.dilation.v,
          .ceil_mode = o.ceil_mode,
          .count_include_pad = o.count_include_pad};
}
std::string stride_str(const PoolOptions& o) {
  return as_given(o.stride ? o.stride->v : o.kernel.v);
}
}  // namespace

template <int Dims>
Tensor MaxPoolNd<Dims>::forward(const Tensor& x) {
  if constexpr (Dims == 1) return F::max_pool1d(x, pool_opts(options));
  if constexpr (Dims == 2) return F::max_pool2d(x, pool_opts(options));
}
template <int Dims>
std::string MaxPoolNd<Dims>::extra_repr() const {
  return "kernel_size=" + as_given(options.kernel.v) + ", stride=" + stride_str(options) +
         ", padding=" + as_given(options.padding.v) + ", dilation=" + as_given(options.dilation.v) +
         ", ceil_mode=" + py_bool(options.ceil_mode);
}
template <int Dims>
std::shared_ptr<Module> MaxPoolNd<Dims>::clone() const {
  return std::make_shared<MaxPoolNd<Dims>>(options);
}
template class MaxPoolNd<1>;
template class MaxPoolNd<2>;

template <int Dims>
Tensor AvgPoolNd<Dims>::forward(const Tensor& x) {
  if constexpr (Dims == 1) return F::avg_pool1d(x, pool_opts(options));
  if constexpr (Dims == 2) return F::avg_pool2d(x, pool_opts(options));
}
template <int Dims>
std::string AvgPoolNd<Dims>::extra_repr() const {
  if constexpr (Dims == 1) {  // AvgPool1d stores its options as 1-tuples
    const Shape& st = options.stride ? options.stride->v : options.kernel.v;
    return "kernel_size=" + fmt::tuple_str(options.kernel.v, 1) +
           ", stride=" + fmt::tuple_str(st, 1) +
           ", padding=" + fmt::tuple_str(options.padding.v, 1);
  }
  return "kernel_size=" + as_given(options.kernel.v) + ", stride=" + stride_str(options) +
         ", padding=" + as_given(options.padding.v);
}
template <int Dims>
std::shared_ptr<Module> AvgPoolNd<Dims>::clone() const {
  return std::make_shared<AvgPoolNd<Dims>>(options);
}
template class AvgPoolNd<1>;
template class AvgPoolNd<2>;

template <int Dims>
Tensor AdaptiveAvgPoolNd<Dims>::forward(const Tensor& x) {
  if (output_size.size() != 1 && output_size.size() != size_t(Dims))
    ember::detail::throw_value(type_name().c_str(), "expected 1 or " + std::to_string(Dims) +
                                                        " output sizes, found " +
                                                        std::to_string(output_size.size()));
  if constexpr (Dims == 1) return F::adaptive_avg_pool1d(x, output_size[0]);
  if constexpr (Dims == 2)
    return F::adaptive_avg_pool2d(
        x, output_size.size() == 1 ? Shape{output_size[0], output_size[0]} : output_size);
}
template <int Dims>
std::string AdaptiveAvgPoolNd<Dims>::extra_repr() const {
  return "output_size=" + as_given(output_size);
}
template <int Dims>
std::shared_ptr<Module> AdaptiveAvgPoolNd<Dims>::clone() const {
  return std::make_shared<AdaptiveAvgPoolNd<Dims>>(output_size);
}
template class AdaptiveAvgPoolNd<1>;
template class AdaptiveAvgPoolNd<2>;

}  // namespace ember::nn
