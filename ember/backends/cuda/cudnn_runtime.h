#pragma once
// cuDNN for the cuda backend (private), loaded at first use with dlopen("libcudnn.so.9"), so
// libember loads and runs on machines without cuDNN: there (or with EMBER_CUDNN=0 in the
// environment) `cudnn_available()` is false and the convolution, pooling and batch-norm kernels
// hand their calls to the host fallback, whose error under EMBER_CUDA_FALLBACK=error says
// "cuDNN not found". The loaded library's major version must be 9 (cudnnGetVersion).
//
// The functions come through a table of pointers typed from cudnn.h (only the headers are needed
// at build time). Each device has one handle, bound to its default stream; workspaces come from
// ember's stream-ordered pool. Every status is checked: a failure throws DeviceError
// "[op] what: CUDNN_STATUS_... (status n)", the name from cudnnGetErrorString.
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ember/backends/backend.h"
#include "ember/backends/cuda/cudnn_ops.h"
#include "ember/dtype.h"

namespace ember::cuda {

/// The cuDNN entry points ember calls, filled by dlsym.
struct CudnnApi {
#define EMBER_CUDNN_FNS(X)                                                                   \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)  \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor)                                \
  X(cudnnDestroyTensorDescriptor) X(cudnnCreateFilterDescriptor)                              \
  X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor)                               \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                      \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                             \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)              \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward)                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                              \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)             \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                            \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter)         \
  X(cudnnAddTensor) X(cudnnCreatePoolingDescriptor) X(cudnnSetPoolingNdDescriptor)            \
  X(cudnnDestroyPoolingDescriptor) X(cudnnPoolingForward) X(cudnnPoolingBackward)             \
  X(cudnnDeriveBNTensorDescriptor) X(cudnnBatchNormalizationForwardTraining)                  \
  X(cudnnBatchNormalizationForwardInference) X(cudnnBatchNormalizationBackward)
#define EMBER_X(f) decltype(&::f) f = nullptr;
  EMBER_CUDNN_FNS(EMBER_X)
#undef EMBER_X
  size_t version = 0;
};

/// The loaded API, or null when cuDNN is missing, of another major version, or turned off
/// (EMBER_CUDNN=0). Loaded once per process.
const CudnnApi* cudnn();
inline bool cudnn_available() { return cudnn() != nullptr; }
/// Why cudnn() is null ("cuDNN not found: libcudnn.so.9: cannot open ..."); empty when loaded.
const std::string& cudnn_unavailable_reason();

/// Throws DeviceError "[op] what: CUDNN_STATUS_X (status n)" unless `s` is success.
void check_dnn(cudnnStatus_t s, const char* op, const char* what);

/// Device `dev`'s handle, bound to its default stream (made on first use).
cudnnHandle_t dnn_handle(int dev);

/// cuDNN's data type for f32/f16/bf16 (the only dtypes these kernels take).
cudnnDataType_t dnn_type(DType d);
inline bool dnn_dtype_ok(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

/// Owners of cuDNN descriptors.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  /// Sizes and strides (in elements) of an nd-tensor, nd >= 4 (pad with unit dims).
  void set(cudnnDataType_t t, int nd, const int* sizes, const int* strides, const char* op);
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PoolDesc();
  ~PoolDesc();
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
};

/// Device memory for a library call's workspace, from the stream-ordered pool (freed, in stream
/// order, when this object goes).
struct Workspace {
  std::shared_ptr<Storage> storage;
  Workspace(size_t bytes, int dev);
  void* ptr() const { return storage && storage->nbytes ? storage->data : nullptr; }
};

/// Hands a call a cuDNN kernel cannot serve to the host fallback (or the op's decomposition when
/// the fallback is off and there is one); `why` is the reason the error names.
TensorList dnn_fallback(const OpCall& call, const char* why);

/// Counters of cudnn_ops.h's cudnn_stats().
void note_dnn_plan(bool hit);
void note_dnn_served();

/// cuDNN's convolution, pooling and batch-norm kernels (cudnn_conv.cpp, cudnn_pool_norm.cpp).
void register_cudnn_conv_kernels(BackendImpl& b);
void register_cudnn_pool_norm_kernels(BackendImpl& b);

}  // namespace ember::cuda
