#pragma once
// The remote device's transport (private): binary WebSocket messages over TLS 1.3 (`wss://`) or,
// on loopback only, plain TCP (`ws://`), with Boost.Beast and OpenSSL. The client runs its
// socket on a thread of its own (reads never wait for the caller); the server runs one thread
// per client. Only this file's .cpp includes Beast.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/backends/remote/session.h"
#include "ember/remote.h"

namespace ember::remote {

struct Url {
  bool tls = true;
  std::string host, port, path = "/";
};
/// Parses "wss://host:port/path" or "ws://..."; throws DeviceError naming `op`.
Url parse_url(const std::string& url, const char* op);
/// Whether `host` names this machine's loopback interface (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  /// Queues one binary message; returns at once (the socket's thread writes it).
  virtual void send(std::vector<uint8_t> frame) = 0;
  /// Queues messages, each a head then bytes of the caller's (no copy), and waits until they
  /// are written; false when the connection failed first.
  virtual bool send_parts(
      std::vector<std::pair<std::vector<uint8_t>, std::span<const uint8_t>>> parts) = 0;
  /// Bytes queued and not yet written.
  virtual size_t queued_bytes() const = 0;
  virtual void close() = 0;
};

/// Called on the transport's thread: every message received (the bytes are valid during the
/// call), then once, when the connection ends for any reason, the reason.
struct ClientCallbacks {
  std::function<void(std::span<const uint8_t>)> on_frame;
  std::function<void(const std::string&)> on_close;
};
/// Connects and upgrades to a WebSocket (blocking); throws DeviceError naming what failed (the
/// address, TLS verification, an HTTP status such as 401 for a refused token).
std::unique_ptr<ClientTransport> connect_transport(const Url& url, const ConnectOptions& opts,
                                                   ClientCallbacks cb);

/// An ember server: one listening socket serving WebSocket sessions and plain HTTP GETs of
/// /health/live, /health/ready and /metrics (Prometheus text).
struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (see Server::port)
  Device device;
  std::string cert_pem, key_pem;  // TLS: both set; else plain (loopback addresses only)
  std::string client_ca_pem;      // mutual TLS: clients must present a certificate these sign
  std::string token;              // bearer token; empty: loopback (or mutual TLS) clients only
  Limits limits;
  size_t max_clients = 64;
  bool log = false;  // structured logs (one JSON object a line) on stderr
};

class Server {
 public:
  /// Binds and starts serving; throws DeviceError when it cannot (a used port, plain TCP on a
  /// non-loopback address, a bad certificate).
  explicit Server(ServerOptions opts);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  uint16_t port() const;
  /// Stops accepting, closes every session (their memory is freed) and joins the threads.
  void stop();
  /// Blocks until stop() has run (from another thread or a signal handler's waker).
  void wait();
  /// The metrics page (Prometheus text format).
  std::string metrics() const;
  size_t sessions() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::remote
