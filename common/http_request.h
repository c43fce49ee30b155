// The request head of our HTTP endpoints (/metrics, /healthz, /readyz): finding where it ends
// and reading its request line. Pure functions over bytes a client sent, so every input is
// hostile: nothing here reads past the data given or grows with anything but its size.
#ifndef DDP_COMMON_HTTP_REQUEST_H_
#define DDP_COMMON_HTTP_REQUEST_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp {

struct RequestHead {
  std::string method;  // "GET", "HEAD", ... as sent (case-sensitive, RFC 9110)
  std::string target;  // as sent: "/metrics?x=1"
  std::string path;    // the target without its query: "/metrics"
};

// The length of the head at the start of `data`, its blank line included ("\r\n\r\n", or a bare
// "\n\n" as RFC 9112 lets a server accept); 0 while it is incomplete.
size_t RequestHeadLength(std::string_view data);

// Reads the request line of a complete head: `METHOD SP target SP HTTP/1.x CRLF`, then header
// lines, which are checked for shape (a name, a colon) but not kept. InvalidArgument naming
// the problem for anything else: an empty or over-long method, a target that does not start
// with "/", a version other than HTTP/1.0 or HTTP/1.1, control characters, a header line
// without a colon.
Status ParseRequestHead(std::string_view head, RequestHead* out);

}  // namespace ddp

#endif  // DDP_COMMON_HTTP_REQUEST_H_
