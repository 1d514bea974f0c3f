// The FFT plans of fft_plan.h: factorisation, twiddles, the Stockham passes and Bluestein.
#include "ember/backends/flex/fft_plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numbers>

#include "ember/backends/flex/thread_pool.h"

namespace ember::flex::fft {
namespace {

// e^{-2 pi i a / n}, the angle reduced mod n first (exact for large products).
template <class T>
Cx<T> root(int64_t a, int64_t n) {
  const double t = -2 * std::numbers::pi * double(a % n) / double(n);
  return {T(std::cos(t)), T(std::sin(t))};
}

// One pass: for each of the l1 transforms k and point i < ido, a p-point DFT of
// src[i + ido (j + p k)] (j < p) written, twiddled, to dst[i + ido (k + l1 j)].
template <class T, bool Inv>
struct PassRun {
  const typename Plan<T>::Pass& ps;
  const Cx<T>* src;
  Cx<T>* dst;

  // The twiddle of output j at point i (conjugated for the inverse).
  Cx<T> tw(int j, int64_t i) const {
    const Cx<T> w = ps.tw[size_t((j - 1) * ps.ido + i)];
    return Inv ? conj(w) : w;
  }
  // a * (-i) forward, a * i inverse.
  static Cx<T> rot(Cx<T> a) { return Inv ? Cx<T>{-a.im, a.re} : Cx<T>{a.im, -a.re}; }

  void run(int64_t k0, int64_t k1, int64_t i0, int64_t i1) const {
    const int64_t ido = ps.ido, l1 = ps.l1, p = ps.p;
    for (int64_t k = k0; k < k1; ++k) {
      const Cx<T>* a = src + ido * p * k;
      Cx<T>* b = dst + ido * k;
      const int64_t os = ido * l1;  // output stride between j
      switch (p) {
        case 2:
          for (int64_t i = i0; i < i1; ++i) {
            const Cx<T> x0 = a[i], x1 = a[i + ido];
            b[i] = x0 + x1;
            b[i + os] = (x0 - x1) * tw(1, i);
          }
          break;
        case 3: {
          const T s = Inv ? T(0.86602540378443864676) : T(-0.86602540378443864676);
          for (int64_t i = i0; i < i1; ++i) {
            const Cx<T> x0 = a[i], x1 = a[i + ido], x2 = a[i + 2 * ido];
            const Cx<T> t = x1 + x2, d = x1 - x2;
            const Cx<T> mid = x0 - t * T(0.5), r = {-d.im * s, d.re * s};
            b[i] = x0 + t;
            b[i + os] = (mid + r) * tw(1, i);
            b[i + 2 * os] = (mid - r) * tw(2, i);
          }
          break;
        }
        case 4:
          for (int64_t i = i0; i < i1; ++i) {
            const Cx<T> x0 = a[i], x1 = a[i + ido], x2 = a[i + 2 * ido], x3 = a[i + 3 * ido];
            const Cx<T> t0 = x0 + x2, t1 = x0 - x2, t2 = x1 + x3, t3 = rot(x1 - x3);
            b[i] = t0 + t2;
            b[i + os] = (t1 + t3) * tw(1, i);
            b[i + 2 * os] = (t0 - t2) * tw(2, i);
            b[i + 3 * os] = (t1 - t3) * tw(3, i);
          }
          break;
        default: {
          Cx<T> x[kMaxRadix];
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t j = 0; j < p; ++j) x[j] = a[i + j * ido];
            for (int64_t j = 0; j < p; ++j) {
              Cx<T> acc = x[0];
              for (int64_t q = 1, t = j; q < p; ++q, t = (t + j) % p) {
                const Cx<T> w = Inv ? conj(ps.roots[size_t(t)]) : ps.roots[size_t(t)];
                acc = acc + x[q] * w;
              }
              b[i + j * os] = j ? acc * tw(int(j), i) : acc;
            }
          }
        }
      }
    }
  }
};

template <class T, bool Inv>
void run_pass(const typename Plan<T>::Pass& ps, const Cx<T>* src, Cx<T>* dst, int64_t n) {
  const PassRun<T, Inv> r{ps, src, dst};
  // Large passes split over the pool (inline when the caller already runs in parallel).
  if (n < (int64_t(1) << 15) || num_threads() < 2 || in_parallel_region())
    return r.run(0, ps.l1, 0, ps.ido);
  if (ps.l1 >= 8)
    parallel_for(ps.l1, 1, [&](int64_t k0, int64_t k1) { r.run(k0, k1, 0, ps.ido); });
  else
    parallel_for(ps.ido, 256, [&](int64_t i0, int64_t i1) { r.run(0, ps.l1, i0, i1); });
}

// The factors of n in pass order: 4s, a 2, 3s, then the other primes ascending.
std::vector<int> factorise(int64_t n) {
  std::vector<int> f;
  while (n % 4 == 0) f.push_back(4), n /= 4;
  if (n % 2 == 0) f.push_back(2), n /= 2;
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) f.push_back(int(p)), n /= p;
  if (n > 1) f.push_back(int(n));
  return f;
}

