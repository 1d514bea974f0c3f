#pragma once
// std::complex support for complex tensors: ember's complex64/complex128 map to
// std::complex<float>/std::complex<double>, so tensor(std::vector<std::complex<float>>{...}),
// t.item<std::complex<double>>() and t.to_vector<std::complex<float>>() work. Kept out of
// <ember/ember.h> because <complex> is a large header; the tensor functions themselves
// (ember::real, view_as_complex, ...) are in ember/ops/complex.h, which ember.h includes.
#include <complex>

#include "ember/dtype.h"
#include "ember/ops/complex.h"

namespace ember {
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::C64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::C128; };
}  // namespace ember
