// The C ABI's errors, devices, tensors and ops (ember/c/ember.h). Every entry point runs its body
// in c_api::guarded, so no exception leaves it; state dicts and modules are in c_modules.cpp.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "ember/c/handles.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"
#include "ember/store/safetensors.h"
#include "ember/threads.h"

#ifndef EMBER_VERSION_STRING
#define EMBER_VERSION_STRING "0.0.0"
#endif

using namespace ember;
using c_api::guarded;
using c_api::need;
using c_api::put;

namespace ember::c_api {
namespace {
thread_local std::string last_error;
}

ember_status fail(ember_status status, const char* fn, const std::string& message) {
  try {
    last_error = std::string(fn) + ": " + message;
  } catch (...) {  // no memory for the message: keep the status
    last_error.clear();
  }
  return status;
}

ember_status fail_current(const char* fn) {
  // Most specific first: the store's errors derive from Error, as do ember's typed ones.
  try {
    throw;
  } catch (const NullArgument& e) {
    return fail(EMBER_ERR_NULL, fn, std::string("argument '") + e.name + "' is NULL");
  } catch (const BufferError& e) {
    return fail(EMBER_ERR_BUFFER, fn, e.message);
  } catch (const store::KeyError& e) {
    return fail(EMBER_ERR_KEY, fn, e.what());
  } catch (const store::FormatError& e) {
    return fail(EMBER_ERR_FORMAT, fn, e.what());
  } catch (const store::StoreError& e) {
    return fail(EMBER_ERR_IO, fn, e.what());
  } catch (const ShapeError& e) {
    return fail(EMBER_ERR_SHAPE, fn, e.what());
  } catch (const DTypeError& e) {
    return fail(EMBER_ERR_DTYPE, fn, e.what());
  } catch (const DeviceError& e) {
    return fail(EMBER_ERR_DEVICE, fn, e.what());
  } catch (const IndexError& e) {
    return fail(EMBER_ERR_INDEX, fn, e.what());
  } catch (const ValueError& e) {
    return fail(EMBER_ERR_VALUE, fn, e.what());
  } catch (const NotImplementedError& e) {
    return fail(EMBER_ERR_NOT_IMPLEMENTED, fn, e.what());
  } catch (const OutOfMemory& e) {
    return fail(EMBER_ERR_OUT_OF_MEMORY, fn, e.what());
  } catch (const std::bad_alloc&) {
    return fail(EMBER_ERR_OUT_OF_MEMORY, fn, "out of memory");
  } catch (const Error& e) {
    return fail(EMBER_ERR_INTERNAL, fn, e.what());
  } catch (const std::exception& e) {
    return fail(EMBER_ERR_INTERNAL, fn, e.what());
  } catch (...) {
    return fail(EMBER_ERR_INTERNAL, fn, "unknown exception");
  }
}

DType to_dtype(ember_dtype d) {
  if (int(d) < int(EMBER_BOOL) || int(d) > int(EMBER_F64))
    throw ValueError("unknown ember_dtype " + std::to_string(int(d)));
  return DType(uint8_t(d));
}

Shape to_shape(const int64_t* shape, int ndim) {
  if (ndim < 0) throw ValueError("ndim must be >= 0, found " + std::to_string(ndim));
  if (ndim > 0 && !shape) throw NullArgument{"shape"};
  return Shape(std::span<const int64_t>(shape, size_t(ndim)));
}

char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace ember::c_api

namespace {
ember_device* new_device(Device d) { return new ember_device{d, d.str()}; }
Device device_or_flex(const ember_device* d) { return d ? d->d : Device::flex(); }

using Binary = Tensor (*)(const Tensor&, const Tensor&);
ember_status binary(const char* fn, Binary op, const ember_tensor* a, const ember_tensor* b,
                    ember_tensor** out) {
  return guarded(fn, [&] {
    const Tensor& x = need(a, "a").t;
    const Tensor& y = need(b, "b").t;
    need(out, "out");
    put(out, op(x, y));
  });
}
}  // namespace

extern "C" {

const char* ember_last_error(void) { return c_api::last_error.c_str(); }

const char* ember_status_name(ember_status s) {
  switch (s) {
#define EMBER_C_STATUS(x) \
  case x: return #x;
    EMBER_C_STATUS(EMBER_OK)
    EMBER_C_STATUS(EMBER_ERR_NULL)
    EMBER_C_STATUS(EMBER_ERR_SHAPE)
    EMBER_C_STATUS(EMBER_ERR_DTYPE)
    EMBER_C_STATUS(EMBER_ERR_DEVICE)
    EMBER_C_STATUS(EMBER_ERR_INDEX)
    EMBER_C_STATUS(EMBER_ERR_VALUE)
    EMBER_C_STATUS(EMBER_ERR_NOT_IMPLEMENTED)
    EMBER_C_STATUS(EMBER_ERR_OUT_OF_MEMORY)
    EMBER_C_STATUS(EMBER_ERR_IO)
    EMBER_C_STATUS(EMBER_ERR_FORMAT)
    EMBER_C_STATUS(EMBER_ERR_KEY)
    EMBER_C_STATUS(EMBER_ERR_BUFFER)
    EMBER_C_STATUS(EMBER_ERR_INTERNAL)
#undef EMBER_C_STATUS
  }
  return "EMBER_ERR_UNKNOWN";
}

const char* ember_version(void) { return EMBER_VERSION_STRING; }

size_t ember_dtype_size(ember_dtype d) {
  if (int(d) < int(EMBER_BOOL) || int(d) > int(EMBER_F64)) return 0;
  return itemsize(DType(uint8_t(d)));
}

int ember_num_threads(void) {
  try {
    return num_threads();
  } catch (...) {
    return 1;
  }
}

ember_status ember_set_num_threads(int n) {
  return guarded("ember_set_num_threads", [&] {
    if (n < 1) throw ValueError("n must be >= 1, found " + std::to_string(n));
    set_num_threads(n);
  });
}

// --- devices ---
ember_status ember_device_flex(ember_device** out) {
  return guarded("ember_device_flex", [&] { need(out, "out") = new_device(Device::flex()); });
}
ember_status ember_device_cpu(ember_device** out) {
  return guarded("ember_device_cpu", [&] { need(out, "out") = new_device(Device::cpu()); });
}
ember_status ember_device_cuda(int index, ember_device** out) {
  return guarded("ember_device_cuda", [&] { need(out, "out") = new_device(Device::cuda(index)); });
}

ember_status ember_device_parse(const char* name, ember_device** out) {
  return guarded("ember_device_parse", [&] {
    need(name, "name");
    need(out, "out");
    const std::string s = name;
    if (s == "flex") {
      *out = new_device(Device::flex());
    } else if (s == "cpu") {
      *out = new_device(Device::cpu());
    } else if (s == "cuda") {
      *out = new_device(Device::cuda(0));
    } else if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() < 9 &&
               s.find_first_not_of("0123456789", 5) == std::string::npos) {
      *out = new_device(Device::cuda(std::atoi(s.c_str() + 5)));
    } else {
      throw ValueError("unknown device '" + s + "' (flex, cpu, cuda or cuda:N)");
    }
  });
}

ember_status ember_device_name(const ember_device* d, const char** out) {
  return guarded("ember_device_name", [&] { need(out, "out") = need(d, "device").name.c_str(); });
}

void ember_device_free(ember_device* d) { delete d; }

// --- tensors ---
ember_status ember_tensor_from_data(const void* data, ember_dtype dtype, const int64_t* shape,
                                    int ndim, const ember_device* device, ember_tensor** out) {
  return guarded("ember_tensor_from_data", [&] {
    need(out, "out");
    const DType dt = c_api::to_dtype(dtype);
    const Shape s = c_api::to_shape(shape, ndim);
    for (int64_t v : s)
      if (v < 0) throw ShapeError("[from_data] negative size in shape " + shape_str(s));
    if (!data && numel_of(s) > 0) throw c_api::NullArgument{"data"};
    put(out, from_blob_copy(data, dt, s, dt, device_or_flex(device)));
  });
}

ember_status ember_tensor_zeros(ember_dtype dtype, const int64_t* shape, int ndim,
                                const ember_device* device, ember_tensor** out) {
  return guarded("ember_tensor_zeros", [&] {
    need(out, "out");
    put(out, zeros(c_api::to_shape(shape, ndim),
                   {.dtype = c_api::to_dtype(dtype), .device = device_or_flex(device)}));
  });
}

ember_status ember_tensor_ndim(const ember_tensor* t, int* out) {
  return guarded("ember_tensor_ndim", [&] { need(out, "out") = int(need(t, "t").t.dim()); });
}

ember_status ember_tensor_shape(const ember_tensor* t, int64_t* shape, int cap) {
  return guarded("ember_tensor_shape", [&] {
    const Shape& s = need(t, "t").t.shape();
    if (s.size() > 0) need(shape, "shape");
    if (cap < int(s.size()))
      throw c_api::BufferError{"shape has " + std::to_string(s.size()) + " dims, cap is " +
                               std::to_string(cap)};
    for (size_t i = 0; i < s.size(); ++i) shape[i] = s[i];
  });
}

ember_status ember_tensor_dtype(const ember_tensor* t, ember_dtype* out) {
  return guarded("ember_tensor_dtype", [&] {
    const DType d = need(t, "t").t.dtype();
    if (is_complex(d)) throw DTypeError("[dtype] complex tensors have no ember_dtype");
    need(out, "out") = ember_dtype(uint8_t(d));
  });
}

ember_status ember_tensor_numel(const ember_tensor* t, int64_t* out) {
  return guarded("ember_tensor_numel", [&] { need(out, "out") = need(t, "t").t.numel(); });
}

ember_status ember_tensor_nbytes(const ember_tensor* t, size_t* out) {
  return guarded("ember_tensor_nbytes", [&] { need(out, "out") = need(t, "t").t.nbytes(); });
}

ember_status ember_tensor_device(const ember_tensor* t, ember_device** out) {
  return guarded("ember_tensor_device",
                 [&] { need(out, "out") = new_device(need(t, "t").t.device()); });
}

ember_status ember_tensor_read(const ember_tensor* t, void* dst, size_t nbytes) {
  return guarded("ember_tensor_read", [&] {
    const Tensor& x = need(t, "t").t;
    if (nbytes != x.nbytes())
      throw c_api::BufferError{"the tensor has " + std::to_string(x.nbytes()) + " bytes, nbytes is " +
                               std::to_string(nbytes)};
    if (nbytes == 0) return;
    need(dst, "dst");
    TensorData d = x.data();
    std::memcpy(dst, d.bytes.data(), nbytes);
  });
}

ember_status ember_tensor_read_f32(const ember_tensor* t, float* dst, int64_t count) {
  return guarded("ember_tensor_read_f32", [&] {
    const Tensor& x = need(t, "t").t;
    if (count != x.numel())
      throw c_api::BufferError{"the tensor has " + std::to_string(x.numel()) +
                               " elements, count is " + std::to_string(count)};
    if (count == 0) return;
    need(dst, "dst");
    std::vector<float> v = x.to_vector<float>();
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
  });
}

ember_status ember_tensor_to_dtype(const ember_tensor* t, ember_dtype dtype, ember_tensor** out) {
  return guarded("ember_tensor_to_dtype", [&] {
    const Tensor& x = need(t, "t").t;
    need(out, "out");
    put(out, x.to(c_api::to_dtype(dtype)));
  });
}

ember_status ember_tensor_to_device(const ember_tensor* t, const ember_device* d,
                                    ember_tensor** out) {
  return guarded("ember_tensor_to_device", [&] {
    const Tensor& x = need(t, "t").t;
    const Device dev = need(d, "device").d;
    need(out, "out");
    put(out, x.to(dev));
  });
}

ember_status ember_tensor_reshape(const ember_tensor* t, const int64_t* shape, int ndim,
                                  ember_tensor** out) {
  return guarded("ember_tensor_reshape", [&] {
    const Tensor& x = need(t, "t").t;
    need(out, "out");
    put(out, x.reshape(c_api::to_shape(shape, ndim)));
  });
}

ember_status ember_tensor_str(const ember_tensor* t, char** out) {
  return guarded("ember_tensor_str",
                 [&] { need(out, "out") = c_api::dup_string(need(t, "t").t.str()); });
}

void ember_string_free(char* s) { std::free(s); }
void ember_tensor_free(ember_tensor* t) { delete t; }

// --- ops ---
ember_status ember_add(const ember_tensor* a, const ember_tensor* b, ember_tensor** out) {
  return binary("ember_add", [](const Tensor& x, const Tensor& y) { return x + y; }, a, b, out);
}
ember_status ember_sub(const ember_tensor* a, const ember_tensor* b, ember_tensor** out) {
  return binary("ember_sub", [](const Tensor& x, const Tensor& y) { return x - y; }, a, b, out);
}
ember_status ember_mul(const ember_tensor* a, const ember_tensor* b, ember_tensor** out) {
  return binary("ember_mul", [](const Tensor& x, const Tensor& y) { return x * y; }, a, b, out);
}
ember_status ember_div(const ember_tensor* a, const ember_tensor* b, ember_tensor** out) {
  return binary("ember_div", [](const Tensor& x, const Tensor& y) { return x / y; }, a, b, out);
}
ember_status ember_matmul(const ember_tensor* a, const ember_tensor* b, ember_tensor** out) {
  return binary("ember_matmul", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, a,
                b, out);
}

ember_status ember_relu(const ember_tensor* x, ember_tensor** out) {
  return guarded("ember_relu", [&] {
    const Tensor& t = need(x, "x").t;
    need(out, "out");
    put(out, relu(t));
  });
}

ember_status ember_softmax(const ember_tensor* x, int64_t dim, ember_tensor** out) {
  return guarded("ember_softmax", [&] {
    const Tensor& t = need(x, "x").t;
    need(out, "out");
    put(out, softmax(t, dim));
  });
}

ember_status ember_log_softmax(const ember_tensor* x, int64_t dim, ember_tensor** out) {
  return guarded("ember_log_softmax", [&] {
    const Tensor& t = need(x, "x").t;
    need(out, "out");
    put(out, log_softmax(t, dim));
  });
}

ember_status ember_argmax(const ember_tensor* x, int64_t dim, int keepdim, ember_tensor** out) {
  return guarded("ember_argmax", [&] {
    const Tensor& t = need(x, "x").t;
    need(out, "out");
    put(out, argmax(t, dim, keepdim != 0));
  });
}

void ember_attrs_init(ember_attrs* a) {
  if (a) *a = ember_attrs{};
  if (a) a->dtype = EMBER_F32;
}

ember_status ember_op_call(const char* name, const ember_tensor* const* inputs, int n_inputs,
                           const ember_attrs* attrs, ember_tensor** outputs, int cap,
                           int* n_out) {
  return guarded("ember_op_call", [&] {
    need(name, "name");
    const OpId op = op_from_name(name);
    need(n_out, "n_out");
    if (n_inputs < 0) throw ValueError("n_inputs must be >= 0");
    if (n_inputs > 0) need(inputs, "inputs");
    std::vector<Tensor> in;
    for (int i = 0; i < n_inputs; ++i) {
      if (!inputs[i])
        throw ValueError(std::string("[") + name + "] input " + std::to_string(i) + " is NULL");
      in.push_back(inputs[i]->t);
    }
    Attrs at;
    if (attrs) {
      auto ints = [&](const int64_t* v, int n, const char* what) {
        if (n < 0 || n > EMBER_ATTRS_MAX_INTS)
          throw ValueError(std::string(what) + " count must be 0.." +
                           std::to_string(EMBER_ATTRS_MAX_INTS));
        return IntVec(std::span<const int64_t>(v, size_t(n)));
      };
      at.ints = ints(attrs->ints, attrs->n_ints, "ints");
      at.ints2 = ints(attrs->ints2, attrs->n_ints2, "ints2");
      at.ints3 = ints(attrs->ints3, attrs->n_ints3, "ints3");
      at.ints4 = ints(attrs->ints4, attrs->n_ints4, "ints4");
      for (int k = 0; k < 4; ++k) {
        at.i[k] = attrs->i[k];
        at.f[k] = attrs->f[k];
        at.b[k] = attrs->b[k] != 0;
      }
      if (attrs->n_s < 0 || attrs->n_s > 3) throw ValueError("n_s must be 0..3");
      for (int k = 0; k < attrs->n_s; ++k) at.s[k] = Scalar(attrs->s[k]);
      at.dtype = c_api::to_dtype(attrs->dtype);
      at.has_dtype = attrs->has_dtype != 0;
      if (attrs->mode < 0 || attrs->mode > 255) throw ValueError("mode must be 0..255");
      at.mode = uint8_t(attrs->mode);
    }
    at.device = in.empty() ? Device::flex() : in.front().device();
    TensorList res = dispatch(op, at, std::span<const Tensor>(in.data(), in.size()));
    if (int(res.size()) > cap)
      throw c_api::BufferError{std::string("[") + name + "] gives " + std::to_string(res.size()) +
                               " outputs, cap is " + std::to_string(cap)};
    if (!res.empty()) need(outputs, "outputs");
    for (size_t i = 0; i < res.size(); ++i) put(&outputs[i], std::move(res[i]));
    *n_out = int(res.size());
  });
}

}  // extern "C"
