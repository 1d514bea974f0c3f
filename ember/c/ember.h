/* ember's C ABI (C99): tensors, devices, ops, safetensors state dicts and modules behind opaque
 * handles, for C programs, other languages' bindings and WebAssembly (web/ember.js).
 *
 * Rules (docs/c_api.md):
 * - Every function that can fail returns an ember_status; EMBER_OK is 0. On failure the outputs
 *   are left untouched and ember_last_error() returns a message naming the entry point and,
 *   for an ember error, the op ("ember_matmul: [matmul] shapes [2,3] and [4,5]: ...").
 * - No exception ever crosses this interface, and no call aborts on bad input: NULL handles,
 *   wrong shapes, unknown names and bad files all come back as a status.
 * - Every handle an ember_* call returns is owned by the caller and freed with its *_free
 *   function (which accepts NULL). Handles are independent: freeing a module does not invalidate
 *   a tensor taken from it, which keeps its storage alive until it is freed itself.
 * - A handle may be used from one thread at a time; the last error is per thread. */
#ifndef EMBER_C_EMBER_H
#define EMBER_C_EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__EMSCRIPTEN__) /* EMSCRIPTEN_KEEPALIVE: exported from the .wasm to JavaScript */
#define EMBER_C_API __attribute__((used, visibility("default")))
#elif defined(__GNUC__)
#define EMBER_C_API __attribute__((visibility("default")))
#else
#define EMBER_C_API
#endif

/** What a call did. The values are stable (bindings may hard-code them). */
typedef enum ember_status {
  EMBER_OK = 0,
  EMBER_ERR_NULL = 1,            /* a required handle or pointer argument was NULL */
  EMBER_ERR_SHAPE = 2,           /* shapes that do not fit the op (ember::ShapeError) */
  EMBER_ERR_DTYPE = 3,           /* a dtype the op does not take (ember::DTypeError) */
  EMBER_ERR_DEVICE = 4,          /* device mismatch, or a device not built (DeviceError) */
  EMBER_ERR_INDEX = 5,           /* an index out of range (IndexError) */
  EMBER_ERR_VALUE = 6,           /* a bad argument value, unknown name (ValueError) */
  EMBER_ERR_NOT_IMPLEMENTED = 7, /* no kernel for the op here (NotImplementedError) */
  EMBER_ERR_OUT_OF_MEMORY = 8,   /* an allocation failed */
  EMBER_ERR_IO = 9,              /* a file could not be opened or read (store::IOError) */
  EMBER_ERR_FORMAT = 10,         /* not a valid file: bad or truncated safetensors */
  EMBER_ERR_KEY = 11,            /* missing, unexpected or mis-shaped state-dict keys */
  EMBER_ERR_BUFFER = 12,         /* a caller's buffer of the wrong size */
  EMBER_ERR_INTERNAL = 13        /* any other failure (a bug: please report it) */
} ember_status;

/** Element types; the values match ember::DType. */
typedef enum ember_dtype {
  EMBER_BOOL = 0, EMBER_U8 = 1, EMBER_I8 = 2, EMBER_I16 = 3, EMBER_I32 = 4, EMBER_I64 = 5,
  EMBER_F16 = 6, EMBER_BF16 = 7, EMBER_F32 = 8, EMBER_F64 = 9
} ember_dtype;

typedef struct ember_tensor ember_tensor;         /* an ember::Tensor (shares storage) */
typedef struct ember_device ember_device;         /* an ember::Device */
typedef struct ember_module ember_module;         /* an ember::nn::Module */
typedef struct ember_state_dict ember_state_dict; /* named tensors, in order */

/* --- errors and version ------------------------------------------------------------------ */
/** The message of the last failed call on this thread ("" if none); valid until the next
 *  failing call on this thread. */
