// KubeClient over HTTP(S) with cpprestsdk. cpprest exceptions stop here and become Statuses.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <boost/asio/ssl.hpp>
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include "common/logging.h"
#include "operator/kube/client.h"
#include "operator/kube/client_errors.h"
#include "operator/kube/client_tls.h"
#include "operator/kube/client_watch_lines.h"
#include "operator/kube/rate_limiter.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;
namespace http = web::http;

// Bytes read from a watch stream at once: several events of a busy stream per read.
constexpr size_t kWatchReadBytes = 64 << 10;

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Context(const std::string& verb, const Resource& r, const std::string& ns,
                    const std::string& name) {
  std::string where = ns.empty() ? name : (name.empty() ? ns : ns + "/" + name);
  return verb + " " + r.Display() + (where.empty() ? "" : " " + where);
}

// A reply from one HTTP exchange; code 0 when none arrived.
struct Reply {
  int code = 0;
  std::string body;
  int retry_after_s = -1;
  std::string transport_error;
};

class RestClient : public KubeClient {
 public:
  RestClient(ClientConfig cfg, std::string ca_pem, std::string cert_pem, std::string key_pem)
      : cfg_(std::move(cfg)), ca_pem_(std::move(ca_pem)), cert_pem_(std::move(cert_pem)),
        key_pem_(std::move(key_pem)), limiter_(cfg_.qps, cfg_.burst),
        client_(utility::conversions::to_string_t(cfg_.server), MakeConfig(cfg_.request_timeout)) {}

  StatusOr<json> Get(const Resource& r, const std::string& ns, const std::string& name) override {
    return Json("get", http::methods::GET, r.Path(ns, name), "", "", Context("get", r, ns, name));
  }

  StatusOr<json> List(const Resource& r, const std::string& ns, const ListOptions& o) override {
    web::uri_builder b(utility::conversions::to_string_t(r.Path(ns)));
    if (!o.label_selector.empty()) b.append_query("labelSelector", o.label_selector);
    if (!o.field_selector.empty()) b.append_query("fieldSelector", o.field_selector);
    if (o.limit > 0) b.append_query("limit", o.limit);
    if (!o.continue_token.empty()) b.append_query("continue", o.continue_token);
    if (!o.resource_version.empty()) b.append_query("resourceVersion", o.resource_version);
    return Json("list", http::methods::GET, b.to_string(), "", "", Context("list", r, ns, ""));
  }

  StatusOr<json> Create(const Resource& r, const std::string& ns, const json& obj) override {
    std::string name = obj.contains("metadata") ? obj["metadata"].value("name", "") : "";
    return Json("create", http::methods::POST, r.Path(ns), obj.dump(), "application/json",
                Context("create", r, ns, name));
  }

  Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& o) override {
    json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
    if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
    if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
    if (!o.precondition_uid.empty()) body["preconditions"]["uid"] = o.precondition_uid;
    if (!o.precondition_resource_version.empty()) {
      body["preconditions"]["resourceVersion"] = o.precondition_resource_version;
    }
    return Json("delete", http::methods::DEL, r.Path(ns, name), body.dump(), "application/json",
                Context("delete", r, ns, name)).status();
  }

  StatusOr<json> MergePatch(const Resource& r, const std::string& ns, const std::string& name,
                            const json& patch) override {
    return Json("patch", http::methods::PATCH, r.Path(ns, name), patch.dump(),
                "application/merge-patch+json", Context("patch", r, ns, name));
  }

  StatusOr<json> Update(const Resource& r, const std::string& ns, const std::string& name,
                        const json& obj) override {
    return Json("update", http::methods::PUT, r.Path(ns, name), obj.dump(), "application/json",
                Context("update", r, ns, name));
  }

  StatusOr<json> UpdateStatus(const Resource& r, const std::string& ns, const std::string& name,
                              const json& obj) override {
    return Json("update", http::methods::PUT, r.Path(ns, name) + "/status", obj.dump(),
                "application/json", Context("update status of", r, ns, name));
  }

  StatusOr<json> MergePatchStatus(const Resource& r, const std::string& ns,
                                  const std::string& name, const json& patch) override {
    return Json("patch", http::methods::PATCH, r.Path(ns, name) + "/status", patch.dump(),
                "application/merge-patch+json", Context("patch status of", r, ns, name));
  }

  Status Watch(const Resource& r, const std::string& ns, const WatchOptions& o,
               const std::function<bool(const WatchEvent&)>& on_event) override;

  void SetRequestObserver(RequestObserver observer) override {
    std::lock_guard<std::mutex> lock(mu_);
    observer_ = std::move(observer);
  }

  void Stop() override {
    stopped_ = true;
    stop_source_.cancel();
  }

 private:
  http::client::http_client_config MakeConfig(std::chrono::milliseconds timeout) const;
  std::string Token();
  void Observe(const std::string& verb, int code, std::chrono::steady_clock::time_point start);
  // One attempt. Fills the reply; never throws.
  Reply Send(http::client::http_client& client, const http::method& method,
             const std::string& path_query, const std::string& body,
             const std::string& content_type);
  // Attempts with retries; returns the parsed JSON body or the mapped Status.
  StatusOr<json> Json(const std::string& verb, const http::method& method,
                      const std::string& path_query, const std::string& body,
                      const std::string& content_type, const std::string& context);

  const ClientConfig cfg_;
  const std::string ca_pem_, cert_pem_, key_pem_;
  TokenBucket limiter_;
  http::client::http_client client_;
  pplx::cancellation_token_source stop_source_;
  std::atomic<bool> stopped_{false};
  std::mutex mu_;  // guards observer_ and the token cache
  RequestObserver observer_;
  std::string token_;
  struct timespec token_mtime_ {};
  off_t token_size_ = -1;
};

