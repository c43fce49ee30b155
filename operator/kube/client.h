// The Kubernetes API as seen by the controller: typed verbs over JSON objects, errors as Status.
// This header is the interface; client_rest.cc implements it over HTTP (cpprestsdk). Informers,
// queues and leases are built on top of it elsewhere.
#ifndef DDP_OPERATOR_KUBE_CLIENT_H_
#define DDP_OPERATOR_KUBE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/client_cancel.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"

namespace ddp::controller {

struct ListOptions {
  std::string label_selector;    // "a=b,c in (x,y)"; empty: everything
  std::string field_selector;    // passed through; empty: none
  int64_t limit = 0;             // page size; 0: no limit (one page)
  std::string continue_token;    // from a previous page's metadata.continue
  std::string resource_version;  // "" = most recent (quorum read)
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // watch changes after this RV; "" = from now (no replay)
  bool allow_bookmarks = true;
  int timeout_seconds = 300;     // server-side stream duration; the stream then ends cleanly
  // Optional. Cancel() makes the blocked Watch return OK promptly (the stream is closed).
  std::shared_ptr<Cancellation> cancel;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* WatchEventTypeName(WatchEventType type);  // "ADDED", ...

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for BOOKMARK only metadata.resourceVersion matters
};

struct DeleteOptions {
  std::string propagation_policy = "Background";  // Background | Foreground | Orphan | "" (server default)
  std::optional<int64_t> grace_period_seconds;    // unset: the resource's default
  std::string precondition_uid;                   // non-empty: delete only this incarnation
  std::string precondition_resource_version;      // non-empty: delete only this version
};

// One write of a batch (KubeClient::CreateAll, DeleteAll).
struct CreateCall {
  const Resource* resource = nullptr;
  std::string ns;
  nlohmann::json object;
};
struct DeleteCall {
  const Resource* resource = nullptr;
  std::string ns;
  std::string name;
  DeleteOptions options;
};

// Called after every HTTP request completes. verb is the Kubernetes verb: get list watch create
// update patch delete. code is the HTTP status, or 0 when no response arrived (connect failure,
// timeout). seconds is the wall time of the request (for watch: until the stream ended).
using RequestObserver = std::function<void(const std::string& verb, int code, double seconds)>;

// Thread-safe: every method may be called from any thread concurrently.
// Errors (all verbs):
//   NotFound (404), AlreadyExists (409 reason AlreadyExists), Conflict (409 otherwise: stale
//   resourceVersion or failed precondition), Gone (410), InvalidArgument (422 Invalid / 400),
//   Unauthenticated (401), Forbidden (403; message names verb, resource and the server's reason),
//   Unavailable (429, 5xx, connection failure), DeadlineExceeded (the request timeout elapsed).
// Retries inside the client (up to ClientConfig::max_retries, honouring Retry-After, else
// exponential from 100 ms): 429 for every verb (the server did not act on it); 5xx, timeouts and
// connection failures only for get and list. When retries run out and the server sent
// Retry-After, the message ends with "(retry after Ns)".
// Messages carry context: "list pods ml: <server message>".
class KubeClient {
 public:
  virtual ~KubeClient() = default;

  virtual StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns,
                                       const std::string& name) = 0;
  // One page: the List object (items, metadata.resourceVersion, metadata.continue). ns "" = all.
  virtual StatusOr<nlohmann::json> List(const Resource& r, const std::string& ns,
                                        const ListOptions& opts) = 0;
  // Streams events to on_event until the server ends the stream (returns OK), on_event returns
  // false (OK), opts.cancel or Stop() fires (OK), or an error. An ERROR event with code 410, or a
  // 410 response, returns Gone: re-list. Other ERROR events return their mapped Status.
  // on_event runs on the calling thread.
  virtual Status Watch(const Resource& r, const std::string& ns, const WatchOptions& opts,
                       const std::function<bool(const WatchEvent&)>& on_event) = 0;
  // POST. Returns the created object (with uid, resourceVersion, ...).
  virtual StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                          const nlohmann::json& obj) = 0;
  virtual Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& opts) = 0;
  // Many creates or deletes at once: the requests are in flight together (at most 16 at a time)
  // and the caller waits once, for all of them. Results are in call order and mean what
  // Create's and Delete's do (CreateAll does not return the created objects); retries follow
  // the same rules, one call at a time.
  virtual std::vector<Status> CreateAll(const std::vector<CreateCall>& calls) = 0;
  virtual std::vector<Status> DeleteAll(const std::vector<DeleteCall>& calls) = 0;
  // PATCH application/merge-patch+json (RFC 7386). Returns the patched object.
  virtual StatusOr<nlohmann::json> MergePatch(const Resource& r, const std::string& ns,
                                              const std::string& name,
                                              const nlohmann::json& patch) = 0;
  // PUT of the whole object; obj.metadata.resourceVersion set -> Conflict when stale.
  virtual StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                          const std::string& name, const nlohmann::json& obj) = 0;
  // PUT .../status: only the status of obj is applied. Conflict when obj's RV is stale.
  virtual StatusOr<nlohmann::json> UpdateStatus(const Resource& r, const std::string& ns,
                                                const std::string& name,
                                                const nlohmann::json& obj) = 0;
  // PATCH .../status with a merge patch.
  virtual StatusOr<nlohmann::json> MergePatchStatus(const Resource& r, const std::string& ns,
                                                    const std::string& name,
                                                    const nlohmann::json& patch) = 0;

  // Replaces the observer. Set it before issuing requests; calls after that race with requests
  // in flight (which may still report to the old observer).
  virtual void SetRequestObserver(RequestObserver observer) = 0;
  // Ends every blocked Watch and in-flight request promptly; later calls fail Unavailable.
  virtual void Stop() = 0;
};

// List following metadata.continue until the last page. Returns one List object whose items are
// all pages' items and whose metadata.resourceVersion is the first page's (the snapshot RV).
// opts.limit is the page size (0: the server decides). Errors: the failing page's Status; Gone
// when the continue token expired (the caller re-lists from scratch).
StatusOr<nlohmann::json> ListAll(KubeClient& client, const Resource& r, const std::string& ns,
                                 ListOptions opts);

// A client over HTTP(S) to config.server. Errors: InvalidArgument for a bad server URL or
// unreadable certificate/key/CA data (the message names which).
StatusOr<std::unique_ptr<KubeClient>> NewRestClient(const ClientConfig& config);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_H_