EMBER_C_API const char* ember_last_error(void);
/** A status's name ("EMBER_ERR_SHAPE"); "EMBER_ERR_UNKNOWN" for a value not listed. */
EMBER_C_API const char* ember_status_name(ember_status s);
/** ember's version, "MAJOR.MINOR.PATCH". */
EMBER_C_API const char* ember_version(void);
/** Bytes per element of `d` (0 for a value not listed). */
EMBER_C_API size_t ember_dtype_size(ember_dtype d);
/** The number of threads ember's CPU backends use; set_num_threads(n >= 1) changes it. */
EMBER_C_API int ember_num_threads(void);
EMBER_C_API ember_status ember_set_num_threads(int n);

/* --- devices ----------------------------------------------------------------------------- */
/** Device::flex(): portable C++, the only device of the WebAssembly build. */
EMBER_C_API ember_status ember_device_flex(ember_device** out);
/** Device::cpu(): the native CPU backend (lazy, fused); EMBER_ERR_DEVICE where not built. */
EMBER_C_API ember_status ember_device_cpu(ember_device** out);
/** Device::cuda(index); EMBER_ERR_DEVICE in a build without CUDA or with no such GPU. */
EMBER_C_API ember_status ember_device_cuda(int index, ember_device** out);
/** Parses "flex", "cpu", "cuda", "cuda:1" (Device's own spelling). */
EMBER_C_API ember_status ember_device_parse(const char* name, ember_device** out);
/** The device's name ("flex", "cuda:0"); the string lives as long as the handle. */
EMBER_C_API ember_status ember_device_name(const ember_device* d, const char** out);
EMBER_C_API void ember_device_free(ember_device* d);

/* --- tensors ----------------------------------------------------------------------------- */
/** A tensor of `shape` (ndim dims, 0 for a scalar) and `dtype` holding a copy of `data`
 *  (row-major, numel * ember_dtype_size(dtype) bytes) on `device` (NULL: Device::flex()).
 *  `data` may be NULL only when the tensor has no elements. */
EMBER_C_API ember_status ember_tensor_from_data(const void* data, ember_dtype dtype,
                                                const int64_t* shape, int ndim,
                                                const ember_device* device, ember_tensor** out);
/** A tensor of zeros. */
EMBER_C_API ember_status ember_tensor_zeros(ember_dtype dtype, const int64_t* shape, int ndim,
                                            const ember_device* device, ember_tensor** out);
EMBER_C_API ember_status ember_tensor_ndim(const ember_tensor* t, int* out);
/** Copies min(ndim, cap) sizes into `shape`; EMBER_ERR_BUFFER when cap < ndim. */
EMBER_C_API ember_status ember_tensor_shape(const ember_tensor* t, int64_t* shape, int cap);
EMBER_C_API ember_status ember_tensor_dtype(const ember_tensor* t, ember_dtype* out);
EMBER_C_API ember_status ember_tensor_numel(const ember_tensor* t, int64_t* out);
EMBER_C_API ember_status ember_tensor_nbytes(const ember_tensor* t, size_t* out);
/** A new handle to the device the tensor lives on. */
EMBER_C_API ember_status ember_tensor_device(const ember_tensor* t, ember_device** out);
/** Copies the elements, row-major, into `dst`; `nbytes` must equal ember_tensor_nbytes (else
 *  EMBER_ERR_BUFFER). Waits for pending work (a lazy device's queue). */
EMBER_C_API ember_status ember_tensor_read(const ember_tensor* t, void* dst, size_t nbytes);
/** Copies the elements converted to f32 into `dst` (`count` must equal numel). */
EMBER_C_API ember_status ember_tensor_read_f32(const ember_tensor* t, float* dst, int64_t count);
/** t.to(dtype) and t.to(device): a new handle (the same storage when nothing changes). */
EMBER_C_API ember_status ember_tensor_to_dtype(const ember_tensor* t, ember_dtype dtype,
                                               ember_tensor** out);
EMBER_C_API ember_status ember_tensor_to_device(const ember_tensor* t, const ember_device* d,
                                                ember_tensor** out);
