// RestClient::Watch: one watch stream, read in chunks and split into events here.
#include <algorithm>
#include <memory>

#include <cpprest/containerstream.h>

#include "operator/kube/client_errors.h"
#include "operator/kube/client_rest.h"
#include "operator/kube/client_watch_lines.h"

namespace ddp::controller::internal {
namespace {

namespace http = web::http;

// Bytes read from a watch stream at once: several events of a busy stream per read.
constexpr size_t kWatchReadBytes = 64 << 10;

}  // namespace

Status RestClient::Watch(const Resource& r, const std::string& ns, const WatchOptions& o,
                         const std::function<bool(const WatchEvent&)>& on_event) {
  const std::string context = Context("watch", r, ns, "");
  if (stopped_) return Status::Unavailable(context + ": client stopped");
  web::uri_builder b(utility::conversions::to_string_t(r.Path(ns)));
  b.append_query("watch", "true");
  if (!o.resource_version.empty()) b.append_query("resourceVersion", o.resource_version);
  if (!o.label_selector.empty()) b.append_query("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) b.append_query("fieldSelector", o.field_selector);
  if (o.allow_bookmarks) b.append_query("allowWatchBookmarks", "true");
  if (o.timeout_seconds > 0) b.append_query("timeoutSeconds", o.timeout_seconds);
  // The stream may legitimately stay open for timeout_seconds: the client-side timeout is longer.
  auto timeout = std::chrono::milliseconds(std::max(o.timeout_seconds, 0) * 1000) +
                 cfg_.request_timeout;
  http::client::http_client client(utility::conversions::to_string_t(cfg_.server),
                                   MakeConfig(timeout));
  pplx::cancellation_token stop_token = stop_source_.get_token();
  pplx::cancellation_token_source cts =
      pplx::cancellation_token_source::create_linked_source(stop_token);
  int cancel_id = -1;
  if (o.cancel) cancel_id = o.cancel->AddCallback([cts] { cts.cancel(); });
  struct Unregister {
    const WatchOptions& o;
    int id;
    ~Unregister() {
      if (o.cancel && id >= 0) o.cancel->RemoveCallback(id);
    }
  } unregister{o, cancel_id};

  limiter_.Wait();
  auto start = std::chrono::steady_clock::now();
  int code = 0;
  Status result;
  try {
    http::http_request req = NewRequest(http::methods::GET, b.to_string());
    http::http_response resp = client.request(req, cts.get_token()).get();
    code = resp.status_code();
    if (code != 200) {
      std::string body = resp.extract_utf8string(true).get();
      Observe("watch", code, start);
      return StatusFromHttp(code, body, context);
    }
    // Read whatever has arrived, up to kWatchReadBytes at a time, and split lines here: the
    // stream's read_line runs one task per character, which made watch streams the operator's
    // main CPU cost. The body buffer completes a getn only once `count` bytes arrived (or the
    // stream ended), so ask for at most what is available; when nothing is, wait for one byte.
    // A broken connection, a timeout and a cancellation surface as an exception from these
    // reads, as they did from read_line.
    auto body = resp.body().streambuf();
    std::unique_ptr<uint8_t[]> buf(new uint8_t[kWatchReadBytes]);
    WatchLineSplitter lines;
    bool go_on = true;
    auto on_line = [&](std::string_view line) {
      auto ev = ParseWatchLine(line, context);
      if (!ev.ok()) {
        result = ev.status();
        return false;
      }
      return on_event(*ev);
    };
    while (go_on) {
      size_t avail = body.in_avail();
      if (avail == 0) {
        if (body.getc().get() == Concurrency::streams::char_traits<uint8_t>::eof()) {
          go_on = lines.Finish(on_line);
          break;
        }
        avail = body.in_avail();
      }
      size_t n = body.getn(buf.get(), std::min(avail, kWatchReadBytes)).get();
      if (n == 0) {  // the end of the stream
        go_on = lines.Finish(on_line);
        break;
      }
      go_on = lines.Feed(std::string_view(reinterpret_cast<const char*>(buf.get()), n), on_line);
    }
  } catch (const std::exception& e) {
    if (!cts.get_token().is_canceled()) {
      bool timed_out = false;
      if (auto* he = dynamic_cast<const http::http_exception*>(&e)) {
        timed_out = he->error_code() == std::errc::timed_out;
      }
      result = timed_out ? Status::DeadlineExceeded(context + ": " + e.what())
                         : Status::Unavailable(context + ": stream broken: " + e.what());
    }
  }
  cts.cancel();  // closes the connection if the stream is still open (on_event said stop)
  Observe("watch", code, start);
  return result;
}

}  // namespace ddp::controller::internal
