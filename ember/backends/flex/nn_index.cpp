// flex kernels that pick elements by index: embedding (row gather) and nll_loss (the target
// class's log-probability). Every index is checked before it is used; a bad one throws
// IndexError naming the op.
#include <cstring>

#include "ember/ops/modes.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {
namespace {

// Class indices or embedding rows as int64 (the inputs are int32 or int64).
std::vector<int64_t> indices_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  if (c.dtype() == DType::I64) {
    if (!v.empty()) std::memcpy(v.data(), c.raw_data(), v.size() * sizeof(int64_t));
  } else {
    const int32_t* p = static_cast<const int32_t*>(c.raw_data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  }
  return v;
}

TensorList k_embedding(const OpCall& c) {
  Tensor out = new_output(c);
  const std::vector<int64_t> idx = indices_of(c.inputs[0]);
  const Tensor w = c.inputs[1].contiguous();
  const int64_t rows = w.size(0);
  for (int64_t i : idx)
    if (i < 0 || i >= rows)
      ::ember::detail::throw_index("embedding", "index " + std::to_string(i) +
                                           " is out of range for a weight of " +
                                           std::to_string(rows) + " rows");
  const size_t row_bytes = size_t(w.size(1)) * w.itemsize();
  if (row_bytes == 0) return {out};
  const char* src = static_cast<const char*>(w.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(int64_t(idx.size()), std::max<int64_t>(1, int64_t(65536 / row_bytes)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i)
                   std::memcpy(dst + size_t(i) * row_bytes,
                               src + size_t(idx[size_t(i)]) * row_bytes, row_bytes);
               });
  return {out};
}

// input [C] | [N, C] | [N, C, S...], target [] | [N] | [N, S...]: loss = -w[t] * input[n, t, s].
TensorList k_nll_loss(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor total = new_output(c, 1);
  const Tensor x = c.inputs[0].contiguous();
  const std::vector<int64_t> tgt = indices_of(c.inputs[1]);
  const Tensor w = c.inputs.size() > 2 && c.inputs[2].defined()
                       ? c.inputs[2].to(DType::F64).contiguous()
                       : Tensor();
  const double* wp = w.defined() ? static_cast<const double*>(w.raw_data()) : nullptr;
  const int64_t classes = x.dim() == 1 ? x.size(0) : x.size(1);
  const int64_t batch = x.dim() == 1 ? 1 : x.size(0);
  const int64_t inner = batch * classes > 0 ? x.numel() / (batch * classes) : 0;
  const int64_t ignore = c.attrs.i[0];
  const auto red = ops::Reduction(c.attrs.mode);
  for (int64_t t : tgt)
    if (t != ignore && (t < 0 || t >= classes))
      ::ember::detail::throw_index("nll_loss", "target " + std::to_string(t) +
                                                   " is out of bounds for " +
                                                   std::to_string(classes) + " classes");
  EMBER_DISPATCH_FLOAT(x.dtype(), "nll_loss", {
    const T* xp = static_cast<const T*>(x.raw_data());
    T* op = static_cast<T*>(out.raw_data());
    double sum = 0, weight_sum = 0;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t s = 0; s < inner; ++s) {
        const int64_t i = n * inner + s, t = tgt[size_t(i)];
        double l = 0, wt = 0;
        if (t != ignore) {
          wt = wp ? wp[t] : 1.0;
          l = -wt * double(compute_t<T>(xp[(n * classes + t) * inner + s]));
        }
        if (red == ops::Reduction::None) op[i] = T(compute_t<T>(l));
        sum += l;
        weight_sum += wt;
      }
    }
    if (red != ops::Reduction::None) op[0] = T(compute_t<T>(red == ops::Reduction::Sum ? sum : sum / weight_sum));
    static_cast<T*>(total.raw_data())[0] = T(compute_t<T>(weight_sum));
  });
  return {out, total};
}

}  // namespace

void register_flex_nn_index(BackendImpl& b) {
  b.set_kernel(OpId::embedding, k_embedding, kIntDTypes);
  b.set_kernel(OpId::nll_loss, k_nll_loss, kFloatDTypes);
}

}  // namespace ember::flex
