#pragma once
// ProcessGroup's state (private): the transports of its tensors, its timeout and debug mode, and
// the failure that made it unusable.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/distributed/comm.h"

namespace ember::distributed {

struct ProcessGroup::Impl {
  std::shared_ptr<detail::Comm> host;  // Mpi, or null for a world of one / a torchrun launch
  std::shared_ptr<detail::Comm> cuda;  // Nccl, made by make_cuda on first use
  std::function<std::shared_ptr<detail::Comm>()> make_cuda;
  std::vector<int> world_ranks;  // the members' world ranks, in group rank order
  int rank = 0;
  std::chrono::milliseconds timeout{300000};
  bool debug = false;
  std::string failure;  // set after a timeout or a transport error: the group is unusable
  std::mutex mu;        // guards cuda's creation and failure

  int size() const { return int(world_ranks.size()); }
  /// "rank 1 of 2" (with the world ranks for a sub-group), for error messages.
  std::string who() const;
  /// Throws DistributedError naming `op` if the group failed before.
  void check_usable(const char* op);
  /// The transport for tensors on `d`; null for a world of one (the group copies itself).
  detail::Comm* comm_for(Device d, const char* op);
  void fail(const std::string& msg);
  bool failed();
};

namespace detail {
/// The shared state a Work reports on.
std::shared_ptr<ProcessGroup::Impl> make_group(std::shared_ptr<Comm> host, std::vector<int> ranks,
                                               int rank, std::chrono::milliseconds timeout,
                                               bool debug);
}  // namespace detail

}  // namespace ember::distributed
