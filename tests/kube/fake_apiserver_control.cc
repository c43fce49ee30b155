// FakeApiServer's test-facing controls: faults, counters, direct store access, the kubelet.
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/fake_http.h"

namespace ddp::fake {
namespace {
using json = nlohmann::json;
std::string PodsPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/pods"; }
}  // namespace

void FakeApiServer::FailNext(const std::string& verb, const std::string& plural, int code,
                             int count, int retry_after_s) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(Fault{verb, plural, code, count, retry_after_s});
}

void FakeApiServer::SetErrorRate(double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  error_rate_ = fraction;
}

void FakeApiServer::FailFor(std::chrono::milliseconds duration, int code) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_until_ = std::chrono::steady_clock::now() + duration;
  fail_until_code_ = code;
}

void FakeApiServer::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_ = latency;
}

void FakeApiServer::DropWatches(bool cut) { store_.DropWatches(cut); }

void FakeApiServer::Restart() {
  store_.ForgetHistory();
  store_.DropWatches(true);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, c] : conns_) c->Shutdown();
}

void FakeApiServer::SetBearerToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = token;
}

void FakeApiServer::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.clear();
  error_rate_ = 0;
  fail_until_ = {};
  latency_ = std::chrono::milliseconds(0);
}

int64_t FakeApiServer::RequestCount(const std::string& verb) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!verb.empty()) {
    auto it = counts_.find(verb);
    return it == counts_.end() ? 0 : it->second;
  }
  int64_t total = 0;
  for (auto& [v, n] : counts_) total += n;
  return total;
}

std::string FakeApiServer::LastAuthorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_authorization_;
}

void FakeApiServer::ResetCounters() {
  std::lock_guard<std::mutex> lock(mu_);
  counts_.clear();
}

void FakeApiServer::SetRequestHook(
    std::function<void(const std::string& verb, const std::string& path)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

std::optional<json> FakeApiServer::GetObject(const std::string& path) {
  Target t;
  if (!ParsePath(path, &t) || t.name.empty()) return std::nullopt;
  StoreResult r = store_.Get(t.type, t.ns, t.name);
  if (r.code != 200) return std::nullopt;
  return r.body;
}

std::vector<json> FakeApiServer::Objects(const std::string& collection_path) {
  Target t;
  if (!ParsePath(collection_path, &t)) return {};
  return store_.Objects(t.type.collection, t.ns);
}

std::optional<json> FakeApiServer::CreateObject(const std::string& collection_path,
                                                const json& obj, std::string* error) {
  Target t;
  if (!ParsePath(collection_path, &t) || !t.name.empty()) {
    *error = "not a collection path: " + collection_path;
    return std::nullopt;
  }
  StoreResult r = store_.Create(t.type, t.ns, obj);
  if (r.code != 201) {
    *error = r.body.value("message", "create failed");
    return std::nullopt;
  }
  return r.body;
}

bool FakeApiServer::Mutate(const std::string& path, const std::function<void(json&)>& fn) {
  Target t;
  if (!ParsePath(path, &t) || t.name.empty()) return false;
  return store_.Mutate(t.type.collection, t.ns, t.name, fn).code == 200;
}

bool FakeApiServer::RemoveObject(const std::string& path) {
  Target t;
  if (!ParsePath(path, &t) || t.name.empty()) return false;
  return store_.Remove(t.type.collection, t.ns, t.name).code == 200;
}

bool FakeApiServer::SetPodPhase(const std::string& ns, const std::string& name,
                                const std::string& phase) {
  return Mutate(PodsPath(ns) + "/" + name, [&](json& pod) {
    json& st = pod["status"];
    st["phase"] = phase;
    bool running = phase == "Running";
    st["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}},
                                    {{"type", "Ready"}, {"status", running ? "True" : "False"}}});
    if (running) {
      st["podIP"] = "10.0.0." + std::to_string(std::hash<std::string>()(name) % 250 + 1);
      json statuses = json::array();
      for (const json& c : pod["spec"].value("containers", json::array())) {
        statuses.push_back({{"name", c.value("name", "")}, {"ready", true}, {"restartCount", 0},
                            {"state", {{"running", {{"startedAt", "2024-01-01T00:00:00Z"}}}}}});
      }
      st["containerStatuses"] = statuses;
    }
  });
}

