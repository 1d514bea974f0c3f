// distributed::init: reads how the process was launched (mpirun's OMPI_COMM_WORLD_* or
// torchrun-style RANK/WORLD_SIZE/...), starts the world group on the transports this build has,
// and makes sub-groups. MPI is finalized by shutdown() or at exit.
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "ember/cuda.h"
#include "ember/distributed/group.h"

namespace ember::distributed {

using std::chrono::milliseconds;

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int lo, int fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || *end || x < lo || x > 1 << 24)
    throw ValueError(std::string("[init] expected ") + name + " to be an integer >= " +
                     std::to_string(lo) + ", found \"" + v + "\"");
  return int(x);
}

milliseconds timeout_of(const InitOptions& o) {
  if (o.timeout) {
    if (o.timeout->count() <= 0)
      throw ValueError("[init] expected a positive timeout, found " +
                       std::to_string(o.timeout->count()) + " ms");
    return *o.timeout;
  }
  if (const char* v = env("EMBER_DIST_TIMEOUT")) {
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (*end || !(s > 0) || s > 1e7)
      throw ValueError(std::string("[init] expected EMBER_DIST_TIMEOUT to be a positive number "
                                   "of seconds, found \"") + v + "\"");
    return milliseconds(int64_t(s * 1000));
  }
  return milliseconds(300000);
}

struct State {
  std::mutex mu;
  std::unique_ptr<ProcessGroup> world;
  LaunchInfo launch;
  std::shared_ptr<detail::TcpRendezvous> rendezvous;  // a torchrun-style world of several
  bool finalized = false;
};
State& state() {
  static State* s = new State;  // never destroyed: groups may outlive static destruction
  return *s;
}

#ifdef EMBER_HAVE_MPI
bool clean_exit() {
  State& s = state();
  return !s.world || !s.world->impl().failed();
}
#endif

void at_exit() {
#ifdef EMBER_HAVE_MPI
  State& s = state();
  if (!s.finalized && s.world && s.world->host_transport() == Transport::Mpi)
    detail::mpi_finalize(clean_exit());
#endif
}

#ifdef EMBER_HAVE_NCCL
int gpu_of(const LaunchInfo& l) { return l.local_rank % std::max(cuda::device_count(), 1); }

// The NCCL communicator of group `g`: rank 0's unique id reaches the others through the group's
// MPI communicator, or (a torchrun-style world) through the TCP rendezvous.
std::function<std::shared_ptr<detail::Comm>()> nccl_maker(
    ProcessGroup::Impl* g, const LaunchInfo& l, std::shared_ptr<detail::TcpRendezvous> rdv) {
  return [g, l, rdv]() -> std::shared_ptr<detail::Comm> {
    if (cuda::device_count() == 0) return nullptr;
    std::vector<uint8_t> id;
    if (g->rank == 0) id = detail::nccl_unique_id();
    if (g->size() > 1) {
      if (g->host) {
        id.resize(128);
        auto r = g->host->broadcast(id.data(), id.size(), DType::U8, 0);
        detail::wait_for(*r, "init (NCCL)", g->who(), std::chrono::steady_clock::now(),
                         g->timeout);
      } else {
        id.resize(128);
        const std::vector<uint8_t> all = rdv->all_gather(id, g->timeout);
        id.assign(all.begin(), all.begin() + 128);  // rank 0's
      }
    }
    return detail::nccl_comm(g->rank, g->size(), gpu_of(l), id, g->timeout, g->who());
  };
}
#endif

}  // namespace

LaunchInfo launch_info() {
  LaunchInfo l;
  if (env("OMPI_COMM_WORLD_SIZE")) {
    l.launcher = "mpirun";
    l.world_size = env_int("OMPI_COMM_WORLD_SIZE", 1, 1);
    l.rank = env_int("OMPI_COMM_WORLD_RANK", 0, 0);
    l.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
  } else if (env("WORLD_SIZE")) {
    l.launcher = "torchrun";
    l.world_size = env_int("WORLD_SIZE", 1, 1);
    l.rank = env_int("RANK", 0, -1);
    if (l.rank < 0) throw ValueError("[init] WORLD_SIZE is set but RANK is not");
    l.local_rank = env_int("LOCAL_RANK", 0, l.rank);
    if (l.world_size > 1) {
      const char* a = env("MASTER_ADDR");
      if (!a) throw ValueError("[init] WORLD_SIZE > 1 needs MASTER_ADDR (rank 0's address)");
      l.master_addr = a;
      l.master_port = env_int("MASTER_PORT", 1, 0);
      if (l.master_port == 0 || l.master_port > 65535)
        throw ValueError("[init] WORLD_SIZE > 1 needs MASTER_PORT (a TCP port, 1..65535)");
    }
  } else {
    l.launcher = "none";
  }
  if (l.rank >= l.world_size)
    throw ValueError("[init] rank " + std::to_string(l.rank) + " is not below the world size " +
                     std::to_string(l.world_size));
  return l;
}

