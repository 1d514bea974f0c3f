// ember-server: serves an ember device to remote clients (Device::remote, docs/remote.md).
//   ember-server [--device flex|cpu|cuda:N] [--host ADDR] [--port N] [--cert PEM --key PEM]
//                [--client-ca PEM] [--token-file FILE] [--max-clients N] [--max-message-mb N]
//                [--max-tensor-mb N] [--max-client-mb N] [--quiet]
// Plain ws:// is served only on a loopback address; anything else needs --cert and --key (TLS
// 1.3). --client-ca asks every client for a certificate that those CAs sign (mutual TLS). Without
// a token (--token-file, or EMBER_SERVER_TOKEN) or client CAs only loopback clients are let in.
// GET /health/live, /health/ready and /metrics (Prometheus) on the same port. SIGINT or SIGTERM
// stops it gracefully (sessions are closed and their memory freed). Logs are JSON lines on stderr.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "ember/backends/remote/transport.h"
#include "ember/ember.h"

using namespace ember;

namespace {

int usage() {
  std::cerr << "usage: ember-server [--device flex|cpu|cuda:N] [--host ADDR] [--port N]\n"
               "                    [--cert PEM --key PEM] [--client-ca PEM] [--token-file FILE]\n"
               "                    [--max-clients N]\n"
               "                    [--max-message-mb N] [--max-tensor-mb N] [--max-client-mb N]\n"
               "                    [--quiet]\n";
  return 2;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("[ember-server] cannot read '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Device parse_device(const std::string& d) {
  if (d == "flex") return Device::flex();
  if (d == "cpu") return Device::cpu();
  if (d == "cuda") return Device::cuda(0);
  if (d.rfind("cuda:", 0) == 0) return Device::cuda(std::stoi(d.substr(5)));
  throw ValueError("[ember-server] unknown device '" + d + "' (flex, cpu, cuda:N)");
}

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  remote::ServerOptions o;
  o.port = 7070;
  o.log = true;
  std::string cert, key, client_ca, token_file;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw ValueError("[ember-server] " + a + " needs a value");
        return argv[++i];
      };
      const size_t mb = size_t(1) << 20;
      if (a == "--device") o.device = parse_device(value());
      else if (a == "--host") o.host = value();
      else if (a == "--port") o.port = uint16_t(std::stoi(value()));
      else if (a == "--cert") cert = value();
      else if (a == "--key") key = value();
      else if (a == "--client-ca") client_ca = value();
      else if (a == "--token-file") token_file = value();
      else if (a == "--max-clients") o.max_clients = std::stoul(value());
      else if (a == "--max-message-mb") o.limits.max_message_bytes = std::stoul(value()) * mb;
      else if (a == "--max-tensor-mb") o.limits.max_tensor_bytes = std::stoul(value()) * mb;
      else if (a == "--max-client-mb") o.limits.max_session_bytes = std::stoul(value()) * mb;
      else if (a == "--quiet") o.log = false;
      else return usage();
    }
    if (cert.empty() != key.empty()) throw ValueError("[ember-server] --cert and --key go together");
    if (!cert.empty()) o.cert_pem = read_file(cert), o.key_pem = read_file(key);
    if (!client_ca.empty()) {
      if (cert.empty()) throw ValueError("[ember-server] --client-ca needs --cert and --key (TLS)");
      o.client_ca_pem = read_file(client_ca);
    }
    if (!token_file.empty()) {
      o.token = read_file(token_file);
      while (!o.token.empty() && (o.token.back() == '\n' || o.token.back() == '\r')) o.token.pop_back();
    } else if (const char* t = std::getenv("EMBER_SERVER_TOKEN")) {
      o.token = t;
    }
    // Ready means the device runs an op.
    (void)(ones({2}, {kF32, o.device}) + 1).sum().item<float>();
    remote::Server server(o);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::cout << "ember-server: serving " << o.device << " on " << (o.cert_pem.empty() ? "ws://" : "wss://")
              << o.host << ":" << server.port() << std::endl;
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ember-server: " << e.what() << "\n";
    return 1;
  }
}