// The smallest 2^a 3^b at least n.
int64_t good_size(int64_t n) {
  int64_t best = 1;
  while (best < n) best *= 2;
  for (int64_t p3 = 3; p3 < best; p3 *= 3)
    for (int64_t v = p3; v < best; v *= 2)
      if (v >= n) best = v;
  return best;
}

// dst (cols x rows) = src (rows x cols) transposed, in cache-sized tiles over the pool.
template <class T>
void transpose(const Cx<T>* src, Cx<T>* dst, int64_t rows, int64_t cols) {
  constexpr int64_t B = 16;
  const int64_t tiles = (rows + B - 1) / B;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t i0 = t0 * B; i0 < std::min(rows, t1 * B); i0 += B)
      for (int64_t j0 = 0; j0 < cols; j0 += B) {
        const int64_t i1 = std::min(rows, i0 + B), j1 = std::min(cols, j0 + B);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
      }
  };
  if (num_threads() < 2 || in_parallel_region())
    run(0, tiles);
  else
    parallel_for(tiles, 1, run);
}

// rows transforms of length sub->n at data + r * sub->n, then (when tw) each element times
// tw[r * len + j] (conjugated for the inverse), over the pool.
template <class T>
void rows_of(const Plan<T>& sub, Cx<T>* data, int64_t rows, bool inverse, const Cx<T>* tw) {
  const int64_t len = sub.n;
  auto run = [&](int64_t r0, int64_t r1) {
    std::vector<Cx<T>> work(size_t(sub.scratch_size()));
    for (int64_t r = r0; r < r1; ++r) {
      Cx<T>* row = data + r * len;
      sub.execute(row, work.data(), inverse);
      if (!tw) continue;
      const Cx<T>* t = tw + r * len;
      if (inverse)
        for (int64_t j = 0; j < len; ++j) row[j] = row[j] * conj(t[j]);
      else
        for (int64_t j = 0; j < len; ++j) row[j] = row[j] * t[j];
    }
  };
  if (num_threads() < 2 || in_parallel_region())
    run(0, rows);
  else
    parallel_for(rows, 1, run);
}

template <class T>
std::shared_ptr<Plan<T>> make_plan(int64_t n) {
  auto plan = std::make_shared<Plan<T>>();
  plan->n = n;
  if (n <= 1) return plan;
  std::vector<int> f = factorise(n);
  if (f.back() <= kMaxRadix && n >= kSixStep) {
    int64_t n1 = 1;
    for (int64_t d = 2; d * d <= n; ++d)
      if (n % d == 0) n1 = d;
    plan->n1 = n1;
    plan->n2 = n / n1;
    plan->p1 = plan_for<T>(n1);
    plan->p2 = plan_for<T>(n / n1);
    plan->tw6.resize(size_t(n));
    for (int64_t i = 0; i < plan->n2; ++i)
      for (int64_t j = 0; j < n1; ++j) plan->tw6[size_t(i * n1 + j)] = root<T>(i * j, n);
    return plan;
  }
  if (f.back() <= kMaxRadix) {
    int64_t l1 = 1;
    for (int p : f) {
      typename Plan<T>::Pass ps{p, l1, n / (l1 * p), {}, {}};
      const int64_t len = ps.ido * p;
      ps.tw.resize(size_t((p - 1) * ps.ido));
      for (int j = 1; j < p; ++j)
        for (int64_t i = 0; i < ps.ido; ++i)
          ps.tw[size_t((j - 1) * ps.ido + i)] = root<T>(i * j, len);
      if (p > 4)
        for (int t = 0; t < p; ++t) ps.roots.push_back(root<T>(t, p));
      plan->passes.push_back(std::move(ps));
      l1 *= p;
    }
    return plan;
  }
  const int64_t m = good_size(2 * n - 1);
  plan->m = m;
  plan->sub = plan_for<T>(m);
  plan->chirp.resize(size_t(n));
  for (int64_t j = 0; j < n; ++j) {  // j^2 mod 2n keeps the angle exact for long signals
    const double t = -std::numbers::pi * double((j * j) % (2 * n)) / double(n);
    plan->chirp[size_t(j)] = {T(std::cos(t)), T(std::sin(t))};
  }
  // b_j = conj(w_j) at j and m - j; the convolution's 1 / m folded in.
  std::vector<Cx<T>> b(size_t(m), Cx<T>{0, 0}), work(size_t(plan->sub->scratch_size()));
  const T inv_m = T(1) / T(m);
  for (int64_t j = 0; j < n; ++j) {
    b[size_t(j)] = conj(plan->chirp[size_t(j)]) * inv_m;
    if (j) b[size_t(m - j)] = b[size_t(j)];
  }
  plan->sub->execute(b.data(), work.data(), false);
  plan->kernel = std::move(b);
  return plan;
}

