// A Kubernetes API server for tests: HTTP(S) on 127.0.0.1, generic storage for any resource path
// (/api/v1/..., /apis/<group>/<version>/...), following the API conventions (see fake_store.h),
// with fault injection and kubelet-like helpers. Start() it in-process, or run `fake-apiserver`.
// Thread-safe: every public method may be called from any thread while it serves.
#ifndef DDP_TESTS_KUBE_FAKE_APISERVER_H_
#define DDP_TESTS_KUBE_FAKE_APISERVER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/kube/fake_store.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace ddp::fake {

class HttpConn;
struct HttpRequest;

// A CustomResourceDefinition: its resource is served only once registered (RegisterCrd).
struct CrdInfo {
  std::string group, version, plural, kind;
  bool status_subresource = true;
  // The top-level spec fields its structural schema declares. Like the API server, the fake
  // prunes (drops) spec fields the schema does not know on every write. Empty: keeps them all.
  std::set<std::string> spec_fields;
};

struct FakeApiServerOptions {
  std::string tls_cert_pem;    // non-empty (with the key): serve HTTPS
  std::string tls_key_pem;
  std::string client_ca_pem;   // non-empty: require a client certificate signed by it
  std::string bearer_token;    // non-empty: 401 unless "Authorization: Bearer <token>"
  size_t history_limit = 10000;
  std::chrono::milliseconds pod_grace{0};             // see FakeStore::Options
  std::chrono::milliseconds bookmark_interval{1000};  // for watches that allow bookmarks
  // Resources whose status is a subresource (plural names).
  std::set<std::string> status_subresources = {"pods", "ddpjobs"};
  // Resources with a scale subresource over spec.replicas / status.replicas / status.selector.
  std::set<std::string> scale_subresources = {"ddpjobs"};
  // API groups served without registering a CRD: the built-in groups and ddp.dev (every test
  // installs the DDPJob CRD). Any other group answers 404 NotFound, as the API server does for
  // a resource it does not serve, until RegisterCrd.
  std::set<std::string> builtin_groups = {"",     "coordination.k8s.io", "ddp.dev",
                                          "apps", "batch",               "scheduling.k8s.io",
                                          "networking.k8s.io"};
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();  // Stop()s

  // Listens on 127.0.0.1:port (0: a free port). Errors: a message naming the failing step.
  bool Start(int port, std::string* error);
  void Stop();
  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT" or "https://..."

  // Installs a CRD: its resource is served from now on (kind and status subresource as given).
  void RegisterCrd(const CrdInfo& crd);

  // --- Fault injection. verb: get list watch create update patch delete ("" any); plural: ""
  // any. Faults apply to matching requests after authentication.
  // The next `count` matching requests fail with `code` and a Kubernetes Status (403 names the
  // verb and resource like RBAC does; 429 and 503 carry Retry-After when retry_after_s > 0).
  void FailNext(const std::string& verb, const std::string& plural, int code, int count = 1,
                int retry_after_s = 0);
  // Each request fails with 500 with this probability (deterministic pseudo-random sequence).
  void SetErrorRate(double fraction);
  // Every request fails with 500 (or `code`) until `duration` from now.
  void FailFor(std::chrono::milliseconds duration, int code = 500);
  void SetLatency(std::chrono::milliseconds latency);
  // Ends every watch stream now: cleanly (terminating chunk) or by cutting the connection.
  void DropWatches(bool cut = false);
  // Simulates a restart: all connections cut, the watch cache lost (old RVs get 410).
  void Restart();
  void SetBearerToken(const std::string& token);  // token rotation
  void ClearFaults();

  // --- Counters (for benchmarks and tests).
  int64_t RequestCount(const std::string& verb) const;  // "" = all verbs
  std::string LastAuthorization() const;                 // the last request's header
  void ResetCounters();
  // Called for every request after routing (verb, path), before faults and latency, on the
  // connection's thread (it may block to hold the request in flight). May be set at any time.
  void SetRequestHook(std::function<void(const std::string& verb, const std::string& path)> hook);

