#include "tests/kube/fake_apiserver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstring>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "tests/kube/fake_http.h"

namespace ddp::fake {
namespace {

using json = nlohmann::json;

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!seg.empty()) out.push_back(seg);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string KindOf(const std::string& plural) {
  static const std::map<std::string, std::string> kKinds = {
      {"pods", "Pod"}, {"services", "Service"}, {"events", "Event"}, {"leases", "Lease"},
      {"ddpjobs", "DDPJob"}, {"namespaces", "Namespace"}, {"configmaps", "ConfigMap"},
      {"secrets", "Secret"}, {"endpoints", "Endpoints"}, {"nodes", "Node"},
      {"networkpolicies", "NetworkPolicy"}};
  auto it = kKinds.find(plural);
  if (it != kKinds.end()) return it->second;
  std::string kind = plural;
  if (!kind.empty() && kind.back() == 's') kind.pop_back();
  if (!kind.empty()) kind[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(kind[0])));
  return kind;
}

SSL_CTX* MakeServerContext(const FakeApiServerOptions& o, std::string* error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  BIO* cert_bio = BIO_new_mem_buf(o.tls_cert_pem.data(), static_cast<int>(o.tls_cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new_mem_buf(o.tls_key_pem.data(), static_cast<int>(o.tls_key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  bool ok = cert != nullptr && key != nullptr && SSL_CTX_use_certificate(ctx, cert) == 1 &&
            SSL_CTX_use_PrivateKey(ctx, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!ok) {
    *error = "bad TLS certificate or key";
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if (!o.client_ca_pem.empty()) {
    BIO* ca_bio = BIO_new_mem_buf(o.client_ca_pem.data(), static_cast<int>(o.client_ca_pem.size()));
    X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
    BIO_free(ca_bio);
    if (ca == nullptr) {
      *error = "bad client CA certificate";
      SSL_CTX_free(ctx);
      return nullptr;
    }
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
    X509_free(ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

}  // namespace

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : options_(std::move(options)),
      store_(FakeStore::Options{options_.history_limit, options_.pod_grace}),
      token_(options_.bearer_token) {}

FakeApiServer::~FakeApiServer() { Stop(); }

std::string FakeApiServer::url() const {
  return std::string(ssl_ctx_ != nullptr ? "https" : "http") + "://127.0.0.1:" +
         std::to_string(port_);
}

bool FakeApiServer::Start(int port, std::string* error) {
  // SSL_write has no MSG_NOSIGNAL: a client that hangs up mid-response must not kill the test.
  ::signal(SIGPIPE, SIG_IGN);
  if (!options_.tls_cert_pem.empty()) {
    ssl_ctx_ = MakeServerContext(options_, error);
    if (ssl_ctx_ == nullptr) return false;
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 512) != 0) {
    *error = std::string("bind/listen 127.0.0.1:") + std::to_string(port) + ": " + strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  ticker_thread_ = std::thread([this] { Ticker(); });
  return true;
}

void FakeApiServer::Stop() {
  if (listen_fd_ < 0 || stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  accept_thread_.join();
  ticker_cv_.notify_all();
  ticker_thread_.join();
  store_.DropWatches(true);
  std::map<int, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : conns_) c->Shutdown();
    threads.swap(threads_);
  }
  for (auto& [id, t] : threads) t.join();
  conns_.clear();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  ssl_ctx_ = nullptr;
}

void FakeApiServer::AcceptLoop() {
  for (;;) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto conn = std::make_shared<HttpConn>(fd, ssl_ctx_);
    std::lock_guard<std::mutex> lock(mu_);
    for (int id : finished_) {  // reap threads of closed connections
      threads_[id].join();
      threads_.erase(id);
    }
    finished_.clear();
    int id = next_conn_id_++;
    conns_[id] = conn;
    threads_[id] = std::thread([this, id, conn] { Serve(id, conn); });
  }
}

void FakeApiServer::Ticker() {
  auto next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    ticker_cv_.wait_for(lock, std::chrono::milliseconds(20));
    lock.unlock();
    store_.ReapExpired();
    if (std::chrono::steady_clock::now() >= next_bookmark) {
      store_.SendBookmarks();
      next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
    }
    lock.lock();
  }
}

void FakeApiServer::Serve(int id, std::shared_ptr<HttpConn> conn) {
  if (conn->Handshake()) {
    HttpRequest req;
    while (!stopping_ && conn->ReadRequest(&req)) {
      if (!Handle(*conn, req) || !req.keep_alive) break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  conns_.erase(id);
  if (!stopping_) finished_.push_back(id);
}

bool FakeApiServer::ParsePath(const std::string& path, Target* t) const {
  std::vector<std::string> seg = Split(path);
  size_t i;
  if (seg.size() >= 2 && seg[0] == "api") {
    t->type.api_version = seg[1];
    t->type.collection = "/api/" + seg[1];
    i = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    t->type.api_version = seg[1] + "/" + seg[2];
    t->type.collection = "/apis/" + seg[1] + "/" + seg[2];
    i = 3;
  } else {
    return false;
  }
  t->ns.clear();
  t->name.clear();
  t->sub.clear();
  t->type.namespaced = true;
  if (i < seg.size() && seg[i] == "namespaces" && i + 2 < seg.size()) {
    t->ns = seg[i + 1];
    i += 2;
  } else if (i < seg.size() && seg[i] == "namespaces") {
    t->type.namespaced = false;  // the namespaces resource itself
  } else if (i < seg.size() && seg[i] == "nodes") {
    t->type.namespaced = false;
  }
  if (i >= seg.size() || seg.size() - i > 3) return false;
  t->type.plural = seg[i];
  if (i + 1 < seg.size()) t->name = seg[i + 1];
  if (i + 2 < seg.size()) t->sub = seg[i + 2];
  t->type.collection += "/" + t->type.plural;
  t->type.kind = KindOf(t->type.plural);
  t->type.status_subresource = options_.status_subresources.count(t->type.plural) > 0;
  std::lock_guard<std::mutex> lock(crd_mu_);
  auto crd = crds_.find(t->type.api_version + "/" + t->type.plural);
  if (crd != crds_.end()) {
    t->type.kind = crd->second.kind;
    t->type.status_subresource = crd->second.status_subresource;
  }
  return true;
}

void FakeApiServer::RegisterCrd(const CrdInfo& crd) {
  std::lock_guard<std::mutex> lock(crd_mu_);
  crds_[crd.group + "/" + crd.version + "/" + crd.plural] = crd;
}

bool FakeApiServer::Serves(const Target& t, std::optional<CrdInfo>* crd) const {
  const std::string& gv = t.type.api_version;
  const size_t slash = gv.find('/');
  const std::string group = slash == std::string::npos ? "" : gv.substr(0, slash);
  if (options_.builtin_groups.count(group)) return true;
  std::lock_guard<std::mutex> lock(crd_mu_);
  auto it = crds_.find(gv + "/" + t.type.plural);
  if (it == crds_.end()) return false;
  *crd = it->second;
  return true;
}

std::string FakeApiServer::ForbiddenMessage(const std::string& verb, const Target& t) const {
  size_t slash = t.type.api_version.find('/');
  std::string group = slash == std::string::npos ? "" : t.type.api_version.substr(0, slash);
  std::string what = t.type.plural + (t.name.empty() ? "" : " \"" + t.name + "\"");
  std::string msg = what + " is forbidden: User \"system:serviceaccount:ddp-system:ddp-operator\" "
                    "cannot " + verb + " resource \"" + t.type.plural +
                    (t.sub.empty() ? "" : "/" + t.sub) + "\" in API group \"" + group + "\"";
  return msg + (t.ns.empty() ? " at the cluster scope" : " in the namespace \"" + t.ns + "\"");
}

}  // namespace ddp::fake
