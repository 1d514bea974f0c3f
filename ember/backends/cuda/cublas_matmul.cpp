// cuBLASLt products arrive in the next commit; until then matrix products take the host fallback.
#include "ember/backends/cuda/cuda_kernels.h"
namespace ember::cuda {
void register_cublas_kernels(BackendImpl&) {}
}  // namespace ember::cuda
