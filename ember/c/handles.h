#pragma once
// What the C ABI's opaque handles hold, and the guard every entry point runs its body in: it
// catches everything, maps it to an ember_status and keeps the message for ember_last_error().
#include <memory>
#include <string>
#include <utility>

#include "ember/c/ember.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

struct ember_tensor {
  ember::Tensor t;
};
struct ember_device {
  ember::Device d;
  std::string name;
};
struct ember_state_dict {
  ember::nn::StateDict items;
};
struct ember_module {
  explicit ember_module(std::shared_ptr<ember::nn::Module> mod) : m(std::move(mod)) {}
  std::shared_ptr<ember::nn::Module> m;
  std::unique_ptr<ember::optim::Optimizer> opt;  // made by the first train step
  double opt_lr = 0;
};

namespace ember::c_api {

/// Records `status` and "fn: message" as this thread's last error; returns `status`.
ember_status fail(ember_status status, const char* fn, const std::string& message);
/// The status and message for the exception in flight (called inside a catch block).
ember_status fail_current(const char* fn);

/// Runs `body` (returning nothing; it throws on failure) and turns any exception into a status.
template <class F> ember_status guarded(const char* fn, F&& body) noexcept {
  try {
    body();
    return EMBER_OK;
  } catch (...) {
    return fail_current(fn);
  }
}

/// EMBER_ERR_NULL naming the argument, thrown from inside a guarded body.
struct NullArgument {
  const char* name;
};
/// EMBER_ERR_BUFFER: a caller's buffer or count that does not fit.
struct BufferError {
  std::string message;
};
template <class T> T& need(T* p, const char* name) {
  if (!p) throw NullArgument{name};
  return *p;
}
inline void need(const void* p, const char* name) {
  if (!p) throw NullArgument{name};
}

/// A fresh handle for `t` into `*out`.
inline void put(ember_tensor** out, Tensor t) { *out = new ember_tensor{std::move(t)}; }
/// The C dtype as ember's (ValueError for a value not listed).
DType to_dtype(ember_dtype d);
/// `ndim` sizes from `shape` (ValueError for ndim < 0 or ndim > 0 with shape NULL).
Shape to_shape(const int64_t* shape, int ndim);
/// A C string for the caller, freed with ember_string_free.
char* dup_string(const std::string& s);

}  // namespace ember::c_api
