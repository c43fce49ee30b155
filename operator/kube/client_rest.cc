// RestClient's requests: one at a time (Json) or many in flight together (SendAll), with the
// client's retry rules; and NewRestClient. The watch stream is in client_rest_watch.cc.
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio/ssl.hpp>
#include <pplx/threadpool.h>

#include "common/logging.h"
#include "operator/kube/client_errors.h"
#include "operator/kube/client_rest.h"
#include "operator/kube/client_tls.h"

namespace ddp::controller {
namespace internal {
namespace {

using json = nlohmann::json;
namespace http = web::http;

// Requests of one batch in flight at once: enough to overlap an 8-pod job's creates, few enough
// that a 1,000-replica job does not open 1,000 connections.
constexpr size_t kMaxInFlight = 16;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

Call MakeCall(const std::string& verb, const http::method& method, std::string path_query,
              std::string body, std::string content_type, std::string context) {
  return Call{verb, method, std::move(path_query), std::move(body), std::move(content_type),
              std::move(context)};
}

bool IsWorkload(const Resource& r) { return r.kind == kPods.kind || r.kind == kServices.kind; }

Call CreateOf(const Resource& r, const std::string& ns, const json& obj) {
  std::string name = obj.contains("metadata") ? obj["metadata"].value("name", "") : "";
  Call c = MakeCall("create", http::methods::POST, r.Path(ns), obj.dump(), "application/json",
                    Context("create", r, ns, name));
  c.workload = IsWorkload(r);
  return c;
}

Call DeleteOf(const Resource& r, const std::string& ns, const std::string& name,
              const DeleteOptions& o) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (!o.precondition_uid.empty()) body["preconditions"]["uid"] = o.precondition_uid;
  if (!o.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = o.precondition_resource_version;
  }
  Call c = MakeCall("delete", http::methods::DEL, r.Path(ns, name), body.dump(),
                    "application/json", Context("delete", r, ns, name));
  c.workload = IsWorkload(r);
  return c;
}

}  // namespace

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Context(const std::string& verb, const Resource& r, const std::string& ns,
                    const std::string& name) {
  std::string where = ns.empty() ? name : (name.empty() ? ns : ns + "/" + name);
  return verb + " " + r.Display() + (where.empty() ? "" : " " + where);
}

RestClient::RestClient(ClientConfig cfg, std::shared_ptr<X509_STORE> ca_store,
                       std::string cert_pem, std::string key_pem)
    : cfg_(std::move(cfg)), ca_store_(std::move(ca_store)), cert_pem_(std::move(cert_pem)),
      key_pem_(std::move(key_pem)), limiter_(cfg_.qps, cfg_.burst),
      workload_limiter_(cfg_.qps, cfg_.burst),
      client_(utility::conversions::to_string_t(cfg_.server), MakeConfig(cfg_.request_timeout)) {}

StatusOr<json> RestClient::Get(const Resource& r, const std::string& ns, const std::string& name) {
  return Json(MakeCall("get", http::methods::GET, r.Path(ns, name), "", "",
                       Context("get", r, ns, name)));
}

StatusOr<json> RestClient::List(const Resource& r, const std::string& ns, const ListOptions& o) {
  web::uri_builder b(utility::conversions::to_string_t(r.Path(ns)));
  if (!o.label_selector.empty()) b.append_query("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) b.append_query("fieldSelector", o.field_selector);
  if (o.limit > 0) b.append_query("limit", o.limit);
  if (!o.continue_token.empty()) b.append_query("continue", o.continue_token);
  if (!o.resource_version.empty()) b.append_query("resourceVersion", o.resource_version);
  return Json(MakeCall("list", http::methods::GET, b.to_string(), "", "",
                       Context("list", r, ns, "")));
}

StatusOr<json> RestClient::Create(const Resource& r, const std::string& ns, const json& obj) {
  return Json(CreateOf(r, ns, obj));
}

Status RestClient::Delete(const Resource& r, const std::string& ns, const std::string& name,
                          const DeleteOptions& o) {
  return Json(DeleteOf(r, ns, name, o)).status();
}

std::vector<Status> RestClient::CreateAll(const std::vector<CreateCall>& calls) {
  std::vector<Call> prepared;
  for (const auto& c : calls) prepared.push_back(CreateOf(*c.resource, c.ns, c.object));
  return SendAll(prepared);
}

std::vector<Status> RestClient::DeleteAll(const std::vector<DeleteCall>& calls) {
  std::vector<Call> prepared;
  for (const auto& c : calls) prepared.push_back(DeleteOf(*c.resource, c.ns, c.name, c.options));
  return SendAll(prepared);
}

StatusOr<json> RestClient::MergePatch(const Resource& r, const std::string& ns,
                                      const std::string& name, const json& patch) {
  return Json(MakeCall("patch", http::methods::PATCH, r.Path(ns, name), patch.dump(),
                       "application/merge-patch+json", Context("patch", r, ns, name)));
}

StatusOr<json> RestClient::Update(const Resource& r, const std::string& ns,
                                  const std::string& name, const json& obj) {
  return Json(MakeCall("update", http::methods::PUT, r.Path(ns, name), obj.dump(),
                       "application/json", Context("update", r, ns, name)));
}

StatusOr<json> RestClient::UpdateStatus(const Resource& r, const std::string& ns,
                                        const std::string& name, const json& obj) {
  return Json(MakeCall("update", http::methods::PUT, r.Path(ns, name) + "/status", obj.dump(),
                       "application/json", Context("update status of", r, ns, name)));
}

StatusOr<json> RestClient::MergePatchStatus(const Resource& r, const std::string& ns,
                                            const std::string& name, const json& patch) {
  return Json(MakeCall("patch", http::methods::PATCH, r.Path(ns, name) + "/status",
                       patch.dump(), "application/merge-patch+json",
                       Context("patch status of", r, ns, name)));
}

void RestClient::SetRequestObserver(RequestObserver observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

void RestClient::Stop() {
  stopped_ = true;
  stop_source_.cancel();
}

http::client::http_client_config RestClient::MakeConfig(std::chrono::milliseconds timeout) const {
  http::client::http_client_config c;
  c.set_timeout(timeout);
  // The API server does not redirect; following one would carry the bearer token elsewhere
  // (a 3xx becomes an error instead). It also skips a pipeline stage per request.
  c.set_max_redirects(0);
  c.set_validate_certificates(!cfg_.insecure_skip_tls_verify);
  std::shared_ptr<X509_STORE> ca = ca_store_;
  std::string cert = cert_pem_, key = key_pem_;
  c.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
    if (ca) UseCaStore(ctx.native_handle(), ca);
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
    auto took = std::chrono::steady_clock::now() - start;
    obs(verb, code, std::chrono::duration<double>(took).count());
  }
}

http::http_request RestClient::NewRequest(const http::method& method,
                                          const std::string& path_query) {
  http::http_request req(method);
  req.set_request_uri(utility::conversions::to_string_t(path_query));
  req.headers().add(U("Accept"), U("application/json"));
  req.headers().add(U("User-Agent"), utility::conversions::to_string_t(cfg_.user_agent));
  std::string token = Token();
  if (!token.empty()) {
    req.headers().add(U("Authorization"), utility::conversions::to_string_t("Bearer " + token));
  }
  return req;
}

pplx::task<Reply> RestClient::SendAsync(const Call& call) {
  (call.workload ? workload_limiter_ : limiter_).Wait();
  try {
    http::http_request req = NewRequest(call.method, call.path_query);
    if (!call.body.empty()) req.set_body(call.body, call.content_type);
    // One chain per request: the waiter wakes once, when the whole body is in.
    return client_.request(req, stop_source_.get_token())
        .then([](http::http_response resp) {
          return resp.extract_utf8string(true).then([resp](std::string body) {
            Reply r;
            r.code = resp.status_code();
            r.body = std::move(body);
            auto it = resp.headers().find(U("Retry-After"));
            if (it != resp.headers().end()) {
              r.retry_after_s = ParseRetryAfter(utility::conversions::to_utf8string(it->second));
            }
            return r;
          });
        })
        .then([](pplx::task<Reply> t) {
          Reply r;
          try {
            r = t.get();
          } catch (const http::http_exception& e) {
            r.transport_error = e.error_code() == std::errc::timed_out
                                    ? std::string("timed out: ") + e.what() : e.what();
          } catch (const std::exception& e) {  // includes pplx::task_canceled after Stop()
            r.transport_error = e.what();
          }
          return r;
        });
  } catch (const std::exception& e) {  // a malformed URI or header
    Reply r;
    r.transport_error = e.what();
    return pplx::task_from_result(r);
  }
}

Reply RestClient::Exchange(const Call& call) {
  auto start = std::chrono::steady_clock::now();
  Reply rep = SendAsync(call).get();
  Observe(call.verb, rep.code, start);
  return rep;
}

StatusOr<json> RestClient::Complete(const Call& call, Reply rep, bool parse) {
  for (int attempt = 0;; ++attempt) {
    Status st;
    if (rep.code == 0) {
      st = rep.transport_error.rfind("timed out", 0) == 0
               ? Status::DeadlineExceeded(call.context + ": " + rep.transport_error)
               : Status::Unavailable(call.context + ": " + rep.transport_error);
    } else {
      st = StatusFromHttp(rep.code, rep.body, call.context);
    }
    if (st.ok()) {
      if (!parse) return json();
      json j = json::parse(rep.body, nullptr, false);
      if (j.is_discarded()) return Status::Internal(call.context + ": the response is not JSON");
      return j;
    }
    if (attempt < cfg_.max_retries && ShouldRetry(rep.code, call.verb) && !stopped_) {
      auto delay = rep.retry_after_s >= 0 ? std::chrono::milliseconds(rep.retry_after_s * 1000)
                                          : std::chrono::milliseconds(100 << std::min(attempt, 5));
      DDP_LOG(DEBUG) << call.context << ": retrying in " << delay.count()
                     << " ms: " << st.message();
      // Sleep in slices so that Stop() is not held up by a long Retry-After.
      auto until = std::chrono::steady_clock::now() + delay;
      while (!stopped_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
      }
      if (stopped_) return Status::Unavailable(call.context + ": client stopped");
      rep = Exchange(call);
      continue;
    }
    if (rep.retry_after_s >= 0) {
      return Status(st.code(), st.message() + " (retry after " +
                                   std::to_string(rep.retry_after_s) + "s)");
    }
    return st;
  }
}

StatusOr<json> RestClient::Json(const Call& call) {
  if (stopped_) return Status::Unavailable(call.context + ": client stopped");
  return Complete(call, Exchange(call), /*parse=*/true);
}

std::vector<Status> RestClient::SendAll(const std::vector<Call>& calls) {
  std::vector<Status> out;
  out.reserve(calls.size());
  struct InFlight {
    pplx::task<Reply> reply;
    std::chrono::steady_clock::time_point start;
  };
  std::deque<InFlight> window;  // the calls [out.size(), next)
  size_t next = 0;
  while (out.size() < calls.size()) {
    // Keep the window full, then finish the oldest call (results stay in call order).
    while (next < calls.size() && window.size() < kMaxInFlight && !stopped_) {
      auto start = std::chrono::steady_clock::now();
      window.push_back({SendAsync(calls[next]), start});
      ++next;
    }
    const Call& call = calls[out.size()];
    if (window.empty()) {  // stopped before this call was sent
      out.push_back(Status::Unavailable(call.context + ": client stopped"));
      continue;
    }
    InFlight f = std::move(window.front());
    window.pop_front();
    Reply rep = f.reply.get();
    Observe(call.verb, rep.code, f.start);
    out.push_back(Complete(call, std::move(rep), /*parse=*/false).status());
  }
  return out;
}

}  // namespace internal

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
      *out = internal::ReadFile(file, &ok);
      if (!ok) return Status::InvalidArgument(std::string(what) + " file " + file + ": cannot read");
    }
    return Status::OK();
  };
  std::string ca, cert, key;
  DDP_RETURN_IF_ERROR(load(config.ca_data, config.ca_file, "CA", &ca));
  DDP_RETURN_IF_ERROR(load(config.client_cert_data, config.client_cert_file, "client certificate", &cert));
  DDP_RETURN_IF_ERROR(load(config.client_key_data, config.client_key_file, "client key", &key));
  std::shared_ptr<X509_STORE> ca_store;
  if (!ca.empty()) {
    int count = 0;
    ca_store = NewCaStore(ca, &count);
    if (count == 0) {
      return Status::InvalidArgument(
          "CA " + (config.ca_file.empty() ? std::string("data") : config.ca_file) +
          ": no PEM certificate found");
    }
  }
  if (cert.empty() != key.empty()) {
    return Status::InvalidArgument("a client certificate needs both the certificate and the key");
  }
  if (!cert.empty() && !UseClientCert(nullptr, cert, key)) {
    return Status::InvalidArgument("client certificate or key: not valid PEM");
  }
  if (config.io_threads < 1) return Status::InvalidArgument("io_threads must be at least 1");
  static std::once_flag pool_once;
  std::call_once(pool_once, [&] {
    try {
      crossplat::threadpool::initialize_with_threads(static_cast<size_t>(config.io_threads));
    } catch (const std::exception& e) {  // something in this process used cpprestsdk first
      DDP_LOG(WARNING) << "cpprestsdk I/O pool already started; keeping its size: " << e.what();
    }
  });
  try {
    return std::unique_ptr<KubeClient>(new internal::RestClient(config, ca_store, cert, key));
  } catch (const std::exception& e) {
    return Status::InvalidArgument("server \"" + s + "\": " + e.what());
  }
}

}  // namespace ddp::controller
