// The watch stream's framing: the body of a `?watch=true` response is one JSON event per line
// ({"type": ..., "object": ...}). This module splits received bytes into lines and turns a line
// into a WatchEvent or a Status. Pure (no I/O), so the framing is tested without a server; the
// REST client (client_rest.cc) owns reading the bytes.
#ifndef DDP_OPERATOR_KUBE_CLIENT_WATCH_LINES_H_
#define DDP_OPERATOR_KUBE_CLIENT_WATCH_LINES_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "operator/kube/client.h"

namespace ddp::controller {

// Accumulates bytes across reads and hands out whole lines. Not thread-safe: one per stream.
class WatchLineSplitter {
 public:
  // Appends `data` and calls on_line for every line it completes, in order, without its "\n"
  // (and a "\r" before it); empty lines are skipped. The view is valid only during the call.
  // Stops early and returns false as soon as on_line returns false (the rest is dropped);
  // returns true otherwise.
  bool Feed(std::string_view data, const std::function<bool(std::string_view)>& on_line);
  // At the end of the stream: calls on_line with an unterminated last line, if any (a server
  // may omit the final "\n"). Returns what on_line returned, or true when there was none.
  bool Finish(const std::function<bool(std::string_view)>& on_line);

 private:
  std::string partial_;  // bytes of a line whose "\n" has not arrived yet
};

// Parses one line of a watch stream. `context` prefixes error messages ("watch pods ml").
// Result: ADDED/MODIFIED/DELETED/BOOKMARK -> the event; an ERROR event -> its Status as an HTTP
// reply with that code would map (410 -> Gone, as "resourceVersion too old"); a line that is not
// {"type", "object"} JSON or an unknown type -> Internal naming the problem.
StatusOr<WatchEvent> ParseWatchLine(std::string_view line, const std::string& context);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_WATCH_LINES_H_
