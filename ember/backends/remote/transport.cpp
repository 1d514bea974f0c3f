// WebSocket transport for the remote device (transport.h), with Boost.Beast over OpenSSL.
// TLS is 1.3 only; the client verifies the server's certificate and host name (or IP address);
// the client sends its token as an HTTP bearer token in the upgrade request, and the server
// answers 401 to a missing or wrong one before any WebSocket message is read. Plain TCP is
// refused unless both ends are loopback addresses.
#include "ember/backends/remote/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <list>
#include <mutex>
#include <sstream>
#include <thread>

#include "ember/error.h"

namespace ember::remote {
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

Url parse_url(const std::string& url, const char* op) {
  Url u;
  std::string rest;
  if (url.rfind("wss://", 0) == 0) {
    rest = url.substr(6);
  } else if (url.rfind("ws://", 0) == 0) {
    u.tls = false;
    rest = url.substr(5);
  } else {
    detail::throw_device(op, "'" + url + "': expected a wss:// (or, on loopback, ws://) url");
  }
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) u.path = rest.substr(slash), rest = rest.substr(0, slash);
  size_t colon = rest.rfind(':');
  if (!rest.empty() && rest[0] == '[') {  // [::1]:7070
    const size_t close = rest.find(']');
    if (close == std::string::npos) detail::throw_device(op, "'" + url + "': unclosed '['");
    u.host = rest.substr(1, close - 1);
    colon = rest.find(':', close);
  } else {
    u.host = rest.substr(0, colon);
  }
  u.port = colon == std::string::npos ? "7070" : rest.substr(colon + 1);
  if (u.host.empty() || u.port.empty() ||
      u.port.find_first_not_of("0123456789") != std::string::npos)
    detail::throw_device(op, "'" + url + "': expected host:port");
  if (!u.tls && !is_loopback(u.host))
    detail::throw_device(op, "'" + url + "': plain ws:// is allowed only on loopback; use wss://");
  return u;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto a = net::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

namespace {

bool is_ip(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// --- client ---

// TLS 1.3 only, the server's certificate checked against the given CAs (else the system's).
ssl::context client_context(const ConnectOptions& o, bool tls) {
  ssl::context c(ssl::context::tls_client);
  if (!tls) return c;
  SSL_CTX_set_min_proto_version(c.native_handle(), TLS1_3_VERSION);
  c.set_verify_mode(ssl::verify_peer);
  if (!o.ca_pem.empty()) c.add_certificate_authority(net::buffer(o.ca_pem));
  else if (!o.ca_file.empty()) c.load_verify_file(o.ca_file);
  else c.set_default_verify_paths();
  // Mutual TLS: the client's own certificate and key, for a server that asks for one.
  if (!o.cert_pem.empty()) c.use_certificate_chain(net::buffer(o.cert_pem));
  else if (!o.cert_file.empty()) c.use_certificate_chain_file(o.cert_file);
  if (!o.key_pem.empty()) c.use_private_key(net::buffer(o.key_pem), ssl::context::pem);
  else if (!o.key_file.empty()) c.use_private_key_file(o.key_file, ssl::context::pem);
  return c;
}

template <class Stream>
class WsClient final : public ClientTransport {
 public:
  WsClient(const Url& u, const ConnectOptions& o, ClientCallbacks cb)
      : ssl_(client_context(o, u.tls)), ws_(make_ws()), cb_(std::move(cb)) {
    const auto timeout = std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
    const std::string where = (u.tls ? "wss://" : "ws://") + u.host + ":" + u.port;
    auto fail = [&](const std::string& what) {
      detail::throw_device("Device::remote", "'" + where + "': " + what);
    };
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto found = resolver.resolve(u.host, u.port, ec);
    if (ec) fail("cannot resolve the host (" + ec.message() + ")");
    auto& low = beast::get_lowest_layer(ws_);
    low.expires_after(timeout);
    low.connect(found, ec);
    if (ec) fail("cannot connect (" + ec.message() + ")");
    // Small frames (a read request, a sync) go out at once: Nagle's wait for the ACK that the
    // peer delays would cost each round trip tens of milliseconds.
    low.socket().set_option(tcp::no_delay(true), ec);
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      SSL* s = ws_.next_layer().native_handle();
      if (!is_ip(u.host)) SSL_set_tlsext_host_name(s, u.host.c_str());
      X509_VERIFY_PARAM* param = SSL_get0_param(s);
      if (is_ip(u.host)) X509_VERIFY_PARAM_set1_ip_asc(param, u.host.c_str());
      else X509_VERIFY_PARAM_set1_host(param, u.host.c_str(), 0);
      ws_.next_layer().handshake(ssl::stream_base::client, ec);
      if (ec) {
        const long v = SSL_get_verify_result(s);
        fail("TLS handshake failed (" + ec.message() +
             (v != X509_V_OK ? std::string(": ") + X509_verify_cert_error_string(v) : "") + ")");
      }
    }
    const std::string token = o.token;
    ws_.set_option(websocket::stream_base::decorator([token](websocket::request_type& req) {
      req.set(http::field::user_agent, "ember-remote");
      if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    }));
    // Asynchronous, run here: Beast 1.74's synchronous handshake drops a refusal's response (its
    // 401), and the stream's deadline applies to asynchronous operations only.
    websocket::response_type res;
    ws_.async_handshake(res, u.host + ":" + u.port, u.path, [&ec](beast::error_code e) { ec = e; });
    ioc_.run();
    ioc_.restart();
    if (ec) {
      if (res.result_int() == 401 || res.result_int() == 403)
        fail("the server refused the client (HTTP " + std::to_string(res.result_int()) + ": " +
             std::string(res.body()) + ")");
      // TLS 1.3 finishes the client's half of the handshake before the server checks the
      // client's certificate: its refusal (an alert) ends the session at the upgrade.
      if (ec.category() == net::error::get_ssl_category())
        fail("the server ended the TLS session (" + ec.message() +
             "): it refuses clients without a certificate it trusts (mutual TLS: give one with "
             "ConnectOptions::cert_file and key_file, or EMBER_REMOTE_CERT and EMBER_REMOTE_KEY)");
      fail("WebSocket handshake failed (" + ec.message() +
           (res.result_int() ? ", HTTP " + std::to_string(res.result_int()) : "") + ")");
    }
    low.expires_never();
    websocket::stream_base::timeout t = websocket::stream_base::timeout::suggested(beast::role_type::client);
    t.idle_timeout = std::chrono::milliseconds(std::max<int64_t>(2000, int64_t(o.timeout_s * 1000)));
    t.keep_alive_pings = true;
    ws_.set_option(t);
    ws_.binary(true);
    ws_.read_message_max(size_t(2) << 30);
    // Masking (a client's duty) copies through this buffer: each pass is one TLS write, so
    // a large one keeps records full (16 KiB) rather than Beast's default of 4 KiB.
    ws_.write_buffer_bytes(size_t(1) << 20);
    read();
    thread_ = std::thread([this] {
      ioc_.run();
      written(0, true);  // the loop is over: nothing queued will be written
    });
  }
  ~WsClient() override {
    close();
    if (thread_.joinable()) thread_.join();
  }

  void send(std::vector<uint8_t> frame) override { push({std::move(frame), {}}); }
  bool send_parts(std::vector<std::pair<std::vector<uint8_t>, std::span<const uint8_t>>> parts) override {
    uint64_t last = 0;
    for (auto& [head, tail] : parts) last = push({std::move(head), tail});
    std::unique_lock lock(wmu_);
    wcv_.wait(lock, [&] { return written_ >= last || failed_; });
    return written_ >= last;
  }
  size_t queued_bytes() const override { return queued_.load(); }
  void close() override {
    net::post(ioc_, [this] {
      beast::error_code ec;
      beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(ws_).close();
    });
  }

 private:
  websocket::stream<Stream> make_ws() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) return websocket::stream<Stream>(ioc_);
    else return websocket::stream<Stream>(ioc_, ssl_);
  }

