// flex's native FFTs (fft_plan.h's host entry points): c2c, r2c and c2r along the last dim of
// a host tensor, rows split over the thread pool, through the plans of fft_plan.h.
// A real transform of even length n runs a complex one of n / 2 points (even samples as real
// parts, odd ones as imaginary) and untangles the spectrum; odd lengths run the full one.
#include <cstring>

#include "ember/backends/flex/fft_plan.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ember.h"

namespace ember::flex::fft {
namespace {

template <class T>
T* data(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// Runs f(row0, row1, scratch) over the rows, across threads when there are several and each
// carries some work; scratch holds `per_row` elements per call.
template <class T, class F>
void over_rows(int64_t rows, int64_t n, int64_t per_row, const F& f) {
  if (rows > 1 && rows * n >= (int64_t(1) << 14) && num_threads() > 1) {
    parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      std::vector<Cx<T>> s(static_cast<size_t>(per_row));
      f(r0, r1, s.data());
    });
  } else if (rows > 0) {
    std::vector<Cx<T>> s(static_cast<size_t>(per_row));
    f(int64_t(0), rows, s.data());
  }
}

template <class T>
void scale_row(Cx<T>* v, int64_t n, T s) {
  if (s != T(1))
    for (int64_t k = 0; k < n; ++k) v[k] = v[k] * s;
}

template <class F>
void dispatch_complex(DType d, const F& f) {
  if (d == DType::C128 || d == DType::F64)
    f(double{});
  else
    f(float{});
}

// What a real transform's row sees: the half-length (even n) or full-length plan, the real
// twiddles (even n), a complex buffer of the plan's length and the plan's scratch.
template <class T>
struct RealRow {
  const fft::Plan<T>& plan;
  const Cx<T>* tw;
  Cx<T>* z;
  Cx<T>* work;
  bool half;
  int64_t len;
};

template <class T, class F>
void real_rows(int64_t n, int64_t rows, const F& f) {
  const bool half = n % 2 == 0;
  const int64_t len = half ? n / 2 : n;
  auto plan = fft::plan_for<T>(len);
  auto tw = half ? fft::real_twiddles<T>(n) : nullptr;
  over_rows<T>(rows, n, len + plan->scratch_size(), [&](int64_t r0, int64_t r1, Cx<T>* work) {
    const RealRow<T> rr{*plan, tw ? tw->data() : nullptr, work + plan->scratch_size(), work, half,
                        len};
    for (int64_t r = r0; r < r1; ++r) f(r, rr);
  });
}

Tensor new_like(const Tensor& x, const Shape& shape, DType d) {
  return empty(shape, {.dtype = d, .device = x.device()});
}

}  // namespace

Tensor c2c(const Tensor& input, bool inverse, double scale) {
  const Tensor x = input.contiguous();
  Tensor out = new_like(x, x.shape(), x.dtype());
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  dispatch_complex(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto plan = fft::plan_for<T>(n);
    const Cx<T>* in = data<Cx<T>>(x);
    Cx<T>* o = data<Cx<T>>(out);
    over_rows<T>(rows, n, plan->scratch_size(), [&](int64_t r0, int64_t r1, Cx<T>* work) {
      for (int64_t r = r0; r < r1; ++r) {
        Cx<T>* row = o + r * n;
        std::memcpy(static_cast<void*>(row), in + r * n, size_t(n) * sizeof(Cx<T>));
        plan->execute(row, work, inverse);
        scale_row(row, n, T(scale));
      }
    });
  });
  return out;
}

Tensor r2c(const Tensor& input, bool inverse, double scale) {
  const Tensor x = input.contiguous();
  const int64_t n = x.size(-1), h = n / 2 + 1, rows = n ? x.numel() / n : 0;
  Shape shape = x.shape();
  shape[shape.size() - 1] = h;
  Tensor out = new_like(x, shape, complex_dtype_for(x.dtype()));
  dispatch_complex(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T s = T(scale);
    const T* in = data<T>(x);
    Cx<T>* o = data<Cx<T>>(out);
    real_rows<T>(n, rows, [&](int64_t r, const RealRow<T>& rr) {
      const auto& [plan, tw, z, work, half, len] = rr;
      const T* xr = in + r * n;
      Cx<T>* y = o + r * h;
      if (half) {
        std::memcpy(static_cast<void*>(z), xr, size_t(n) * sizeof(T));  // (x_2j, x_2j+1)
        plan.execute(z, work, false);
        const int64_t m = len;
        // X_k = E_k + w^k O_k, E_k = (Z_k + conj Z_{m-k}) / 2, O_k = -i (Z_k - conj Z_{m-k}) / 2
        for (int64_t k = 0; k <= m; ++k) {
          const Cx<T> a = z[k % m], b = conj(z[(m - k) % m]);
          const Cx<T> e = (a + b) * T(0.5), d = (a - b) * T(0.5);
          const Cx<T> od = {d.im, -d.re};
          y[k] = e + tw[k] * od;
        }
      } else {
        for (int64_t j = 0; j < n; ++j) z[j] = {xr[j], T(0)};
        plan.execute(z, work, false);
        std::memcpy(static_cast<void*>(y), z, size_t(h) * sizeof(Cx<T>));
      }
      for (int64_t k = 0; k < h; ++k)
        y[k] = Cx<T>{y[k].re * s, inverse ? -y[k].im * s : y[k].im * s};
    });
  });
  return out;
}

Tensor c2r(const Tensor& input, int64_t n, bool inverse, double scale) {
  const Tensor x = input.contiguous();
  const int64_t h = n / 2 + 1, rows = x.numel() / h;
  Shape shape = x.shape();
  shape[shape.size() - 1] = n;
  Tensor out = new_like(x, shape, complex_part_dtype(x.dtype()));
  dispatch_complex(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T s = T(scale);
    const Cx<T>* in = data<Cx<T>>(x);
    T* o = data<T>(out);
    real_rows<T>(n, rows, [&](int64_t r, const RealRow<T>& rr) {
      const auto& [plan, tw, z, work, half, len] = rr;
      const Cx<T>* xr = in + r * h;
      T* y = o + r * n;
      // The forward sign is the inverse transform of the conjugate spectrum.
      // rr.half, not the binding: clang 14 cannot capture a structured binding in a lambda.
      auto X = [&](int64_t k) {
        Cx<T> v = inverse ? xr[k] : conj(xr[k]);
        if (k == 0 || (rr.half && k == h - 1)) v.im = 0;
        return v;
      };
      if (half) {
        // Z_k = 2 E_k + 2 i O_k with 2 E_k = X_k + conj X_{m-k}, 2 O_k = w^-k (X_k - conj
        // X_{m-k})
        const int64_t m = len;
        for (int64_t k = 0; k < m; ++k) {
          const Cx<T> a = X(k), b = conj(X(m - k));
          const Cx<T> o2 = (a - b) * conj(tw[k]);
          z[k] = (a + b) + Cx<T>{-o2.im, o2.re};
        }
        plan.execute(z, work, true);
        for (int64_t j = 0; j < m; ++j) y[2 * j] = z[j].re * s, y[2 * j + 1] = z[j].im * s;
      } else {
        z[0] = X(0);
        for (int64_t k = 1; k < h; ++k) z[k] = X(k), z[n - k] = conj(X(k));
        plan.execute(z, work, true);
        for (int64_t j = 0; j < n; ++j) y[j] = z[j].re * s;
      }
    });
  });
  return out;
}

}  // namespace ember::flex::fft
