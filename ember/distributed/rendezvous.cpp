// The torchrun-style rendezvous: rank 0 listens on MASTER_ADDR:MASTER_PORT (for the life of the
// world, so new_group can use it again) and in each round every other rank connects (retrying
// while rank 0 starts), sends its blob and receives every rank's: the NCCL unique ids of the
// world and of sub-groups. POSIX sockets with poll() deadlines: a rank that never comes makes
// the others fail in time.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <thread>

#include "ember/distributed/comm.h"

namespace ember::distributed::detail {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const LaunchInfo& l, const std::string& msg) {
  throw DistributedError("[init] rendezvous at " + l.master_addr + ":" +
                         std::to_string(l.master_port) + ", rank " + std::to_string(l.rank) +
                         " of " + std::to_string(l.world_size) + ": " + msg);
}

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int ms_left(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return d > 0 ? int(std::min<int64_t>(d, 1 << 30)) : 0;
}

// Waits for `events` on fd until the deadline; false on a timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms_left(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

void io_all(const LaunchInfo& l, int fd, void* buf, size_t n, bool write, Clock::time_point dl,
            const char* what) {
  char* p = static_cast<char*>(buf);
  while (n) {
    if (!wait_fd(fd, write ? POLLOUT : POLLIN, dl)) fail(l, std::string("timed out ") + what);
    ssize_t k = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k == 0) fail(l, std::string("the peer closed the connection while ") + what);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail(l, std::string(what) + ": " + std::strerror(errno));
    }
    p += k;
    n -= size_t(k);
  }
}

addrinfo* resolve(const LaunchInfo& l, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  int e = ::getaddrinfo(l.master_addr.c_str(), std::to_string(l.master_port).c_str(), &hints, &res);
  if (e) fail(l, std::string("cannot resolve MASTER_ADDR: ") + ::gai_strerror(e));
  return res;
}

// What a rank sends at the start of a round.
struct Hello {
  int32_t rank;
  uint32_t round;
  uint64_t n;
};

}  // namespace

TcpRendezvous::TcpRendezvous(const LaunchInfo& l) : l_(l) {
  if (l.world_size == 1 || l.rank != 0) return;
  addrinfo* ai = resolve(l, true);
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(ai, ::freeaddrinfo);
  Fd srv(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (srv.fd < 0) fail(l, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(srv.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(srv.fd, ai->ai_addr, ai->ai_addrlen) != 0)
    fail(l, std::string("bind: ") + std::strerror(errno));
  if (::listen(srv.fd, SOMAXCONN) != 0) fail(l, std::string("listen: ") + std::strerror(errno));
  listen_fd_ = srv.fd;
  srv.fd = -1;
}

TcpRendezvous::~TcpRendezvous() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::vector<uint8_t> TcpRendezvous::all_gather(const std::vector<uint8_t>& blob,
                                               std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const LaunchInfo& l = l_;
  const size_t n = blob.size(), W = size_t(l.world_size);
  const uint32_t round = ++round_;
  if (W == 1) return blob;
  std::vector<uint8_t> table(W * n, 0);
  if (l.rank == 0) {
    std::copy(blob.begin(), blob.end(), table.begin());
    std::vector<Fd> peers;
    std::vector<bool> seen(W, false);
    for (size_t joined = 1; joined < W; ++joined) {
      if (!wait_fd(listen_fd_, POLLIN, deadline)) {
        std::string missing;
        for (size_t r = 1; r < W; ++r)
          if (!seen[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        fail(l, "timed out after " + std::to_string(timeout.count()) + " ms: " +
                    std::to_string(W - joined) + " of " + std::to_string(W - 1) +
                    " ranks never connected (ranks " + missing + ")");
      }
      Fd c(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
      if (c.fd < 0) fail(l, std::string("accept: ") + std::strerror(errno));
      Hello h{};
      io_all(l, c.fd, &h, sizeof h, false, deadline, "reading a rank's number");
      if (h.rank <= 0 || size_t(h.rank) >= W || seen[size_t(h.rank)])
        fail(l, "a peer claimed rank " + std::to_string(h.rank) + " (duplicate or out of range)");
      if (h.round != round || h.n != n)
        fail(l, "rank " + std::to_string(h.rank) + " is in rendezvous round " +
                    std::to_string(h.round) + " with " + std::to_string(h.n) +
                    " bytes, this rank in round " + std::to_string(round) + " with " +
                    std::to_string(n) + " (new_group called in a different order?)");
      seen[size_t(h.rank)] = true;
      io_all(l, c.fd, table.data() + size_t(h.rank) * n, n, false, deadline, "reading a blob");
      peers.push_back(std::move(c));
    }
    for (Fd& c : peers) io_all(l, c.fd, table.data(), table.size(), true, deadline, "sending the table");
    return table;
  }
  addrinfo* ai = resolve(l, false);
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(ai, ::freeaddrinfo);
  for (;;) {
    Fd c(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (c.fd < 0) fail(l, std::string("socket: ") + std::strerror(errno));
    if (::connect(c.fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      Hello h{l.rank, round, n};
      io_all(l, c.fd, &h, sizeof h, true, deadline, "sending this rank's number");
      io_all(l, c.fd, const_cast<uint8_t*>(blob.data()), n, true, deadline, "sending this rank's blob");
      io_all(l, c.fd, table.data(), table.size(), false, deadline,
             "waiting for rank 0's table (the unique id)");
      return table;
    }
    if (Clock::now() > deadline)
      fail(l, "timed out after " + std::to_string(timeout.count()) +
                  " ms connecting to rank 0: " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 may not listen yet
  }
}

std::vector<uint8_t> tcp_broadcast(const LaunchInfo& l, std::vector<uint8_t> blob, size_t n,
                                   std::chrono::milliseconds timeout) {
  if (l.world_size == 1) return blob;
  if (l.rank == 0 && blob.size() != n) fail(l, "rank 0's blob has the wrong size");
  if (l.rank != 0) blob.assign(n, 0);
  TcpRendezvous r(l);
  std::vector<uint8_t> all = r.all_gather(blob, timeout);
  return {all.begin(), all.begin() + std::ptrdiff_t(n)};
}

std::vector<uint8_t> subgroup_blob(TcpRendezvous& r, const std::vector<int>& ranks, size_t n,
                                   const std::function<std::vector<uint8_t>()>& make,
                                   std::chrono::milliseconds timeout) {
  const int me = r.launch().rank;
  std::vector<uint8_t> mine(n, 0);
  if (!ranks.empty() && ranks[0] == me) {
    mine = make();
    if (mine.size() != n) fail(r.launch(), "a sub-group id has the wrong size");
  }
  std::vector<uint8_t> all = r.all_gather(mine, timeout);
  if (std::find(ranks.begin(), ranks.end(), me) == ranks.end()) return {};
  const auto at = all.begin() + std::ptrdiff_t(size_t(ranks[0]) * n);
  return {at, at + std::ptrdiff_t(n)};
}

}  // namespace ember::distributed::detail
