#pragma once
// Loopback servers for the remote tests and the remote golden run, and a self-signed
// certificate made with OpenSSL's API at test time (nothing is downloaded or committed).
#include <memory>
#include <string>

#include "ember/backends/remote/transport.h"

namespace ember::test {

/// An in-process ember server on 127.0.0.1 (a free port) serving `o.device`.
struct LoopbackServer {
  explicit LoopbackServer(remote::ServerOptions o = {});
  std::string url(const std::string& path = "/") const;
  std::unique_ptr<remote::Server> server;
  bool tls = false;
};

/// A fresh P-256 key and a self-signed certificate for CN=localhost, SAN DNS:localhost and
/// IP:127.0.0.1, both PEM.
struct SelfSigned {
  std::string cert_pem, key_pem;
};
SelfSigned make_self_signed();

/// The device golden_devices() adds as "remote" when EMBER_TEST_REMOTE=1: a flex-backed
/// loopback server started once for the process.
Device remote_golden_device();

/// GET `path` from 127.0.0.1:`port` over plain HTTP: the status line and body.
std::string http_get(uint16_t port, const std::string& path);

}  // namespace ember::test