bool FakeApiServer::TerminatePod(const std::string& ns, const std::string& name, int exit_code,
                                 const std::string& reason, const std::string& message) {
  return Mutate(PodsPath(ns) + "/" + name, [&](json& pod) {
    json& st = pod["status"];
    st["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
    std::string why = !reason.empty() ? reason : exit_code == 0 ? "Completed" : "Error";
    json terminated = {{"exitCode", exit_code}, {"reason", why}};
    if (!message.empty()) terminated["message"] = message;
    json statuses = json::array();
    for (const json& c : pod["spec"].value("containers", json::array())) {
      statuses.push_back({{"name", c.value("name", "")}, {"ready", false}, {"restartCount", 0},
                          {"state", {{"terminated", terminated}}}});
    }
    st["containerStatuses"] = statuses;
    st["conditions"] = json::array({{{"type", "Ready"}, {"status", "False"}}});
  });
}

bool FakeApiServer::EvictPod(const std::string& ns, const std::string& name) {
  return Mutate(PodsPath(ns) + "/" + name, [&](json& pod) {
    json& st = pod["status"];
    st["phase"] = "Failed";
    st["reason"] = "Evicted";
    st["message"] = "The node was low on resource: memory.";
    st.erase("containerStatuses");
    st["conditions"] = json::array({{{"type", "DisruptionTarget"}, {"status", "True"},
                                     {"reason", "TerminationByKubelet"}},
                                    {{"type", "Ready"}, {"status", "False"}}});
  });
}

bool FakeApiServer::SetPodUnschedulable(const std::string& ns, const std::string& name) {
  return Mutate(PodsPath(ns) + "/" + name, [&](json& pod) {
    pod["status"]["phase"] = "Pending";
    pod["status"]["conditions"] = json::array(
        {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
          {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}});
  });
}

bool FakeApiServer::FinalizePod(const std::string& ns, const std::string& name,
                                const std::string& uid) {
  auto pod = GetObject(PodsPath(ns) + "/" + name);
  if (!pod || !(*pod)["metadata"].contains("deletionTimestamp")) return false;
  // By UID: the pod read above, even if a successor took the name meanwhile.
  const std::string incarnation = uid.empty() ? (*pod)["metadata"].value("uid", "") : uid;
  return store_.Remove("/api/v1/pods", ns, name, incarnation).code == 200;
}

bool FakeApiServer::BindPod(const std::string& ns, const std::string& name,
                            const std::string& node) {
  return Mutate(PodsPath(ns) + "/" + name, [&](json& pod) { pod["spec"]["nodeName"] = node; });
}

bool FakeApiServer::AddNode(const std::string& name) {
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}},
               {"spec", json::object()}};
  std::string error;
  if (!CreateObject("/api/v1/nodes", node, &error)) return false;
  return SetNodeReady(name, "True");
}

bool FakeApiServer::SetNodeReady(const std::string& name, const std::string& status) {
  static const char* const kLifecycleTaints[] = {"node.kubernetes.io/unreachable",
                                                 "node.kubernetes.io/not-ready"};
  return Mutate("/api/v1/nodes/" + name, [&](json& node) {
    json taints = json::array();
    for (const json& t : node["spec"].value("taints", json::array())) {
      const std::string key = t.value("key", "");
      if (key != kLifecycleTaints[0] && key != kLifecycleTaints[1]) taints.push_back(t);
    }
    std::string reason = "KubeletReady", message = "kubelet is posting ready status";
    if (status != "True") {
      const bool unknown = status == "Unknown";
      reason = unknown ? "NodeStatusUnknown" : "KubeletNotReady";
      message = unknown ? "Kubelet stopped posting node status." : "container runtime is down";
      for (const char* effect : {"NoSchedule", "NoExecute"}) {
        taints.push_back({{"key", kLifecycleTaints[unknown ? 0 : 1]}, {"effect", effect}});
      }
    }
    node["spec"]["taints"] = taints;
    node["status"]["conditions"] = json::array(
        {{{"type", "Ready"}, {"status", status}, {"reason", reason}, {"message", message}}});
  });
}

}  // namespace ddp::fake