ProcessGroup& init(const InitOptions& o) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.world) return *s.world;
  if (s.finalized) throw ValueError("[init] distributed::shutdown() already ran");
  const LaunchInfo l = launch_info();
  const milliseconds timeout = timeout_of(o);
  const char* dbg = env("EMBER_DIST_DEBUG");
  const bool debug = o.debug.value_or(dbg && std::string(dbg) == "1");
  std::shared_ptr<detail::Comm> host;
  if (l.launcher == "mpirun") {
#ifdef EMBER_HAVE_MPI
    host = detail::mpi_world();
    if (host->size() != l.world_size || host->rank() != l.rank)
      throw DistributedError("[init] MPI reports rank " + std::to_string(host->rank()) + " of " +
                             std::to_string(host->size()) + ", the environment rank " +
                             std::to_string(l.rank) + " of " + std::to_string(l.world_size));
#else
    if (l.world_size > 1)
      throw DeviceError("[init] launched by mpirun, but this build has no MPI (configure with "
                        "Debian's libopenmpi-dev installed)");
#endif
  }
  std::vector<int> ranks(size_t(l.world_size));
  for (int i = 0; i < l.world_size; ++i) ranks[size_t(i)] = i;
  auto g = detail::make_group(host, std::move(ranks), l.rank, timeout, debug);
#ifdef EMBER_HAVE_NCCL
  if (l.launcher == "torchrun" && l.world_size > 1)
    s.rendezvous = std::make_shared<detail::TcpRendezvous>(l);
  g->make_cuda = nccl_maker(g.get(), l, s.rendezvous);
  // torchrun-style: no MPI to carry the unique id later, so the rendezvous happens now.
  if (l.launcher == "torchrun" && l.world_size > 1) g->cuda = g->make_cuda();
#else
  if (l.launcher == "torchrun" && l.world_size > 1)
    throw DeviceError("[init] a torchrun-style launch uses NCCL, which this build lacks "
                      "(EMBER_CUDA with NCCL found); launch with mpirun for host tensors");
#endif
  s.launch = l;
  s.world = std::make_unique<ProcessGroup>(g);
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit(at_exit);
  }
  return *s.world;
}

bool is_initialized() { return state().world != nullptr; }

ProcessGroup& world() {
  State& s = state();
  if (!s.world) throw ValueError("[distributed] call distributed::init() first");
  return *s.world;
}

std::optional<ProcessGroup> new_group(const std::vector<int>& ranks) {
  ProcessGroup& w = world();
  ProcessGroup::Impl& wi = w.impl();
  wi.check_usable("new_group");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= w.size())
      throw IndexError("[new_group] rank " + std::to_string(ranks[i]) +
                       " is not a rank of a world of size " + std::to_string(w.size()));
    if (i && ranks[i] <= ranks[i - 1])
      throw ValueError("[new_group] expected sorted, distinct ranks, found " +
                       std::to_string(ranks[i - 1]) + " before " + std::to_string(ranks[i]));
  }
  if (ranks.empty()) throw ValueError("[new_group] expected at least one rank");
  int me = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == w.rank()) me = int(i);
  std::shared_ptr<detail::Comm> host;
  State& s = state();
  if (wi.host) {
    host = wi.host->split(ranks, wi.timeout);
  } else if (w.size() > 1 && !s.rendezvous) {
    throw NotImplementedError("[new_group] sub-groups need MPI or a torchrun-style launch");
  }
  std::vector<uint8_t> id;  // torchrun-style: the sub-group's NCCL id, over the rendezvous
#ifdef EMBER_HAVE_NCCL
  if (!wi.host && s.rendezvous)
    id = detail::subgroup_blob(*s.rendezvous, ranks, 128, detail::nccl_unique_id, wi.timeout);
#endif
  if (me < 0) return std::nullopt;
  auto g = detail::make_group(host, ranks, me, wi.timeout, wi.debug);
#ifdef EMBER_HAVE_NCCL
  LaunchInfo l = s.launch;
  g->make_cuda = nccl_maker(g.get(), l, s.rendezvous);
  if (!id.empty()) {  // no later channel for the id: the communicator is made now
    const int dev = gpu_of(l);
    g->cuda = detail::nccl_comm(me, int(ranks.size()), dev, id, wi.timeout, g->who());
  }
#endif
  return ProcessGroup(g);
}

void shutdown() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.finalized) return;
#ifdef EMBER_HAVE_MPI
  const bool mpi = s.world && s.world->host_transport() == Transport::Mpi;
  const bool clean = clean_exit();
  s.world.reset();
  if (mpi) detail::mpi_finalize(clean);
#else
  s.world.reset();
#endif
  s.rendezvous.reset();
  s.finalized = true;
}

Work all_reduce(Tensor& t, ReduceOp op) { return world().all_reduce(t, op); }
Work broadcast(Tensor& t, int root) { return world().broadcast(t, root); }
Work all_gather(Tensor& out, const Tensor& in) { return world().all_gather(out, in); }
Work reduce_scatter(Tensor& out, const Tensor& in, ReduceOp op) {
  return world().reduce_scatter(out, in, op);
}
Work all_to_all(Tensor& out, const Tensor& in) { return world().all_to_all(out, in); }
void barrier() { world().barrier().wait(); }
int rank() { return world().rank(); }
int world_size() { return world().size(); }

}  // namespace ember::distributed
