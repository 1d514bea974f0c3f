#pragma once
// CUDA graphs of captured steps (private; ember/graph.h is the public side, graph.cpp the
// capture and replay). No CUDA header: the allocator, the executor and the backend ask here
// whether a capture is open on their device and hand its memory, tables and status words to it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/status.h"
#include "ember/detail/capture.h"

namespace ember::cuda {

/// A graph's private memory (allocator.cpp): blocks from cudaMalloc, reused within the capture
/// in stream order, kept for the replays, freed when the graph and every storage in it are gone.
class GraphPool {
 public:
  explicit GraphPool(int dev);
  ~GraphPool();
  GraphPool(const GraphPool&) = delete;
  GraphPool& operator=(const GraphPool&) = delete;
  /// A block for `nbytes`: a freed one of about that size, else (or when `fresh`) a new one.
  void* take(size_t nbytes, bool fresh = false);
  void give(void* p);
  /// A block of the stream-ordered pool freed during the capture: freed with this pool.
  void retain(void* p);
  int64_t bytes() const;

 private:
  int dev_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::unordered_map<void*, size_t> sizes_;
  std::vector<void*> blocks_, retained_;
  int64_t bytes_ = 0;
};

/// Whether `s` is a block of a graph's pool.
bool in_graph_pool(const Storage& s);
/// While set (a capture of `dev` is open), the capturing thread's allocations on `dev` come from
/// `pool` and frees of other blocks on `dev` are held back; reset with null when it closes.
void set_capture_pool(int dev, const std::shared_ptr<GraphPool>& pool);
/// The pool of capture `c` (a capture this backend opened).
const std::shared_ptr<GraphPool>& capture_pool_of(detail::Capture& c);

/// The open capture of cuda:`dev` made by this thread, or null.
detail::Capture* capture_of(int dev);
/// Device bytes holding a copy of `host` for as long as the graph lives (kernel tables, graph
/// constants): what the captured work reads on every replay.
const void* capture_constant(detail::Capture& c, const void* host, size_t bytes);
/// A status word of the graph for a launch inside the capture (see status.h).
void* capture_status_slot(detail::Capture& c, StatusCheck check);
/// After a kernel launch inside the capture: the Philox slots the fusion layer named for it.
void note_capture_launch(detail::Capture& c, const void* fn, unsigned blocks, unsigned threads,
                         const void* args, size_t arg_bytes, long long begin, long long end,
                         long long grain);

/// The status words of a replayed graph, read at the device's next sync (status.cpp).
struct GraphStatus {
  std::shared_ptr<GraphPool> pool;  // holds `block`
  void* block = nullptr;            // one 16-byte word per check; zero until a kernel fails
  std::vector<StatusCheck> checks;
};
void note_graph_replay(int dev, std::shared_ptr<GraphStatus> status);

/// ember::capture on cuda: runs fn with a capture open on `d`'s default stream, returns the
/// instantiated graph and fn's outputs.
std::unique_ptr<detail::GraphExec> capture_graph(const std::function<TensorList()>& fn, Device d,
                                                 TensorList& outputs);

}  // namespace ember::cuda
