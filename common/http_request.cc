// Request heads; see http_request.h.
#include "common/http_request.h"

namespace ddp {
namespace {

bool IsTokenChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == '.' || c == '!' || c == '#' || c == '$' || c == '%' ||
         c == '&' || c == '\'' || c == '*' || c == '+' || c == '^' || c == '`' || c == '|' ||
         c == '~';
}

// A byte a request target may hold: visible ASCII (RFC 9112 3.2), nothing else.
bool IsTargetChar(char c) { return c > 0x20 && c < 0x7f; }

// The next line of `head` from *at, without its "\r\n" or "\n"; advances *at past it.
std::string_view NextLine(std::string_view head, size_t* at) {
  const size_t nl = head.find('\n', *at);
  const size_t end = nl == std::string_view::npos ? head.size() : nl;
  std::string_view line = head.substr(*at, end - *at);
  *at = nl == std::string_view::npos ? head.size() : nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

size_t RequestHeadLength(std::string_view data) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    // "\n\n" or "\n\r\n": the end of the head.
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

Status ParseRequestHead(std::string_view head, RequestHead* out) {
  size_t at = 0;
  const std::string_view line = NextLine(head, &at);
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return Status::InvalidArgument("request line has no target");
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return Status::InvalidArgument("request line has no version");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || method.size() > 16) return Status::InvalidArgument("bad method length");
  for (char c : method) {
    if (!IsTokenChar(c)) return Status::InvalidArgument("bad character in method");
  }
  if (target.empty() || target[0] != '/') {
    return Status::InvalidArgument("request target must start with /");
  }
  for (char c : target) {
    if (!IsTargetChar(c)) return Status::InvalidArgument("bad character in request target");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Status::InvalidArgument("unsupported HTTP version");
  }
  while (at < head.size()) {
    const std::string_view field = NextLine(head, &at);
    if (field.empty()) break;  // the blank line ending the head
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::InvalidArgument("header line without a name and a colon");
    }
    for (size_t i = 0; i < colon; ++i) {
      if (!IsTokenChar(field[i])) return Status::InvalidArgument("bad character in header name");
    }
    for (char c : field.substr(colon + 1)) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return Status::InvalidArgument("control character in header value");
      }
    }
  }
  out->method.assign(method);
  out->target.assign(target);
  out->path.assign(target.substr(0, target.find('?')));
  return Status::OK();
}

}  // namespace ddp
