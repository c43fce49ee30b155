#include "tests/kube/fake_http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <openssl/ssl.h>

namespace ddp::fake {

std::string HttpRequest::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpConn::HttpConn(int fd, SSL_CTX* ctx) : fd_(fd) {
  if (ctx != nullptr) {
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
  }
}

HttpConn::~HttpConn() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

bool HttpConn::Handshake() { return ssl_ == nullptr || SSL_accept(ssl_) == 1; }

void HttpConn::Shutdown() { ::shutdown(fd_, SHUT_RDWR); }

bool HttpConn::ReadMore() {
  char tmp[16384];
  int n = ssl_ != nullptr ? SSL_read(ssl_, tmp, sizeof(tmp))
                          : static_cast<int>(::recv(fd_, tmp, sizeof(tmp), 0));
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

bool HttpConn::WriteAll(const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    int n = ssl_ != nullptr
                ? SSL_write(ssl_, data.data() + off, static_cast<int>(data.size() - off))
                : static_cast<int>(::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL));
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool HttpConn::ReadLine(std::string* line) {
  for (;;) {
    size_t pos = buf_.find("\r\n");
    if (pos != std::string::npos) {
      *line = buf_.substr(0, pos);
      buf_.erase(0, pos + 2);
      return true;
    }
    if (buf_.size() > (1 << 20) || !ReadMore()) return false;
  }
}

bool HttpConn::ReadExact(size_t n, std::string* out) {
  while (buf_.size() < n) {
    if (!ReadMore()) return false;
  }
  out->append(buf_, 0, n);
  buf_.erase(0, n);
  return true;
}

std::string UrlDecode(const std::string& s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() &&
        std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16)));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool HttpConn::ReadRequest(HttpRequest* req) {
  *req = HttpRequest();
  std::string line;
  do {
    if (!ReadLine(&line)) return false;
  } while (line.empty());  // tolerate stray CRLF between requests
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) return false;
  req->method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  bool http10 = line.substr(sp2 + 1) == "HTTP/1.0";
  size_t q = target.find('?');
  req->path = UrlDecode(target.substr(0, q), false);
  if (q != std::string::npos) {
    std::string qs = target.substr(q + 1);
    size_t start = 0;
    while (start <= qs.size()) {
      size_t amp = qs.find('&', start);
      std::string kv = qs.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      if (!kv.empty()) {
        size_t eq = kv.find('=');
        std::string k = UrlDecode(kv.substr(0, eq), true);
        req->query[k] = eq == std::string::npos ? "" : UrlDecode(kv.substr(eq + 1), true);
      }
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  for (;;) {
    if (!ReadLine(&line)) return false;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string::npos) return false;
    std::string key = line.substr(0, colon);
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    size_t v = line.find_first_not_of(" \t", colon + 1);
    req->headers[key] = v == std::string::npos ? "" : line.substr(v);
  }
  std::string conn = req->Header("connection");
  std::transform(conn.begin(), conn.end(), conn.begin(), ::tolower);
  req->keep_alive = http10 ? conn == "keep-alive" : conn != "close";
  std::string te = req->Header("transfer-encoding");
  if (te.find("chunked") != std::string::npos) {
    for (;;) {
      if (!ReadLine(&line)) return false;
      size_t n = std::strtoul(line.c_str(), nullptr, 16);
      if (n == 0) {
        while (ReadLine(&line) && !line.empty()) {
        }
        break;
      }
      if (!ReadExact(n, &req->body) || !ReadLine(&line)) return false;
    }
  } else if (!req->Header("content-length").empty()) {
    size_t n = std::strtoul(req->Header("content-length").c_str(), nullptr, 10);
    if (n > (64u << 20) || !ReadExact(n, &req->body)) return false;
  }
  return true;
}

const char* ReasonPhrase(int code) {
  switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

bool HttpConn::WriteResponse(int code, const std::map<std::string, std::string>& headers,
                             const std::string& body, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + ReasonPhrase(code) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  out += body;
  return WriteAll(out);
}

bool HttpConn::BeginChunked(int code, const std::string& content_type) {
  return WriteAll("HTTP/1.1 " + std::to_string(code) + " " + ReasonPhrase(code) +
                  "\r\nContent-Type: " + content_type +
                  "\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
}

bool HttpConn::WriteChunk(const std::string& data) {
  if (data.empty()) return true;  // an empty chunk would end the stream
  char size[32];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return WriteAll(size + data + "\r\n");
}

bool HttpConn::EndChunked() { return WriteAll("0\r\n\r\n"); }

}  // namespace ddp::fake
