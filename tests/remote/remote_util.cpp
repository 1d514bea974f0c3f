#include "remote/remote_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "ember/remote.h"

namespace ember::test {

LoopbackServer::LoopbackServer(remote::ServerOptions o) {
  o.host = "127.0.0.1";
  tls = !o.cert_pem.empty();
  server = std::make_unique<remote::Server>(std::move(o));
}

std::string LoopbackServer::url(const std::string& path) const {
  return std::string(tls ? "wss" : "ws") + "://127.0.0.1:" + std::to_string(server->port()) + path;
}

namespace {
std::string pem_of(BIO* b) {
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  std::string s(p, size_t(n));
  BIO_free(b);
  return s;
}
void add_ext(X509* x, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!e) throw std::runtime_error("X509V3_EXT_conf_nid failed");
  X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
}
}  // namespace

SelfSigned make_self_signed() {
  EVP_PKEY* key = EVP_EC_gen("P-256");  // quicker to make than an RSA key
  if (!key) throw std::runtime_error("EVP_EC_gen failed");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
  X509_sign(x, key, EVP_sha256());
  SelfSigned s;
  BIO* cb = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cb, x);
  s.cert_pem = pem_of(cb);
  BIO* kb = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
  s.key_pem = pem_of(kb);
  X509_free(x);
  EVP_PKEY_free(key);
  return s;
}

Device remote_golden_device() {
  static LoopbackServer* s = new LoopbackServer();  // lives until exit
  return remote::connect(s->url("/golden"));
}

std::string http_get(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

}  // namespace ember::test
