// A tiny HTTP/1.1 server for /metrics, /healthz and /readyz: GET and HEAD, one request per
// connection, a handler per exact path. Not a general web server: no TLS, no keep-alive, no
// request bodies. Thread-safe: handlers run on the server's connection threads, so they must
// be safe to call concurrently with the rest of the program.
#ifndef DDP_COMMON_HTTP_SERVER_H_
#define DDP_COMMON_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace ddp {

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Content type of the Prometheus text format.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

class HttpServer {
 public:
  HttpServer() = default;
  ~HttpServer();  // Stops the server.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // REQUIRES: before Start(). Later registrations of a path replace earlier ones.
  void Handle(const std::string& path, std::function<HttpResponse()> handler);

  // Binds "host:port", ":port" or "port" (port 0 picks a free one) and serves in a background
  // thread. Returns InvalidArgument for a malformed address, Unavailable when the bind fails.
  Status Start(const std::string& bind_address);
  // The bound port; 0 before Start().
  int port() const { return port_.load(); }
  // Stops accepting and joins the server thread. Idempotent.
  void Stop();

 private:
  void Serve();
  void HandleConnection(int fd);

  std::map<std::string, std::function<HttpResponse()>> handlers_;
  std::atomic<int> listen_fd_{-1};
  std::atomic<int> port_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Splits "host:port" / ":port" / "port" into parts; host "" means all interfaces.
Status ParseBindAddress(const std::string& text, std::string* host, int* port);

// GET http://host:port/path with a deadline. Returns the body on 200; Unavailable on connection
// errors, timeouts, or another status code (the message names it).
StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                              int timeout_ms = 2000);

}  // namespace ddp

#endif  // DDP_COMMON_HTTP_SERVER_H_
