#pragma once
// Remote devices: tensors that live on an ember server (tools/ember-server) and ops that run
// there, streamed over an encrypted, authenticated WebSocket (docs/remote.md).
#include <string>

#include "ember/device.h"

namespace ember::remote {

/// How a client connects. Device::remote(url) takes these from the environment:
/// EMBER_REMOTE_TOKEN, EMBER_REMOTE_CA (a PEM file), EMBER_REMOTE_CERT and EMBER_REMOTE_KEY
/// (PEM files: the client's certificate, for mutual TLS) and EMBER_REMOTE_TIMEOUT (seconds).
struct ConnectOptions {
  std::string token;    // sent as "Authorization: Bearer <token>"
  std::string ca_pem;   // certificates (PEM text) that may sign the server's; empty: ca_file
  std::string ca_file;  // a PEM file of them; both empty: the system's trust store
  double timeout_s = 30;  // connecting, and each wait for a reply (a read, a sync)
  // Mutual TLS: the client's certificate chain and private key (PEM text, else PEM files),
  // presented to a server started with client CAs (ember-server --client-ca).
  std::string cert_pem, key_pem;
  std::string cert_file, key_file;
};

/// Connects to the server at `url` ("wss://host:port", or "ws://127.0.0.1:port" on loopback)
/// and returns its device; a second call with the same url and options reuses the connection.
/// Throws DeviceError when the server cannot be reached or refuses the client.
Device connect(const std::string& url, const ConnectOptions& opts = {});

/// Closes the connection behind `d` (its tensors become unusable); the next connect() with its
/// url opens a fresh one.
void disconnect(Device d);

/// Whether the connection behind `d` is up (false once the server dropped it).
bool connected(Device d);

}  // namespace ember::remote
