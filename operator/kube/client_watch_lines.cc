#include "operator/kube/client_watch_lines.h"

#include <nlohmann/json.hpp>

#include "operator/kube/client_errors.h"

namespace ddp::controller {
namespace {

// A line longer than this leaves its buffer's capacity behind; give it back after such a line so
// one huge object does not pin memory for the life of the stream.
constexpr size_t kKeepCapacity = 1 << 20;

std::string_view WithoutCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

bool WatchLineSplitter::Feed(std::string_view data,
                             const std::function<bool(std::string_view)>& on_line) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(data);
      return true;
    }
    std::string_view line;
    if (partial_.empty()) {
      line = data.substr(0, nl);  // the common case: no copy
    } else {
      partial_.append(data.substr(0, nl));
      line = partial_;
    }
    data.remove_prefix(nl + 1);
    line = WithoutCr(line);
    bool go_on = line.empty() || on_line(line);
    partial_.clear();
    if (partial_.capacity() > kKeepCapacity) partial_.shrink_to_fit();
    if (!go_on) return false;
  }
  return true;
}

bool WatchLineSplitter::Finish(const std::function<bool(std::string_view)>& on_line) {
  std::string rest;
  rest.swap(partial_);
  std::string_view line = WithoutCr(rest);
  return line.empty() || on_line(line);
}

StatusOr<WatchEvent> ParseWatchLine(std::string_view line, const std::string& context) {
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j.contains("object")) {
    return Status::Internal(context + ": malformed watch event: " +
                            std::string(line.substr(0, 200)));
  }
  const std::string type = j["type"].is_string() ? j["type"].get<std::string>() : "";
  WatchEvent ev;
  ev.object = std::move(j["object"]);
  if (type == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    // The object is a Status; map it as an HTTP reply with its code. 410 means the
    // resourceVersion is too old: the informer must re-list, so it gets its own code.
    // A Status without a usable error code is still an error.
    int code = 500;
    if (ev.object.is_object() && ev.object.contains("code") &&
        ev.object["code"].is_number_integer() && ev.object["code"].get<int>() >= 400) {
      code = ev.object["code"].get<int>();
    }
    Status s = StatusFromHttp(code, ev.object.dump(), context);
    return code == 410 ? Status::Gone(s.message()) : s;
  } else {
    return Status::Internal(context + ": unknown watch event type \"" + type + "\"");
  }
  return ev;
}

}  // namespace ddp::controller
