#pragma once
// Status words of the kernels a device runs (private to ember/backends/cuda): a generated kernel
// that can fail (a target out of range in a loss, an index in a gather) gets a word of its own in
// device memory, cleared, with the host's explanation of a failure beside it. The words are read
// back at the device's next sync (a host read, synchronize(), EMBER_CUDA_SYNC=1 after each
// launch), and the first failure in launch order is raised as the ember error its op raises on
// the host.
#include <cstdint>
#include <functional>

namespace ember::cuda {

/// Throws the error of a failed word (code > 0; cpu::jit::KernelStatus's layout).
using StatusCheck = std::function<void(int32_t code, int64_t detail)>;

/// A cleared 16-byte word in dev's memory for one launch on dev's default stream. When the
/// device's words are all taken, the pending ones are read first (a sync).
void* status_slot(int dev, StatusCheck check);
/// Reads the words of the launches since the last call (ordered after them on dev's default
/// stream) and raises the first failure; clears them either way. Nothing to read: no sync.
void raise_kernel_status(int dev);

}  // namespace ember::cuda