http::client::http_client_config RestClient::MakeConfig(std::chrono::milliseconds timeout) const {
  http::client::http_client_config c;
  c.set_timeout(timeout);
  c.set_validate_certificates(!cfg_.insecure_skip_tls_verify);
  std::string ca = ca_pem_, cert = cert_pem_, key = key_pem_;
  c.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) AddCaBundle(ctx.native_handle(), ca);
    if (!cert.empty()) UseClientCert(ctx.native_handle(), cert, key);
  });
  return c;
}

std::string RestClient::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cfg_.token_file.empty()) return cfg_.bearer_token;
  // Projected service-account tokens are replaced on disk (about hourly): re-read on change.
  struct stat st;
  if (::stat(cfg_.token_file.c_str(), &st) == 0 &&
      (st.st_mtim.tv_sec != token_mtime_.tv_sec || st.st_mtim.tv_nsec != token_mtime_.tv_nsec ||
       st.st_size != token_size_)) {
    bool ok;
    std::string t = Trim(ReadFile(cfg_.token_file, &ok));
    if (ok) {
      token_ = t;
      token_mtime_ = st.st_mtim;
      token_size_ = st.st_size;
    }
  }
  return token_.empty() ? cfg_.bearer_token : token_;
}

void RestClient::Observe(const std::string& verb, int code,
                         std::chrono::steady_clock::time_point start) {
  RequestObserver obs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    obs = observer_;
  }
  if (obs) {
    obs(verb, code, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

http::http_request NewRequest(const http::method& method, const std::string& path_query,
                              const std::string& token, const std::string& user_agent) {
  http::http_request req(method);
  req.set_request_uri(utility::conversions::to_string_t(path_query));
  req.headers().add(U("Accept"), U("application/json"));
  req.headers().add(U("User-Agent"), utility::conversions::to_string_t(user_agent));
  if (!token.empty()) {
    req.headers().add(U("Authorization"), utility::conversions::to_string_t("Bearer " + token));
  }
  return req;
}

Reply RestClient::Send(http::client::http_client& client, const http::method& method,
                       const std::string& path_query, const std::string& body,
                       const std::string& content_type) {
  Reply reply;
  try {
    http::http_request req = NewRequest(method, path_query, Token(), cfg_.user_agent);
    if (!body.empty()) req.set_body(body, content_type);
    http::http_response resp = client.request(req, stop_source_.get_token()).get();
    reply.code = resp.status_code();
    reply.body = resp.extract_utf8string(true).get();
    auto it = resp.headers().find(U("Retry-After"));
    if (it != resp.headers().end()) {
      reply.retry_after_s = ParseRetryAfter(utility::conversions::to_utf8string(it->second));
    }
  } catch (const http::http_exception& e) {
    reply.code = 0;
    reply.transport_error = e.error_code() == std::errc::timed_out
                                ? std::string("timed out: ") + e.what() : e.what();
  } catch (const std::exception& e) {
    reply.code = 0;
    reply.transport_error = e.what();
  }
  return reply;
}

StatusOr<json> RestClient::Json(const std::string& verb, const http::method& method,
                                const std::string& path_query, const std::string& body,
                                const std::string& content_type, const std::string& context) {
  for (int attempt = 0;; ++attempt) {
    if (stopped_) return Status::Unavailable(context + ": client stopped");
    limiter_.Wait();
    auto start = std::chrono::steady_clock::now();
    Reply rep = Send(client_, method, path_query, body, content_type);
    Observe(verb, rep.code, start);
    Status st;
    if (rep.code == 0) {
      st = rep.transport_error.rfind("timed out", 0) == 0
               ? Status::DeadlineExceeded(context + ": " + rep.transport_error)
               : Status::Unavailable(context + ": " + rep.transport_error);
    } else {
      st = StatusFromHttp(rep.code, rep.body, context);
    }
    if (st.ok()) {
      json j = json::parse(rep.body, nullptr, false);
      if (j.is_discarded()) return Status::Internal(context + ": the response is not JSON");
      return j;
    }
    if (attempt < cfg_.max_retries && ShouldRetry(rep.code, verb) && !stopped_) {
      auto delay = rep.retry_after_s >= 0 ? std::chrono::milliseconds(rep.retry_after_s * 1000)
                                          : std::chrono::milliseconds(100 << std::min(attempt, 5));
      DDP_LOG(DEBUG) << context << ": retrying in " << delay.count() << " ms: " << st.message();
      // Sleep in slices so that Stop() is not held up by a long Retry-After.
      auto until = std::chrono::steady_clock::now() + delay;
      while (!stopped_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
      }
      continue;
    }
    if (rep.retry_after_s >= 0) {
      return Status(st.code(), st.message() + " (retry after " +
                                   std::to_string(rep.retry_after_s) + "s)");
    }
    return st;
  }
}

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
    http::http_request req = NewRequest(http::methods::GET, b.to_string(), Token(), cfg_.user_agent);
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

}  // namespace

StatusOr<std::unique_ptr<KubeClient>> NewRestClient(const ClientConfig& config) {
  const std::string& s = config.server;
  if (s.rfind("https://", 0) != 0 && s.rfind("http://", 0) != 0) {
    return Status::InvalidArgument("server \"" + s + "\" must start with https:// or http://");
  }
  auto load = [](const std::string& data, const std::string& file, const char* what,
                 std::string* out) -> Status {
    *out = data;
    if (out->empty() && !file.empty()) {
      bool ok;
      *out = ReadFile(file, &ok);
      if (!ok) return Status::InvalidArgument(std::string(what) + " file " + file + ": cannot read");
    }
    return Status::OK();
  };
  std::string ca, cert, key;
  DDP_RETURN_IF_ERROR(load(config.ca_data, config.ca_file, "CA", &ca));
  DDP_RETURN_IF_ERROR(load(config.client_cert_data, config.client_cert_file, "client certificate", &cert));
  DDP_RETURN_IF_ERROR(load(config.client_key_data, config.client_key_file, "client key", &key));
  if (!ca.empty() && AddCaBundle(nullptr, ca) == 0) {
    return Status::InvalidArgument("CA " + (config.ca_file.empty() ? std::string("data") : config.ca_file) +
                                   ": no PEM certificate found");
  }
  if (cert.empty() != key.empty()) {
    return Status::InvalidArgument("a client certificate needs both the certificate and the key");
  }
  if (!cert.empty() && !UseClientCert(nullptr, cert, key)) {
    return Status::InvalidArgument("client certificate or key: not valid PEM");
  }
  try {
    return std::unique_ptr<KubeClient>(new RestClient(config, ca, cert, key));
  } catch (const std::exception& e) {
    return Status::InvalidArgument("server \"" + s + "\": " + e.what());
  }
}

}  // namespace ddp::controller