/** t.reshape(shape) (one size may be -1). */
EMBER_C_API ember_status ember_tensor_reshape(const ember_tensor* t, const int64_t* shape,
                                              int ndim, ember_tensor** out);
/** A tensor's printed form, like PyTorch's; free it with ember_string_free. */
EMBER_C_API ember_status ember_tensor_str(const ember_tensor* t, char** out);
EMBER_C_API void ember_string_free(char* s);
EMBER_C_API void ember_tensor_free(ember_tensor* t);

/* --- ops --------------------------------------------------------------------------------- */
EMBER_C_API ember_status ember_add(const ember_tensor* a, const ember_tensor* b,
                                   ember_tensor** out);
EMBER_C_API ember_status ember_sub(const ember_tensor* a, const ember_tensor* b,
                                   ember_tensor** out);
EMBER_C_API ember_status ember_mul(const ember_tensor* a, const ember_tensor* b,
                                   ember_tensor** out);
EMBER_C_API ember_status ember_div(const ember_tensor* a, const ember_tensor* b,
                                   ember_tensor** out);
EMBER_C_API ember_status ember_matmul(const ember_tensor* a, const ember_tensor* b,
                                      ember_tensor** out);
EMBER_C_API ember_status ember_relu(const ember_tensor* x, ember_tensor** out);
/** softmax / log_softmax along `dim` (negative counts from the end). */
EMBER_C_API ember_status ember_softmax(const ember_tensor* x, int64_t dim, ember_tensor** out);
EMBER_C_API ember_status ember_log_softmax(const ember_tensor* x, int64_t dim,
                                           ember_tensor** out);
/** argmax along `dim` (int64 result). */
EMBER_C_API ember_status ember_argmax(const ember_tensor* x, int64_t dim, int keepdim,
                                      ember_tensor** out);

/** The attribute slots every op call carries (ember::Attrs); each op documents its use of them
 *  where its inference lives (the files under ember/ops). Start from ember_attrs_init. */
#define EMBER_ATTRS_MAX_INTS 8
typedef struct ember_attrs {
  int64_t ints[EMBER_ATTRS_MAX_INTS]; /* dims / shape / permutation / kernel size */
  int n_ints;
  int64_t ints2[EMBER_ATTRS_MAX_INTS]; /* stride */
  int n_ints2;
  int64_t ints3[EMBER_ATTRS_MAX_INTS]; /* padding */
  int n_ints3;
  int64_t ints4[EMBER_ATTRS_MAX_INTS]; /* dilation / output padding */
  int n_ints4;
  int64_t i[4];     /* dim, groups, counts, ... */
  double f[4];      /* eps, alpha, beta, p, ... */
  int b[4];         /* keepdim and other flags (0 or 1) */
  double s[3];      /* scalar operands and fill values, as doubles ... */
  int n_s;          /* ... of which the first n_s are given (the rest keep Scalar's default) */
  ember_dtype dtype;
  int has_dtype;
  int mode;         /* the op's mode enum (ember/ops/modes.h) */
} ember_attrs;
/** Zeroes `a` (every slot at ember::Attrs's default). */
EMBER_C_API void ember_attrs_init(ember_attrs* a);
/** Runs the registry op `name` ("add", "conv2d", "max_pool2d", ... as ember/ops/op_list.h
 *  spells them) on `inputs` through the dispatcher, like the C++ front end does after checking
 *  its arguments. `attrs` NULL means all defaults. Writes up to `cap` output handles to
 *  `outputs` and their count to `*n_out`; EMBER_ERR_BUFFER (nothing written) when the op gives
 *  more than `cap`. Unknown names are EMBER_ERR_VALUE. */
EMBER_C_API ember_status ember_op_call(const char* name, const ember_tensor* const* inputs,
                                       int n_inputs, const ember_attrs* attrs,
                                       ember_tensor** outputs, int cap, int* n_out);