 private:
  void read() {
    ws_.async_read(rbuf_, [this](beast::error_code ec, size_t) {
      if (ec) return end(ec == websocket::error::closed ? "the server closed the connection"
                                                        : "the connection dropped (" + ec.message() + ")");
      auto d = rbuf_.cdata();
      cb_.on_frame({static_cast<const uint8_t*>(d.data()), d.size()});
      rbuf_.consume(rbuf_.size());
      read();
    });
  }
  // One WebSocket message: `head`, then `tail` (caller's memory that stays valid until the
  // message is written: send_parts waits for it).
  struct Out {
    std::vector<uint8_t> head;
    std::span<const uint8_t> tail;
    uint64_t seq = 0;
  };
  uint64_t push(Out o) {
    queued_ += o.head.size() + o.tail.size();
    o.seq = ++pushed_;
    const uint64_t seq = o.seq;
    net::post(ioc_, [this, o = std::move(o)]() mutable {
      if (ended_) return written(o.seq, true);
      queue_.push_back(std::move(o));
      if (!writing_) write();
    });
    return seq;
  }
  void written(uint64_t seq, bool failed) {
    {
      std::lock_guard lock(wmu_);
      if (!failed) written_ = seq;
      failed_ = failed_ || failed;
    }
    wcv_.notify_all();
  }
  void write() {
    writing_ = true;
    auto done = [this](beast::error_code ec, size_t) {
      Out& o = queue_.front();
      queued_ -= o.head.size() + o.tail.size();
      const uint64_t seq = o.seq;
      queue_.pop_front();
      if (ec) {
        writing_ = false;
        written(seq, true);
        return end("a write failed (" + ec.message() + ")");
      }
      written(seq, false);
      if (queue_.empty()) writing_ = false;
      else write();
    };
    Out& o = queue_.front();
    if (o.tail.empty()) return ws_.async_write(net::buffer(o.head), std::move(done));
    const std::array<net::const_buffer, 2> parts{net::buffer(o.head),
                                                 net::buffer(o.tail.data(), o.tail.size())};
    ws_.async_write(parts, std::move(done));
  }
  void end(const std::string& why) {
    if (ended_) return;
    ended_ = true;
    written(0, true);  // writes still queued will not happen: their waiters go
    cb_.on_close(why);
  }