template <class T>
struct Cache {
  std::mutex mu;
  std::map<int64_t, std::shared_ptr<const Plan<T>>> plans;
  std::map<int64_t, std::shared_ptr<const std::vector<Cx<T>>>> real;
  size_t bytes = 0;  // the tables of `plans` (a Bluestein plan's sub-plan counted with it)
};
template <class T>
Cache<T>& cache() {
  static Cache<T> c;
  return c;
}
// The cache restarts past this many distinct lengths or bytes of tables (plans in use live on).
constexpr size_t kMaxCached = 64, kMaxCachedBytes = size_t(512) << 20;

template <class T>
size_t table_bytes(const Plan<T>& p) {
  size_t n = p.tw6.size() + p.chirp.size() + p.kernel.size();
  for (const auto& ps : p.passes) n += ps.tw.size() + ps.roots.size();
  return n * sizeof(Cx<T>);
}

// f(j0, j1) over [0, n), split over the pool when long and not nested.
template <class F>
void pointwise(int64_t n, const F& f) {
  if (n < (int64_t(1) << 16) || num_threads() < 2 || in_parallel_region()) return f(0, n);
  parallel_for(n, 1 << 14, f);
}

}  // namespace

template <class T>
void Plan<T>::execute(Cx<T>* data, Cx<T>* work, bool inverse) const {
  if (n <= 1) return;
  if (n1) {
    // x[i + n2 j] (n1 x n2): the n2 columns' n1-point DFTs, twiddled by w_n^{i j'}, then the
    // n1 rows' n2-point DFTs; X[n1 k2 + j'] is row j''s k2-th value.
    transpose(data, work, n1, n2);
    rows_of(*p1, work, n2, inverse, tw6.data());
    transpose(work, data, n2, n1);
    rows_of<T>(*p2, data, n1, inverse, nullptr);
    transpose(data, work, n1, n2);
    std::memcpy(static_cast<void*>(data), work, size_t(n) * sizeof(Cx<T>));
    return;
  }
  if (m) {
    // Bluestein: X_k = w_k sum_j (x_j w_j) conj(w_{k-j}); the inverse is conj(F(conj(x))).
    Cx<T>* a = work;
    Cx<T>* sw = work + m;
    pointwise(m, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < std::min(j1, n); ++j) {
        const Cx<T> x = inverse ? conj(data[j]) : data[j];
        a[j] = x * chirp[size_t(j)];
      }
      for (int64_t j = std::max(j0, n); j < j1; ++j) a[j] = {T(0), T(0)};
    });
    sub->execute(a, sw, false);
    pointwise(m, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) a[j] = conj(a[j] * kernel[size_t(j)]);
    });
    sub->execute(a, sw, false);  // conj(F(conj(v))) is the inverse transform of v
    pointwise(n, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        const Cx<T> y = conj(a[k]) * chirp[size_t(k)];
        data[k] = inverse ? conj(y) : y;
      }
    });
    return;
  }
  Cx<T>* src = data;
  Cx<T>* dst = work;
  for (const Pass& ps : passes) {
    if (inverse)
      run_pass<T, true>(ps, src, dst, n);
    else
      run_pass<T, false>(ps, src, dst, n);
    std::swap(src, dst);
  }
  if (src != data) std::memcpy(static_cast<void*>(data), src, size_t(n) * sizeof(Cx<T>));
}

template <class T>
std::shared_ptr<const Plan<T>> plan_for(int64_t n) {
  Cache<T>& c = cache<T>();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.plans.find(n);
    if (it != c.plans.end()) return it->second;
  }
  std::shared_ptr<const Plan<T>> p = make_plan<T>(n);  // unlocked: Bluestein plans recurse
  const size_t bytes = table_bytes(*p) + (p->sub ? table_bytes(*p->sub) : 0);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.plans.size() >= kMaxCached || c.bytes + bytes > kMaxCachedBytes) {
    c.plans.clear();
    c.bytes = 0;
  }
  auto [it, added] = c.plans.emplace(n, p);
  if (added) c.bytes += bytes;
  return it->second;
}

template <class T>
std::shared_ptr<const std::vector<Cx<T>>> real_twiddles(int64_t n) {
  Cache<T>& c = cache<T>();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.real.find(n);
    if (it != c.real.end()) return it->second;
  }
  auto v = std::make_shared<std::vector<Cx<T>>>(size_t(n / 2 + 1));
  for (int64_t k = 0; k <= n / 2; ++k) (*v)[size_t(k)] = root<T>(k, n);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.real.size() >= kMaxCached) c.real.clear();
  return c.real.emplace(n, std::move(v)).first->second;
}

template struct Plan<float>;
template struct Plan<double>;
template std::shared_ptr<const Plan<float>> plan_for<float>(int64_t);
template std::shared_ptr<const Plan<double>> plan_for<double>(int64_t);
template std::shared_ptr<const std::vector<Cx<float>>> real_twiddles<float>(int64_t);
template std::shared_ptr<const std::vector<Cx<double>>> real_twiddles<double>(int64_t);

}  // namespace ember::flex::fft