/* --- state dicts (safetensors) ----------------------------------------------------------- */
/** Reads every tensor of a safetensors file (validated: EMBER_ERR_IO, EMBER_ERR_FORMAT). */
EMBER_C_API ember_status ember_state_dict_load_file(const char* path, ember_state_dict** out);
/** The same from the file's bytes in memory (copied; `data` may be freed after the call). */
EMBER_C_API ember_status ember_state_dict_load_bytes(const void* data, size_t size,
                                                     ember_state_dict** out);
/** An empty state dict, for ember_state_dict_set. */
EMBER_C_API ember_status ember_state_dict_new(ember_state_dict** out);
EMBER_C_API ember_status ember_state_dict_size(const ember_state_dict* sd, size_t* out);
/** The i-th key; the string lives as long as the state dict. */
EMBER_C_API ember_status ember_state_dict_key(const ember_state_dict* sd, size_t i,
                                              const char** out);
/** A new handle to the tensor under `key` (EMBER_ERR_KEY when absent). */
EMBER_C_API ember_status ember_state_dict_get(const ember_state_dict* sd, const char* key,
                                              ember_tensor** out);
/** Adds `key` (or replaces its tensor); the state dict holds its own reference. */
EMBER_C_API ember_status ember_state_dict_set(ember_state_dict* sd, const char* key,
                                              const ember_tensor* t);
/** Writes the state dict to a safetensors file (atomically). */
EMBER_C_API ember_status ember_state_dict_save_file(const ember_state_dict* sd, const char* path);
EMBER_C_API void ember_state_dict_free(ember_state_dict* sd);

/* --- modules ----------------------------------------------------------------------------- */
/** The Fashion-MNIST CNN, ember::models::FashionCnn (conv1, conv2, fc1, fc2; input
 *  [N, 1, 28, 28] f32, output [N, 10] logits), freshly initialised on Device::flex(). */
EMBER_C_API ember_status ember_model_fashion_cnn(ember_module** out);
/** An MLP: Linear(sizes[0], sizes[1]), ReLU, ..., Linear(sizes[n-2], sizes[n-1]), as an
 *  nn::Sequential (keys "0.weight", "0.bias", "2.weight", ... like torch.nn.Sequential);
 *  n >= 2 and every size >= 1. */
EMBER_C_API ember_status ember_model_mlp(const int64_t* sizes, int n, ember_module** out);
/** Copies `sd`'s tensors into the module's parameters and buffers (floating dtypes are
 *  converted). strict != 0: missing or unexpected keys are EMBER_ERR_KEY. On error nothing
 *  changes. */
EMBER_C_API ember_status ember_module_load_state_dict(ember_module* m, const ember_state_dict* sd,
                                                      int strict);
/** The module's parameters and buffers (handles sharing their storage). */
EMBER_C_API ember_status ember_module_state_dict(const ember_module* m, ember_state_dict** out);
/** Moves the module's parameters and buffers to `d`. */
EMBER_C_API ember_status ember_module_to(ember_module* m, const ember_device* d);
/** train(on != 0) / eval(). */
EMBER_C_API ember_status ember_module_train(ember_module* m, int on);
EMBER_C_API ember_status ember_module_num_parameters(const ember_module* m, int64_t* out);
/** forward(x) without recording gradients (inference). */
EMBER_C_API ember_status ember_module_forward(ember_module* m, const ember_tensor* x,
                                              ember_tensor** out);
/** The module's printed structure (repr()); free it with ember_string_free. */
EMBER_C_API ember_status ember_module_repr(const ember_module* m, char** out);
/** One training step for a classifier: logits = forward(x) with gradients, loss =
 *  cross_entropy(logits, labels) (labels int64 [N]), then SGD with momentum 0.9 at `lr`
 *  (the module keeps the optimizer state between calls). Writes the loss to `*loss`. */
EMBER_C_API ember_status ember_module_train_step_sgd(ember_module* m, const ember_tensor* x,
                                                     const ember_tensor* labels, double lr,
                                                     float* loss);
EMBER_C_API void ember_module_free(ember_module* m);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_C_EMBER_H */
