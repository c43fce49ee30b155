// Request handling of FakeApiServer: auth, faults, routing to the store, watch streams.
#include <algorithm>
#include <iterator>

#include "tests/kube/fake_apiserver.h"
#include "tests/kube/fake_http.h"

namespace ddp::fake {
namespace {

using json = nlohmann::json;

const std::map<std::string, std::string> kJsonHeaders = {{"Content-Type", "application/json"}};

bool Reply(HttpConn& conn, const HttpRequest& req, int code, const json& body,
           int retry_after_s = 0) {
  std::map<std::string, std::string> headers = kJsonHeaders;
  if (retry_after_s > 0) headers["Retry-After"] = std::to_string(retry_after_s);
  return conn.WriteResponse(code, headers, body.dump(), req.keep_alive);
}

std::string ReasonFor(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "InternalError";
  }
}

std::string VerbOf(const HttpRequest& req, const std::string& name) {
  if (req.method == "GET") {
    auto w = req.query.find("watch");
    if (w != req.query.end() && (w->second == "true" || w->second == "1")) return "watch";
    return name.empty() ? "list" : "get";
  }
  if (req.method == "POST") return "create";
  if (req.method == "PUT") return "update";
  if (req.method == "PATCH") return "patch";
  if (req.method == "DELETE") return "delete";
  return "unknown";
}

std::string Query(const HttpRequest& req, const std::string& key) {
  auto it = req.query.find(key);
  return it == req.query.end() ? "" : it->second;
}

}  // namespace

std::optional<FakeApiServer::Fault> FakeApiServer::TakeFault(const std::string& verb,
                                                             const std::string& plural) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((it->verb.empty() || it->verb == verb) && (it->plural.empty() || it->plural == plural)) {
      Fault f = *it;
      if (--it->count <= 0) faults_.erase(it);
      return f;
    }
  }
  if (std::chrono::steady_clock::now() < fail_until_) {
    return Fault{verb, plural, fail_until_code_, 1, 0};
  }
  if (error_rate_ > 0) {
    rng_state_ ^= rng_state_ << 13;  // xorshift64: reproducible across runs
    rng_state_ ^= rng_state_ >> 7;
    rng_state_ ^= rng_state_ << 17;
    if (static_cast<double>(rng_state_ % 1000000) / 1e6 < error_rate_) {
      return Fault{verb, plural, 500, 1, 0};
    }
  }
  return std::nullopt;
}

bool FakeApiServer::Handle(HttpConn& conn, const HttpRequest& req) {
  Target t;
  if (!ParsePath(req.path, &t)) {
    if (req.path == "/fake/stats") {  // for benchmarks running fake-apiserver as a process
      json counts = json::object();
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [verb, n] : counts_) counts[verb] = n;
      }
      return Reply(conn, req, 200, json{{"requests", counts},
                                        {"resourceVersion", store_.resource_version()},
                                        {"watches", store_.watch_count()}});
    }
    if (req.path == "/healthz" || req.path == "/readyz" || req.path == "/livez") {
      return conn.WriteResponse(200, {{"Content-Type", "text/plain"}}, "ok", req.keep_alive);
    }
    return Reply(conn, req, 404, StatusBody(404, "NotFound", "the server could not find the "
                                                             "requested resource " + req.path));
  }
  std::string verb = VerbOf(req, t.name);
  std::chrono::milliseconds latency;
  std::function<void(const std::string&, const std::string&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[verb]++;
    last_authorization_ = req.Header("authorization");
    latency = latency_;
    hook = hook_;
    if (!token_.empty() && req.Header("authorization") != "Bearer " + token_) {
      return Reply(conn, req, 401, StatusBody(401, "Unauthorized", "Unauthorized"));
    }
  }
  if (hook) hook(verb, req.path);
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  if (std::optional<Fault> f = TakeFault(verb, t.type.plural)) {
    std::string msg = f->code == 403 ? ForbiddenMessage(verb, t)
                      : f->code == 409 ? "Operation cannot be fulfilled on " + t.type.plural +
                                             " \"" + t.name + "\": injected conflict"
                                       : "injected fault: " + verb + " " + t.type.plural;
    return Reply(conn, req, f->code, StatusBody(f->code, ReasonFor(f->code), msg),
                 f->retry_after_s);
  }
  std::optional<CrdInfo> crd;
  if (!Serves(t, &crd)) {
    return Reply(conn, req, 404, StatusBody(404, "NotFound",
                                            "the server could not find the requested resource"));
  }
  if (t.sub == "scale" && options_.scale_subresources.count(t.type.plural) && !t.name.empty()) {
    return ServeScale(conn, req, verb, t);
  }
  if (!t.sub.empty() && t.sub != "status") {
    return Reply(conn, req, 404, StatusBody(404, "NotFound", "subresource " + t.sub + " not served"));
  }
  bool status_only = t.sub == "status";
  json body;
  if (!req.body.empty()) {
    body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
      return Reply(conn, req, 400, StatusBody(400, "BadRequest", "the request body is not JSON"));
    }
    // A structural schema prunes the spec fields it does not declare.
    if (crd && !crd->spec_fields.empty() && body.is_object() && body.contains("spec") &&
        body["spec"].is_object()) {
      for (auto it = body["spec"].begin(); it != body["spec"].end();) {
        it = crd->spec_fields.count(it.key()) ? std::next(it) : body["spec"].erase(it);
      }
    }
  }
  StoreResult r;
  if (verb == "watch") {
    return ServeWatch(conn, req, t);
  } else if (verb == "get") {
    r = store_.Get(t.type, t.ns, t.name);
  } else if (verb == "list") {
    int64_t limit = std::atoll(Query(req, "limit").c_str());
    r = store_.List(t.type, t.ns, Query(req, "labelSelector"), limit, Query(req, "continue"));
  } else if (verb == "create" && t.name.empty()) {
    r = store_.Create(t.type, t.ns, body);
  } else if (verb == "update" && !t.name.empty()) {
    r = store_.Update(t.type, t.ns, t.name, body, status_only);
  } else if (verb == "patch" && !t.name.empty()) {
    std::string ct = req.Header("content-type");
    if (ct.find("merge-patch+json") == std::string::npos) {
      return Reply(conn, req, 415, StatusBody(415, "UnsupportedMediaType",
                                              "the fake serves only merge patches, got " + ct));
    }
    r = store_.Patch(t.type, t.ns, t.name, body, status_only);
  } else if (verb == "delete" && !t.name.empty()) {
    json opts = body.is_object() ? body : json::object();
    if (!Query(req, "propagationPolicy").empty()) opts["propagationPolicy"] = Query(req, "propagationPolicy");
    if (!Query(req, "gracePeriodSeconds").empty()) {
      opts["gracePeriodSeconds"] = std::atoll(Query(req, "gracePeriodSeconds").c_str());
    }
    r = store_.Delete(t.type, t.ns, t.name, opts);
  } else {
    r = StoreResult{405, StatusBody(405, "MethodNotAllowed", req.method + " " + req.path)};
  }
  return Reply(conn, req, r.code, r.body, r.retry_after_seconds);
}

