// Minimal HTTP/1.1 server plumbing for the test API server: one connection (plain or TLS),
// request parsing (Content-Length and chunked bodies), plain and chunked responses.
// Test-only code: no pipelining limits, no header size limits beyond sanity checks.
#ifndef DDP_TESTS_KUBE_FAKE_HTTP_H_
#define DDP_TESTS_KUBE_FAKE_HTTP_H_

#include <map>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace ddp::fake {

struct HttpRequest {
  std::string method;                          // "GET"
  std::string path;                            // decoded path, no query
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // lower-case keys
  std::string body;
  bool keep_alive = true;
  std::string Header(const std::string& lower_name) const;
};

// One accepted connection. Owns fd and ssl. Not thread-safe except Shutdown(), which any thread
// may call to make blocked reads and writes fail.
class HttpConn {
 public:
  // ctx == nullptr: plain TCP. Otherwise the TLS handshake runs in Handshake().
  HttpConn(int fd, SSL_CTX* ctx);
  ~HttpConn();
  HttpConn(const HttpConn&) = delete;
  HttpConn& operator=(const HttpConn&) = delete;

  bool Handshake();
  // Reads the next request. Returns false on EOF, error or malformed input.
  bool ReadRequest(HttpRequest* req);
  bool WriteResponse(int code, const std::map<std::string, std::string>& headers,
                     const std::string& body, bool keep_alive);
  // Chunked streaming: a header block, then chunks, then the terminating chunk.
  bool BeginChunked(int code, const std::string& content_type);
  bool WriteChunk(const std::string& data);
  bool EndChunked();
  void Shutdown();

 private:
  bool ReadMore();
  bool WriteAll(const std::string& data);
  bool ReadLine(std::string* line);
  bool ReadExact(size_t n, std::string* out);

  int fd_;
  SSL* ssl_ = nullptr;
  std::string buf_;
};

// "%2C" -> ","; "+" -> " " in query strings.
std::string UrlDecode(const std::string& s, bool plus_is_space);
const char* ReasonPhrase(int code);

}  // namespace ddp::fake

#endif  // DDP_TESTS_KUBE_FAKE_HTTP_H_
