// The torchrun-style rendezvous: rank 0 listens on MASTER_ADDR:MASTER_PORT and sends a blob (the
// NCCL unique id) to every other rank, which connects (retrying while rank 0 starts). POSIX
// sockets with poll() deadlines: a rank that never comes makes the others fail in time.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

std::vector<uint8_t> tcp_broadcast(const LaunchInfo& l, std::vector<uint8_t> blob, size_t n,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (l.world_size == 1) return blob;
  addrinfo* ai = resolve(l, l.rank == 0);
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(ai, ::freeaddrinfo);
  if (l.rank == 0) {
    if (blob.size() != n) fail(l, "rank 0's blob has the wrong size");
    Fd srv(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (srv.fd < 0) fail(l, std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(srv.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(srv.fd, ai->ai_addr, ai->ai_addrlen) != 0)
      fail(l, std::string("bind: ") + std::strerror(errno));
    if (::listen(srv.fd, l.world_size) != 0) fail(l, std::string("listen: ") + std::strerror(errno));
    std::vector<bool> seen(size_t(l.world_size), false);
    for (int joined = 1; joined < l.world_size; ++joined) {
      if (!wait_fd(srv.fd, POLLIN, deadline))
        fail(l, "timed out after " + std::to_string(timeout.count()) + " ms: " +
                    std::to_string(l.world_size - joined) + " of " +
                    std::to_string(l.world_size - 1) + " ranks never connected");
      Fd c(::accept4(srv.fd, nullptr, nullptr, SOCK_CLOEXEC));
      if (c.fd < 0) fail(l, std::string("accept: ") + std::strerror(errno));
      int32_t r = -1;
      io_all(l, c.fd, &r, sizeof r, false, deadline, "reading a rank's number");
      if (r <= 0 || r >= l.world_size || seen[size_t(r)])
        fail(l, "a peer claimed rank " + std::to_string(r) + " (duplicate or out of range)");
      seen[size_t(r)] = true;
      io_all(l, c.fd, blob.data(), n, true, deadline, "sending the unique id");
    }
    return blob;
  }
  for (;;) {
    Fd c(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (c.fd < 0) fail(l, std::string("socket: ") + std::strerror(errno));
    if (::connect(c.fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      int32_t r = l.rank;
      io_all(l, c.fd, &r, sizeof r, true, deadline, "sending this rank's number");
      blob.assign(n, 0);
      io_all(l, c.fd, blob.data(), n, false, deadline, "waiting for rank 0's unique id");
      return blob;
    }
    if (Clock::now() > deadline)
      fail(l, "timed out after " + std::to_string(timeout.count()) +
                  " ms connecting to rank 0: " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 may not listen yet
  }
}

}  // namespace ember::distributed::detail
