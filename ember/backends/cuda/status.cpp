// The devices' kernel status words (ember/backends/cuda/status.h): per device one block of
// slots in device memory, handed out in launch order and read back in one copy at a sync.
#include "ember/backends/cuda/status.h"

#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <vector>

#include "ember/backends/cuda/graph.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

constexpr int kSlots = 1024;
constexpr size_t kSlotBytes = 16;

struct Word {
  int32_t code;
  int32_t reserved;
  int64_t detail;
};
static_assert(sizeof(Word) == kSlotBytes);

struct DeviceWords {
  std::mutex mu;
  char* block = nullptr;             // kSlots words, zero when not failed
  std::vector<StatusCheck> pending;  // per slot handed out since the last read
  std::vector<std::shared_ptr<GraphStatus>> graphs;  // graphs replayed since the last read
};
DeviceWords& words(int dev) {
  static DeviceWords* all = new DeviceWords[64];  // never destroyed: kernels may run at exit
  return all[dev];
}

// Reads and clears the pending words (w.mu held); returns the first failure's check and word.
// The words of the graphs replayed since the last read (w.mu held); a failed word is cleared.
bool drain_graphs(DeviceWords& w, cudaStream_t stream, StatusCheck& check, Word& failed) {
  std::vector<std::shared_ptr<GraphStatus>> graphs = std::move(w.graphs);
  w.graphs.clear();
  for (const auto& g : graphs) {
    std::vector<Word> host(g->checks.size());
    const size_t bytes = host.size() * kSlotBytes;
    ::ember::cuda::check(cudaMemcpyAsync(host.data(), g->block, bytes, cudaMemcpyDeviceToHost, stream),
                         "kernel status", "cudaMemcpyAsync (graph)");
    ::ember::cuda::check(cudaStreamSynchronize(stream), "kernel status", "cudaStreamSynchronize");
    for (size_t i = 0; i < host.size(); ++i)
      if (host[i].code != 0) {
        ::ember::cuda::check(cudaMemsetAsync(g->block, 0, bytes, stream), "kernel status",
                             "cudaMemsetAsync (graph)");
        check = g->checks[i];
        failed = host[i];
        return true;
      }
  }
  return false;
}

bool drain(int dev, DeviceWords& w, StatusCheck& check, Word& failed) {
  if (w.pending.empty() && w.graphs.empty()) return false;
  set_device(dev);
  auto stream = cudaStream_t(stream_handle(nullptr, dev));
  if (w.pending.empty()) return drain_graphs(w, stream, check, failed);
  std::vector<Word> host(w.pending.size());
  const size_t bytes = host.size() * kSlotBytes;
  ::ember::cuda::check(cudaMemcpyAsync(host.data(), w.block, bytes, cudaMemcpyDeviceToHost, stream),
                       "kernel status", "cudaMemcpyAsync");
  ::ember::cuda::check(cudaStreamSynchronize(stream), "kernel status", "cudaStreamSynchronize");
  ::ember::cuda::check(cudaMemsetAsync(w.block, 0, bytes, stream), "kernel status",
                       "cudaMemsetAsync");
  std::vector<StatusCheck> pending = std::move(w.pending);
  w.pending.clear();
  for (size_t i = 0; i < host.size(); ++i)
    if (host[i].code != 0) {
      check = std::move(pending[i]);
      failed = host[i];
      w.graphs.clear();
      return true;
    }
  return drain_graphs(w, stream, check, failed);
}

}  // namespace

void note_graph_replay(int dev, std::shared_ptr<GraphStatus> status) {
  DeviceWords& w = words(dev);
  std::lock_guard lock(w.mu);
  for (const auto& g : w.graphs)
    if (g == status) return;
  w.graphs.push_back(std::move(status));
}

void* status_slot(int dev, StatusCheck check) {
  if (detail::Capture* c = capture_of(dev)) [[unlikely]]
    return capture_status_slot(*c, std::move(check));
  DeviceWords& w = words(dev);
  StatusCheck failed_check;
  Word failed{};
  bool failed_now = false;
  void* slot = nullptr;
  {
    std::lock_guard lock(w.mu);
    if (!w.block) {
      set_device(dev);
      void* p = nullptr;
      ::ember::cuda::check(cudaMalloc(&p, kSlots * kSlotBytes), "kernel status", "cudaMalloc");
      ::ember::cuda::check(cudaMemset(p, 0, kSlots * kSlotBytes), "kernel status", "cudaMemset");
      w.block = static_cast<char*>(p);
    }
    if (w.pending.size() == size_t(kSlots)) failed_now = drain(dev, w, failed_check, failed);
    if (!failed_now) {
      slot = w.block + w.pending.size() * kSlotBytes;
      w.pending.push_back(std::move(check));
    }
  }
  if (failed_now) {
    failed_check(failed.code, failed.detail);  // throws
    throw Error("[kernel status] a kernel failed (code " + std::to_string(failed.code) + ")");
  }
  return slot;
}

void raise_kernel_status(int dev) {
  DeviceWords& w = words(dev);
  StatusCheck check;
  Word failed{};
  {
    std::lock_guard lock(w.mu);
    if (!drain(dev, w, check, failed)) return;
  }
  check(failed.code, failed.detail);  // throws
  throw Error("[kernel status] a kernel failed (code " + std::to_string(failed.code) + ")");
}

}  // namespace ember::cuda
