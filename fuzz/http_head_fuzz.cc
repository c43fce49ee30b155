// The endpoint server's request head parser on arbitrary bytes. Besides not crashing: the head
// length is within the data, and a head that parses has a method and a path starting with "/".
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const size_t head = ddp::RequestHeadLength(bytes);
  if (head > size) std::abort();
  ddp::RequestHead h;
  if (ddp::ParseRequestHead(bytes.substr(0, head ? head : size), &h).ok()) {
    if (h.method.empty() || h.path.empty() || h.path[0] != '/') std::abort();
    if (h.target.compare(0, h.path.size(), h.path) != 0) std::abort();
  }
  return 0;
}
