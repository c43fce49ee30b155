// The watch stream's framing on arbitrary bytes, cut into reads at places the input chooses:
// the first byte gives the read size. Besides not crashing: no line handed out holds a newline,
// and the lines do not depend on where the reads were cut.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "operator/kube/client_watch_lines.h"

namespace {

std::vector<std::string> Lines(std::string_view body, size_t chunk) {
  ddp::controller::WatchLineSplitter split;
  std::vector<std::string> out;
  auto take = [&](std::string_view line) {
    if (line.find('\n') != std::string_view::npos) std::abort();
    out.emplace_back(line);
    (void)ddp::controller::ParseWatchLine(line, "fuzz");
    return true;
  };
  for (size_t at = 0; at < body.size(); at += chunk) split.Feed(body.substr(at, chunk), take);
  split.Finish(take);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (Lines(body, chunk) != Lines(body, body.size() + 1)) std::abort();
  return 0;
}