  // --- Direct store access, bypassing HTTP, faults and auth. `path` is an object path like
  // "/api/v1/namespaces/ml/pods/x" or a collection path for Objects.
  std::optional<nlohmann::json> GetObject(const std::string& path);
  std::vector<nlohmann::json> Objects(const std::string& collection_path);
  // Creates (POST semantics). Returns the stored object, or nullopt with *error.
  std::optional<nlohmann::json> CreateObject(const std::string& collection_path,
                                             const nlohmann::json& obj, std::string* error);
  // Edits in place; RV bumps; watchers see MODIFIED. False when absent.
  bool Mutate(const std::string& path, const std::function<void(nlohmann::json&)>& fn);
  bool RemoveObject(const std::string& path);  // gone now, with cascade
  int64_t resource_version() { return store_.resource_version(); }
  size_t watch_count() { return store_.watch_count(); }  // open watch streams

  // --- The test's kubelet (pods; false when the pod does not exist).
  bool SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase);
  // Every container terminates with exit_code; phase Succeeded (0) or Failed. `message`: the
  // containers' termination message (what a process wrote to terminationMessagePath).
  bool TerminatePod(const std::string& ns, const std::string& name, int exit_code,
                    const std::string& reason = "", const std::string& message = "");
  // Node-pressure eviction: phase Failed, reason Evicted, no container exit code.
  bool EvictPod(const std::string& ns, const std::string& name);
  bool SetPodUnschedulable(const std::string& ns, const std::string& name);
  // A pod with a deletionTimestamp is removed now (the kubelet confirmed termination). With a
  // `uid`, only that incarnation: a kubelet never touches a successor under the same name.
  bool FinalizePod(const std::string& ns, const std::string& name, const std::string& uid = "");
  // Binds a pod to a node (spec.nodeName), as the scheduler's binding does.
  bool BindPod(const std::string& ns, const std::string& name, const std::string& node);

  // --- The test's nodes (cluster-scoped Node objects) and node lifecycle controller.
  // Creates node `name`, Ready. False when it exists.
  bool AddNode(const std::string& name);
  // Sets the Ready condition and the taints the node lifecycle controller sets with it:
  // "True" (the kubelet posts status: no such taints), "Unknown" (it stopped posting: reason
  // NodeStatusUnknown, node.kubernetes.io/unreachable NoSchedule + NoExecute), "False"
  // (KubeletNotReady, node.kubernetes.io/not-ready NoSchedule + NoExecute). Pods bound to a node
  // that is not Ready stay Terminating once deleted (FakeStore::Options::pod_grace).
  bool SetNodeReady(const std::string& name, const std::string& status);

  // Parses a request path. False for paths that are not resource paths.
  struct Target {
    TypeInfo type;
    std::string ns, name, sub;  // sub: "status", "scale", ...
  };
  bool ParsePath(const std::string& path, Target* target) const;

 private:
  struct Fault {
    std::string verb, plural;
    int code, count, retry_after_s;
  };
  void AcceptLoop();
  void Ticker();
  void Serve(int id, std::shared_ptr<HttpConn> conn);
  // Returns false when the connection must close.
  bool Handle(HttpConn& conn, const HttpRequest& req);
  bool ServeWatch(HttpConn& conn, const HttpRequest& req, const Target& t);
  bool ServeScale(HttpConn& conn, const HttpRequest& req, const std::string& verb, const Target& t);
  std::optional<Fault> TakeFault(const std::string& verb, const std::string& plural);
  std::string ForbiddenMessage(const std::string& verb, const Target& t) const;
  // Whether `t` is a served resource; *crd: its registered CRD (nullopt for built-in groups).
  bool Serves(const Target& t, std::optional<CrdInfo>* crd) const;

  const FakeApiServerOptions options_;
  FakeStore store_;
  mutable std::mutex crd_mu_;  // guards crds_
  std::map<std::string, CrdInfo> crds_;  // by "group/version/plural"
  SSL_CTX* ssl_ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_, ticker_thread_;

  mutable std::mutex mu_;  // guards everything below
  std::vector<Fault> faults_;
  double error_rate_ = 0;
  uint64_t rng_state_ = 88172645463325252ull;
  std::chrono::steady_clock::time_point fail_until_;
  int fail_until_code_ = 500;
  std::chrono::milliseconds latency_{0};
  std::string token_;
  std::map<std::string, int64_t> counts_;
  std::string last_authorization_;
  std::function<void(const std::string&, const std::string&)> hook_;
  std::map<int, std::shared_ptr<HttpConn>> conns_;  // live connections by id
  std::map<int, std::thread> threads_;
  std::vector<int> finished_;  // connection ids whose thread has returned
  int next_conn_id_ = 0;
  std::condition_variable ticker_cv_;
};

}  // namespace ddp::fake

#endif  // DDP_TESTS_KUBE_FAKE_APISERVER_H_