// The scale subresource (kubectl scale, HPA): an autoscaling/v1 Scale mapped onto
// spec.replicas, status.replicas and status.selector, as the DDPJob CRD declares.
bool FakeApiServer::ServeScale(HttpConn& conn, const HttpRequest& req, const std::string& verb,
                               const Target& t) {
  StoreResult r = store_.Get(t.type, t.ns, t.name);
  if (r.code == 200 && (verb == "update" || verb == "patch")) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return Reply(conn, req, 400, StatusBody(400, "BadRequest", "the request body is not JSON"));
    }
    json scale = verb == "patch" ? json{{"spec", {{"replicas", r.body["spec"].value("replicas", 0)}}}}
                                 : json::object();
    if (verb == "patch") body = MergePatch(scale, body);
    if (!body.contains("spec") || !body["spec"].contains("replicas") ||
        !body["spec"]["replicas"].is_number_integer() || body["spec"]["replicas"] < 0) {
      return Reply(conn, req, 422, StatusBody(422, "Invalid", "Scale.spec.replicas: Invalid value: "
                                                              "must be a non-negative integer"));
    }
    json patch = {{"spec", {{"replicas", body["spec"]["replicas"]}}}};
    if (body.contains("metadata") && body["metadata"].contains("resourceVersion")) {
      patch["metadata"]["resourceVersion"] = body["metadata"]["resourceVersion"];
    }
    r = store_.Patch(t.type, t.ns, t.name, patch, false);
  }
  if (r.code != 200) return Reply(conn, req, r.code, r.body);
  const json& o = r.body;
  json st = o.contains("status") ? o["status"] : json::object();
  json scale = {{"kind", "Scale"}, {"apiVersion", "autoscaling/v1"},
                {"metadata", {{"name", t.name}, {"namespace", t.ns},
                              {"uid", o["metadata"]["uid"]},
                              {"resourceVersion", o["metadata"]["resourceVersion"]}}},
                {"spec", {{"replicas", o["spec"].value("replicas", 0)}}},
                {"status", {{"replicas", st.value("replicas", 0)}, {"selector", st.value("selector", "")}}}};
  return Reply(conn, req, 200, scale);
}

bool FakeApiServer::ServeWatch(HttpConn& conn, const HttpRequest& req, const Target& t) {
  StoreResult err;
  std::string bm = Query(req, "allowWatchBookmarks");
  std::shared_ptr<Watcher> w = store_.Watch(t.type, t.ns, Query(req, "labelSelector"),
                                            Query(req, "resourceVersion"),
                                            bm == "true" || bm == "1", &err);
  if (w == nullptr) return Reply(conn, req, err.code, err.body);
  int64_t timeout_s = std::atoll(Query(req, "timeoutSeconds").c_str());
  auto deadline = timeout_s > 0 ? std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s)
                                : std::chrono::steady_clock::time_point::max();
  bool ok = conn.BeginChunked(200, "application/json");
  bool cut = false;
  while (ok) {
    std::deque<std::string> lines;
    bool closed;
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->cv.wait_for(lock, std::chrono::milliseconds(100),
                     [&] { return !w->lines.empty() || w->closed; });
      lines.swap(w->lines);
      closed = w->closed;
      cut = w->abrupt;
    }
    if (cut) break;
    for (const std::string& line : lines) {
      if (!(ok = conn.WriteChunk(line))) break;
    }
    if (closed || stopping_ || std::chrono::steady_clock::now() >= deadline) break;
  }
  store_.Unwatch(w);
  if (!ok || cut || stopping_) {
    conn.Shutdown();
    return false;
  }
  return conn.EndChunked();
}

}  // namespace ddp::fake
