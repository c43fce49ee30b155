// A small HTTP/1.1 server for /metrics, /healthz and /readyz: GET and HEAD, one request per
// connection, a handler per exact path. Not a general web server: no TLS, no keep-alive, no
// request bodies.
//
// Many clients, none able to starve the others: one thread polls every socket (non-blocking),
// so an idle client costs a file descriptor and a few bytes, never a thread; each connection
// has a deadline to send its head (read_timeout) and one to take its response
// (write_timeout); the head is bounded (max_head_bytes, else 431); at max_connections a new
// client evicts the one that has waited longest without sending a complete head. So 50 idle
// connections, or a client that never reads a large page, leave /healthz answering at once.
// Out of file descriptors (EMFILE, ENFILE), accepting pauses (10 ms, doubling up to 200 ms)
// rather than spin on a listening socket that stays readable; the clients queued meanwhile are
// answered once descriptors are free again.
//
// Why not cpprestsdk's http_listener: common/ is built into ddp-worker, which links nothing but
// LibTorch and POSIX, and the listener would add Boost.Asio and its thread pool to every
// trainer process; it also offers no per-connection head deadline, head bound or connection
// limit to configure, which are the point here.
//
// Thread-safety: handlers run on the server's threads, concurrently with the rest of the
// program. A handler registered as kInline runs on the polling thread and must be quick (a
// probe, a registry render); a kMayBlock handler (one that reads other processes' pages) runs
// on a small pool, so it delays no other connection.
#ifndef DDP_COMMON_HTTP_SERVER_H_
#define DDP_COMMON_HTTP_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace ddp {

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Content type of the Prometheus text format.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

struct HttpServerOptions {
  int max_connections = 128;
  std::chrono::milliseconds read_timeout{std::chrono::seconds(5)};    // accept -> whole head
  std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};  // response -> all sent
  size_t max_head_bytes = 8192;
  int pool_threads = 2;     // for kMayBlock handlers; started only when one is registered
  size_t max_queued = 64;   // kMayBlock requests waiting for the pool; more get 503
};

class HttpServer {
 public:
  enum class Dispatch { kInline, kMayBlock };

  explicit HttpServer(HttpServerOptions options = {}) : options_(options) {}
  ~HttpServer();  // Stops the server.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // REQUIRES: before Start(). Later registrations of a path replace earlier ones.
  void Handle(const std::string& path, std::function<HttpResponse()> handler,
              Dispatch dispatch = Dispatch::kInline);

  // Binds "host:port", ":port" or "port" (port 0 picks a free one) and serves in a background
  // thread. Returns InvalidArgument for a malformed address, Unavailable when the bind fails.
  Status Start(const std::string& bind_address);
  // The bound port; 0 before Start().
  int port() const { return port_; }
  // Open connections now (for tests and the bench).
  size_t connections() const;
  // Stops accepting, closes every connection and joins the threads. Idempotent.
  void Stop();

 private:
  struct Route {
    std::function<HttpResponse()> handler;
    Dispatch dispatch = Dispatch::kInline;
  };
  struct Conn;
  struct Job {
    uint64_t conn;
    bool head_only;
    const Route* route;
  };
  void Loop();
  void PoolLoop();
  // Accepts every queued client. Returns 0, or the errno when accept4 ran out of descriptors
  // or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the clients left stay queued until Loop
  // tries again.
  int Accept(std::map<uint64_t, Conn>* conns, uint64_t* next_id);
  // Reads what `c` sent; false when the connection is to be closed.
  bool OnReadable(uint64_t id, Conn* c);
  // Starts answering `c`'s complete head (inline, or by queueing a job).
  void Answer(uint64_t id, Conn* c, const std::string& head);
  bool OnWritable(Conn* c);
  void Wake();

  const HttpServerOptions options_;
  std::map<std::string, Route> routes_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe: Stop() and finished jobs wake the poll
  int port_ = 0;
  std::thread thread_;
  std::vector<std::thread> pool_;
  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable pool_cv_;
  bool stopping_ = false;
  std::deque<Job> jobs_;
  std::vector<std::pair<uint64_t, std::string>> done_;  // conn id, the response's bytes
  size_t open_ = 0;
};

// Splits "host:port" / ":port" / "port" into parts; host "" means all interfaces.
Status ParseBindAddress(const std::string& text, std::string* host, int* port);

// A server's answer: its status code (100..599) and body.
struct HttpAnswer {
  int code = 0;
  std::string body;
};

// GET http://host:port/path with a deadline. Returns the answer whatever its status code (a 503
// from a busy server, a 431: the server is there); Unavailable on connection errors, timeouts
// and a response that is not HTTP. With max_body_bytes > 0, a body larger than that is
// FailedPrecondition, known from its Content-Length or from the bytes received: reading stops
// there, so at most max_body_bytes plus one read (8 KiB) and a bounded head (16 KiB) are ever
// held.
StatusOr<HttpAnswer> HttpFetch(const std::string& host, int port, const std::string& path,
                               int timeout_ms = 2000, size_t max_body_bytes = 0);

// HttpFetch that wants a 200: returns its body; another status code is Unavailable (the message
// names it), as are HttpFetch's errors; FailedPrecondition past max_body_bytes.
StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                              int timeout_ms = 2000, size_t max_body_bytes = 0);

}  // namespace ddp

#endif  // DDP_COMMON_HTTP_SERVER_H_
