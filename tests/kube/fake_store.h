// The storage of the test API server: objects of any resource type, a global resourceVersion,
// optimistic concurrency, the status subresource, generation, cascade deletion, pod grace
// periods, and watch streams with a bounded event history. Knows nothing about HTTP: every call
// returns a code and a body (the object, a List, or a Kubernetes Status).
#ifndef DDP_TESTS_KUBE_FAKE_STORE_H_
#define DDP_TESTS_KUBE_FAKE_STORE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/kube/fake_objects.h"

namespace ddp::fake {

// A resource type, derived from a request path.
struct TypeInfo {
  std::string collection;  // "/api/v1/pods", "/apis/ddp.dev/v1alpha1/ddpjobs" (no namespace)
  std::string api_version; // "v1", "ddp.dev/v1alpha1"
  std::string plural;
  std::string kind;        // "Pod"
  bool namespaced = true;
  bool status_subresource = false;  // main-resource writes ignore status; /status writes only it
};

struct StoreResult {
  int code = 200;
  nlohmann::json body;  // the object / List / Status
  int retry_after_seconds = 0;
};

// A Kubernetes Status object for an error response.
nlohmann::json StatusBody(int code, const std::string& reason, const std::string& message);

// One watch stream's queue of serialized events ("{...}\n" lines). Thread-safe.
struct Watcher {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> lines;
  bool closed = false;   // the stream ends after the queued lines are written
  bool abrupt = false;   // the connection is cut without ending the stream
  // Filter; fixed at creation.
  std::string collection, ns;
  std::vector<LabelRequirement> selector;
  bool bookmarks = false;
  void Push(std::string line);
  void Close(bool cut);
};

// Thread-safe; one lock guards everything (a fake needs correctness, not throughput).
class FakeStore {
 public:
  struct Options {
    size_t history_limit = 10000;  // watch events kept for watches from an old RV
    // Pods deleted without an explicit gracePeriodSeconds keep a deletionTimestamp this long
    // (until the grace elapses or FinalizePod). 0: deleted at once. A pod bound to a node
    // (spec.nodeName) goes only while that Node exists and is Ready: its kubelet confirms the
    // termination; on a NotReady/Unknown or missing node nobody does, and the pod stays
    // Terminating until a force delete (gracePeriodSeconds 0), as in Kubernetes. An unbound
    // pod's grace simply elapses (Kubernetes would delete it at once).
    std::chrono::milliseconds pod_grace{0};
  };
  explicit FakeStore(Options options);

  StoreResult Create(const TypeInfo& t, const std::string& ns, nlohmann::json obj);
  StoreResult Get(const TypeInfo& t, const std::string& ns, const std::string& name);
  StoreResult List(const TypeInfo& t, const std::string& ns, const std::string& label_selector,
                   int64_t limit, const std::string& continue_token);
  // status_only: the /status subresource.
  StoreResult Update(const TypeInfo& t, const std::string& ns, const std::string& name,
                     nlohmann::json obj, bool status_only);
  StoreResult Patch(const TypeInfo& t, const std::string& ns, const std::string& name,
                    const nlohmann::json& patch, bool status_only);
  // delete_options: a DeleteOptions body (may be null).
  StoreResult Delete(const TypeInfo& t, const std::string& ns, const std::string& name,
                     const nlohmann::json& delete_options);

  // Registers a watcher. resource_version "" or "0": synthetic ADDED for existing objects first.
  // Too old: the watcher gets one ERROR event (410 Expired) and is closed.
  // Errors (code != 200 in *err): a bad selector (400).
  std::shared_ptr<Watcher> Watch(const TypeInfo& t, const std::string& ns,
                                 const std::string& label_selector,
                                 const std::string& resource_version, bool bookmarks,
                                 StoreResult* err);
  void Unwatch(const std::shared_ptr<Watcher>& w);
  // Queues a BOOKMARK at the current RV on every watcher that asked for bookmarks.
  void SendBookmarks();
  // Closes every watch stream (cut: the connections are dropped mid-stream).
  void DropWatches(bool cut);
  // Forgets the event history: watches and continue tokens from older RVs get 410.
  void ForgetHistory();

  // Direct edit, as a kubelet or a test would: fn edits the object in place; RV bumps and
  // watchers see MODIFIED. Returns 404 when absent. generation follows the spec rule.
  StoreResult Mutate(const std::string& collection, const std::string& ns, const std::string& name,
                     const std::function<void(nlohmann::json&)>& fn);
  // Removes an object now (a pod's grace ended, or a kubelet confirmed termination). A non-empty
  // `uid` removes only that incarnation (409 when the name holds another), as a kubelet deletes
  // its pod by UID and never a successor created under the same name.
  StoreResult Remove(const std::string& collection, const std::string& ns, const std::string& name,
                     const std::string& uid = "");
  // Deletes pods whose grace period has elapsed and whose kubelet confirms (see pod_grace).
  // Returns how many.
  int ReapExpired();

  // Copies of stored objects of one collection ("" ns: all namespaces), sorted by ns/name.
  std::vector<nlohmann::json> Objects(const std::string& collection, const std::string& ns);
  int64_t resource_version();
  size_t watch_count();  // registered watch streams

 private:
  struct Event {
    int64_t rv;
    std::string collection, ns, type;
    nlohmann::json object, old_object;  // old_object: for selector transitions on MODIFIED
  };
  void EmitLocked(const std::string& type, const std::string& collection, const std::string& ns,
                  const nlohmann::json& obj, const nlohmann::json& old_obj);
  void DeliverLocked(const Event& e, Watcher& w);
  StoreResult RemoveLocked(const std::string& collection, const std::string& ns,
                           const std::string& name, const std::string& propagation);
  StoreResult StoreWriteLocked(const TypeInfo& t, const std::string& ns, const std::string& name,
                               nlohmann::json updated, const std::string& expected_rv,
                               bool status_only);
  int64_t NextRvLocked() { return ++rv_; }
  // Whether the kubelet of `pod`'s node would confirm its termination (see pod_grace).
  bool KubeletConfirmsLocked(const nlohmann::json& pod);

  const Options options_;
  std::mutex mu_;
  int64_t rv_ = 0;
  int64_t min_watch_rv_ = 0;  // watches/continues from RVs below this are 410
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;  // collection -> ns/name
  std::map<std::string, TypeInfo> types_;  // collections seen, for kind and status rules
  std::deque<Event> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  // Pods with a deletionTimestamp: (collection, ns/name) -> when the grace elapses.
  std::map<std::pair<std::string, std::string>, std::chrono::steady_clock::time_point> graces_;
  uint64_t uid_counter_ = 0;
};

}  // namespace ddp::fake

#endif  // DDP_TESTS_KUBE_FAKE_STORE_H_