  net::io_context ioc_;
  ssl::context ssl_;
  websocket::stream<Stream> ws_;
  ClientCallbacks cb_;
  beast::flat_buffer rbuf_;
  std::deque<Out> queue_;
  std::atomic<size_t> queued_{0};
  std::atomic<uint64_t> pushed_{0};
  bool writing_ = false, ended_ = false;
  std::mutex wmu_;  // guards written_ and failed_, for send_parts' waiters
  std::condition_variable wcv_;
  uint64_t written_ = 0;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ClientTransport> connect_transport(const Url& url, const ConnectOptions& opts,
                                                   ClientCallbacks cb) {
  try {
    if (!url.tls) return std::make_unique<WsClient<beast::tcp_stream>>(url, opts, std::move(cb));
    return std::make_unique<WsClient<beast::ssl_stream<beast::tcp_stream>>>(url, opts, std::move(cb));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // Boost/OpenSSL (a CA file that does not load)
    detail::throw_device("Device::remote", url.host + ":" + url.port + ": " + e.what());
  }
}

// --- server ---

namespace {

std::string now_iso() {
  const auto t = std::chrono::system_clock::now();
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&s));
  return buf;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (uint8_t(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= uint8_t(a[i] ^ b[i]);
  return d == 0;
}

void set_recv_timeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

struct Server::Impl {
  ServerOptions o;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  ssl::context tls{ssl::context::tls_server};
  bool use_tls = false;
  Stats stats;
  std::thread accept_thread;
  mutable std::mutex mu;
  std::condition_variable stopped_cv;
  bool stopping = false, stopped = false;
  uint16_t port = 0;
  uint64_t next_id = 1;
  struct Conn {
    uint64_t id = 0;
    // A duplicate of the session's socket, closed under `mu` when the session ends: stop()
    // shuts the socket down through it (waking the session's blocking read) and never through
    // the session's own descriptor, which the session closes without the lock and whose number
    // the system may then give to another file.
    int wake_fd = -1;
    std::string peer;
    std::atomic<bool> done{false};
    std::atomic<size_t> bytes{0};
    std::thread thread;
    ~Conn() {
      if (thread.joinable()) thread.join();
    }
  };
  std::list<std::unique_ptr<Conn>> conns;

  void log(const std::string& event, const std::string& fields) {
    if (!o.log) return;
    std::ostringstream s;
    s << "{\"ts\":\"" << now_iso() << "\",\"event\":\"" << event << "\"" << fields << "}\n";
    std::cerr << s.str();
  }

  void reap(bool all) {
    std::list<std::unique_ptr<Conn>> dead;
    {
      std::lock_guard lock(mu);
      for (auto it = conns.begin(); it != conns.end();)
        if (all || (*it)->done.load()) dead.push_back(std::move(*it)), it = conns.erase(it);
        else ++it;
    }
    dead.clear();  // joins their threads, closes their wake descriptors
  }

  void accept_loop() {
    for (;;) {
      tcp::socket sock(ioc);
      beast::error_code ec;
      acceptor.accept(sock, ec);
      if (!ec) reap(false);
      auto c = std::make_unique<Conn>();
      Conn* raw = c.get();
      {
        // Checked and registered under one lock: a connection accepted while stop() runs is
        // either refused here or in the list stop() shuts down, never missed by both (its
        // session would keep stop() waiting for its client).
        std::lock_guard lock(mu);
        if (stopping) return;  // `sock` closes
        if (ec) continue;
        c->id = next_id++;
        c->wake_fd = ::dup(sock.native_handle());
        beast::error_code pe;
        auto ep = sock.remote_endpoint(pe);
        c->peer = pe ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
        raw->thread = std::thread([this, raw, s = std::move(sock)]() mutable {
          serve(std::move(s), *raw);  // closes the session's descriptor
          std::lock_guard lock(mu);   // and now its duplicate: the peer sees the end
          ::close(raw->wake_fd);
          raw->wake_fd = -1;
          raw->done = true;
        });
        conns.push_back(std::move(c));
      }
    }
  }

  void serve(tcp::socket sock, Conn& c) {
    beast::error_code ec;
    const bool loopback = [&] {
      auto ep = sock.remote_endpoint(ec);
      return !ec && ep.address().is_loopback();
    }();
    set_recv_timeout(sock.native_handle(), 10);  // the TLS and HTTP handshakes; not the session
    sock.set_option(tcp::no_delay(true), ec);     // replies go out at once (see the client's)
    try {
      if (use_tls) {
        beast::ssl_stream<beast::tcp_stream> s(std::move(sock), tls);
        s.handshake(ssl::stream_base::server, ec);
        if (ec) {
          stats.sessions_refused++;
          log("tls_refused", ",\"peer\":" + json_str(c.peer) + ",\"why\":" + json_str(ec.message()));
          return;
        }
        // Mutual TLS: the handshake let in only a client whose certificate chains to the
        // client CAs; it counts as authenticated (a token, when set, is asked for as well).
        bool cert_ok = false;
        if (X509* peer = SSL_get_peer_certificate(s.native_handle())) {
          cert_ok = !o.client_ca_pem.empty() && SSL_get_verify_result(s.native_handle()) == X509_V_OK;
          char name[256] = {};
          X509_NAME_oneline(X509_get_subject_name(peer), name, sizeof name - 1);
          c.peer += std::string(" ") + name;
          X509_free(peer);
        }
        handle_http(s, c, loopback, cert_ok);
      } else {
        beast::tcp_stream s(std::move(sock));
        handle_http(s, c, loopback, false);
      }
    } catch (const std::exception& e) {
      log("session_error", ",\"id\":" + std::to_string(c.id) + ",\"why\":" + json_str(e.what()));
    }
  }

  template <class S> void respond(S& s, http::status st, const std::string& body,
                                  const std::string& type = "text/plain") {
    http::response<http::string_body> res{st, 11};
    res.set(http::field::server, "ember-server");
    res.set(http::field::content_type, type);
    res.keep_alive(false);
    res.body() = body;
    res.prepare_payload();
    beast::error_code ec;
    http::write(s, res, ec);
  }

  template <class S> void handle_http(S& s, Conn& c, bool loopback, bool cert_ok) {
    beast::flat_buffer buf;
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(16 << 10);
    beast::error_code ec;
    http::read(s, buf, parser, ec);
    if (ec) return;
    auto req = parser.release();
    const std::string auth(req[http::field::authorization]);
    const bool token_ok = !o.token.empty() && same_secret(auth, "Bearer " + o.token);
    const bool allowed = token_ok || (o.token.empty() && (loopback || cert_ok));
    if (!websocket::is_upgrade(req)) {
      const std::string target(req.target());
      if (target == "/health/live") return respond(s, http::status::ok, "ok\n");
      if (target == "/health/ready") {
        bool ready;
        {
          std::lock_guard lock(mu);
          ready = !stopping && conns.size() <= o.max_clients;
        }
        return respond(s, ready ? http::status::ok : http::status::service_unavailable,
                       ready ? "ready\n" : "not ready\n");
      }
      if (target == "/metrics") {
        if (!allowed && !loopback) return respond(s, http::status::unauthorized, "a bearer token is needed\n");
        return respond(s, http::status::ok, metrics(), "text/plain; version=0.0.4");
      }
      return respond(s, http::status::not_found, "not found\n");
    }
    if (!allowed) {
      stats.sessions_refused++;
      log("auth_refused", ",\"peer\":" + json_str(c.peer));
      return respond(s, http::status::unauthorized,
                     o.token.empty() ? "this server accepts loopback clients only (start it with a token)"
                                     : "a missing or wrong bearer token");
    }
    {
      std::lock_guard lock(mu);
      if (conns.size() > o.max_clients) {
        stats.sessions_refused++;
        return respond(s, http::status::service_unavailable, "too many clients");
      }
    }
    websocket::stream<S&> ws(s);
    ws.read_message_max(o.limits.max_message_bytes);
    ws.accept(req, ec);
    if (ec) return;
    set_recv_timeout(beast::get_lowest_layer(s).socket().native_handle(), 0);
    ws.binary(true);
    // A server does not mask, so a message can go out as one frame straight from its buffers
    // (a download's chunk from the storage itself). Beast's default fragments each message
    // into 4 KiB frames, one write of the next layer each: downloads ran at half the uploads'
    // rate.
    ws.auto_fragment(false);
    stats.sessions_opened++;
    stats.sessions_active++;
    log("session_open", ",\"id\":" + std::to_string(c.id) + ",\"peer\":" + json_str(c.peer));
    std::string why = "closed by the client";
    {
      Session session(o.device, o.limits, &stats);
      struct Ctx {
        websocket::stream<S&>* ws;
        Stats* stats;
      } ctx{&ws, &stats};
      auto send = [](void* p, std::vector<uint8_t>& f, std::span<const uint8_t> tail) {
        auto* x = static_cast<Ctx*>(p);
        x->stats->bytes_out += f.size() + tail.size();
        if (tail.empty()) return (void)x->ws->write(net::buffer(f));
        const std::array<net::const_buffer, 2> parts{net::buffer(f), net::buffer(tail.data(), tail.size())};
        x->ws->write(parts);
      };
      beast::flat_buffer in;
      for (;;) {
        in.consume(in.size());
        ws.read(in, ec);
        if (ec) {
          if (ec == websocket::error::message_too_big) {
            why = "a message over the server's limit of " + std::to_string(o.limits.max_message_bytes) + " bytes";
            stats.protocol_errors++;
            ws.close(websocket::close_reason(websocket::close_code::too_big, "message too big"), ec);
          } else if (ec != websocket::error::closed) {
            why = "connection lost (" + ec.message() + ")";
          }
          break;
        }
        auto d = in.cdata();
        try {
          session.on_frame({static_cast<const uint8_t*>(d.data()), d.size()}, send, &ctx);
        } catch (const ProtocolError& e) {
          why = e.what();
          stats.protocol_errors++;
          std::vector<uint8_t> f;
          Encoder(f).error(0, ErrorKind::Value, e.what());
          beast::error_code wec;
          ws.write(net::buffer(f), wec);
          ws.close(websocket::close_reason(websocket::close_code::policy_error, "protocol error"), wec);
          break;
        } catch (const boost::system::system_error& e) {
          why = "connection lost (" + std::string(e.what()) + ")";
          break;
        }
        c.bytes = session.bytes_held();
      }
      c.bytes = 0;
    }  // the session's storages are freed here
    stats.sessions_active--;
    log("session_close", ",\"id\":" + std::to_string(c.id) + ",\"why\":" + json_str(why));
  }

  std::string metrics() const {
    std::ostringstream m;
    auto counter = [&](const char* name, const char* help, uint64_t v, const char* type = "counter") {
      m << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
        << name << " " << v << "\n";
    };
    counter("ember_ops_total", "Ops run for clients.", stats.ops.load());
    counter("ember_op_errors_total", "Ops that failed (the error went back to the client).",
            stats.op_errors.load());
    counter("ember_bytes_in_total", "Bytes of WebSocket messages received.", stats.bytes_in.load());
    counter("ember_bytes_out_total", "Bytes of WebSocket messages sent.", stats.bytes_out.load());
    counter("ember_sessions_total", "Sessions opened.", stats.sessions_opened.load());
    counter("ember_sessions_refused_total", "Connections refused (auth, TLS, capacity).",
            stats.sessions_refused.load());
    counter("ember_protocol_errors_total", "Sessions closed for a malformed or oversized message.",
            stats.protocol_errors.load());
    counter("ember_sessions_active", "Sessions open now.", uint64_t(stats.sessions_active.load()), "gauge");
    counter("ember_memory_bytes", "Bytes of storage all sessions hold.",
            uint64_t(std::max<int64_t>(0, stats.bytes_held.load())), "gauge");
    m << "# HELP ember_session_memory_bytes Bytes of storage one session holds.\n"
         "# TYPE ember_session_memory_bytes gauge\n";
    {
      std::lock_guard lock(mu);
      for (const auto& c : conns)
        if (!c->done) m << "ember_session_memory_bytes{session=\"" << c->id << "\"} " << c->bytes.load() << "\n";
    }
    m << "# HELP ember_op_latency_seconds Time the server spent running one op.\n"
         "# TYPE ember_op_latency_seconds histogram\n";
    uint64_t cum = 0;
    for (int k = 0; k <= Stats::kBuckets; ++k) {
      cum += stats.latency[k].load();
      m << "ember_op_latency_seconds_bucket{le=\"";
      if (k < Stats::kBuckets) m << Stats::bucket_le_s(k);
      else m << "+Inf";
      m << "\"} " << cum << "\n";
    }
    m << "ember_op_latency_seconds_sum " << double(stats.latency_sum_ns.load()) * 1e-9 << "\n"
      << "ember_op_latency_seconds_count " << cum << "\n";
    return m.str();
  }
};

Server::Server(ServerOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.o = std::move(opts);
  const char* op = "ember-server";
  s.use_tls = !s.o.cert_pem.empty() || !s.o.key_pem.empty();
  if (!s.use_tls && !is_loopback(s.o.host))
    detail::throw_device(op, "plain ws:// on " + s.o.host +
                                 " refused: serve non-loopback addresses with TLS (a certificate and key)");
  try {
    if (s.use_tls) {
      SSL_CTX_set_min_proto_version(s.tls.native_handle(), TLS1_3_VERSION);
      s.tls.use_certificate_chain(net::buffer(s.o.cert_pem));
      s.tls.use_private_key(net::buffer(s.o.key_pem), ssl::context::pem);
      if (!s.o.client_ca_pem.empty()) {  // mutual TLS: no client certificate, no session
        s.tls.add_certificate_authority(net::buffer(s.o.client_ca_pem));
        s.tls.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      }
    } else if (!s.o.client_ca_pem.empty()) {
      detail::throw_device(op, "client certificates (mutual TLS) need TLS: give a certificate and key");
    }
    auto addr = net::ip::make_address(s.o.host == "localhost" ? "127.0.0.1" : s.o.host);
    tcp::endpoint ep(addr, s.o.port);
    s.acceptor.open(ep.protocol());
    s.acceptor.set_option(net::socket_base::reuse_address(true));
    s.acceptor.bind(ep);
    s.acceptor.listen();
    s.port = s.acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    detail::throw_device(op, "cannot serve on " + s.o.host + ":" + std::to_string(s.o.port) +
                                 " (" + e.what() + ")");
  }
  s.log("listening", ",\"address\":" + json_str(s.o.host + ":" + std::to_string(port())) +
                         ",\"tls\":" + (s.use_tls ? "true" : "false") +
                         ",\"device\":" + json_str(s.o.device.str()));
  s.accept_thread = std::thread([&s] { s.accept_loop(); });
}

Server::~Server() { stop(); }

uint16_t Server::port() const { return impl_->port; }

void Server::stop() {
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.mu);
    if (s.stopping) {
      // Another thread stops the server (a signal's waker, then the destructor): wait for it,
      // so that nothing is destroyed under its feet.
      s.stopped_cv.wait(lock, [&] { return s.stopped; });
      return;
    }
    s.stopping = true;
    ::shutdown(s.acceptor.native_handle(), SHUT_RDWR);  // wakes accept()
    for (auto& c : s.conns)
      if (c->wake_fd >= 0) ::shutdown(c->wake_fd, SHUT_RDWR);  // wakes each session's read
  }
  if (s.accept_thread.joinable()) s.accept_thread.join();
  s.reap(true);
  beast::error_code ec;
  s.acceptor.close(ec);
  s.log("stopped", "");
  {
    std::lock_guard lock(s.mu);
    s.stopped = true;
  }
  s.stopped_cv.notify_all();
}

void Server::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->stopped_cv.wait(lock, [&] { return impl_->stopped; });
}

std::string Server::metrics() const { return impl_->metrics(); }

size_t Server::sessions() const { return size_t(std::max<int64_t>(0, impl_->stats.sessions_active.load())); }

}  // namespace ember::remote
