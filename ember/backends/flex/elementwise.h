#pragma once
// Inner-loop templates for elementwise kernels (private to the flex backend).
#include "ember/backends/flex/loops.h"

namespace ember::flex {

/// out = f(a): T in, T out, computing in compute_t<T>. Contiguous runs get a plain loop the
/// compiler vectorises.
template <class T, class F>
void map1_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  using C = compute_t<T>;
  const F& f = *static_cast<const F*>(ctx);
  if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
    T* __restrict o = reinterpret_cast<T*>(p[0]);
    const T* __restrict a = reinterpret_cast<const T*>(p[1]);
    for (int64_t i = 0; i < n; ++i) o[i] = T(f(C(a[i])));
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<T*>(p[0] + i * s[0]) = T(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
  }
}

/// out (O) = f(a (T)): different output type (predicates, casts).
template <class T, class O, class F>
void map1_to_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  using C = compute_t<T>;
  const F& f = *static_cast<const F*>(ctx);
  if (s[0] == sizeof(O) && s[1] == sizeof(T)) {
    O* __restrict o = reinterpret_cast<O*>(p[0]);
    const T* __restrict a = reinterpret_cast<const T*>(p[1]);
    for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(a[i])));
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(p[0] + i * s[0]) = O(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
  }
}

/// out (O) = f(a (T), b (T)), with fast paths for contiguous and scalar operands.
template <class T, class O, class F>
void map2_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  using C = compute_t<T>;
  const F& f = *static_cast<const F*>(ctx);
  O* __restrict o = reinterpret_cast<O*>(p[0]);
  const T* __restrict a = reinterpret_cast<const T*>(p[1]);
  const T* __restrict b = reinterpret_cast<const T*>(p[2]);
  if (s[0] == sizeof(O)) {
    if (s[1] == sizeof(T) && s[2] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(a[i]), C(b[i])));
      return;
    }
    if (s[1] == sizeof(T) && s[2] == 0) {
      const C bv = C(b[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(a[i]), bv));
      return;
    }
    if (s[1] == 0 && s[2] == sizeof(T)) {
      const C av = C(a[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(av, C(b[i])));
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<O*>(p[0] + i * s[0]) =
        O(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1])),
            C(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
}

/// out = f(a, b, c), all T.
template <class T, class F>
void map3_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  using C = compute_t<T>;
  const F& f = *static_cast<const F*>(ctx);
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<T*>(p[0] + i * s[0]) =
        T(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1])),
            C(*reinterpret_cast<const T*>(p[2] + i * s[2])),
            C(*reinterpret_cast<const T*>(p[3] + i * s[3]))));
}

/// Runs `loop` with functor `f` over out = op(ins...).
template <class F>
void run_map(const Tensor& out, std::span<const Tensor> ins, InnerLoop loop, const F& f) {
  Plan p = make_plan(out, ins);
  run_plan(p, loop, &f);
}

}  // namespace ember::flex
