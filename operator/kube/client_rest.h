// RestClient: the KubeClient over HTTP(S) with cpprestsdk, shared by client_rest.cc (requests and
// batches) and client_rest_watch.cc (watch streams). Internal to operator/kube: use NewRestClient.
// cpprest exceptions stop in these files and become Statuses.
#ifndef DDP_OPERATOR_KUBE_CLIENT_REST_H_
#define DDP_OPERATOR_KUBE_CLIENT_REST_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cpprest/http_client.h>

#include "operator/kube/client.h"
#include "operator/kube/client_tls.h"
#include "operator/kube/rate_limiter.h"

namespace ddp::controller::internal {

// "get pods ml/p-0": the prefix of every message about one request.
std::string Context(const std::string& verb, const Resource& r, const std::string& ns,
                    const std::string& name);

// The whole file; *ok false when it cannot be opened.
std::string ReadFile(const std::string& path, bool* ok);

// One request, prepared: sent once or again on retry, alone or in a batch.
struct Call {
  std::string verb;  // the Kubernetes verb, for retries and metrics: get list create ...
  web::http::method method;
  std::string path_query;
  std::string body;  // empty: no body
  std::string content_type;
  std::string context;
  // A create or delete of a Pod or Service: the writes a round is made of. They have their own
  // token bucket, so a restart's pods never wait behind other jobs' status writes and events.
  bool workload = false;
};

// A reply from one HTTP exchange; code 0 when none arrived.
struct Reply {
  int code = 0;
  std::string body;
  int retry_after_s = -1;
  std::string transport_error;
};

class RestClient : public KubeClient {
 public:
  // ca_store: the only CAs trusted (null: the system's).
  RestClient(ClientConfig cfg, std::shared_ptr<X509_STORE> ca_store, std::string cert_pem,
             std::string key_pem);

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns,
                               const std::string& name) override;
  StatusOr<nlohmann::json> List(const Resource& r, const std::string& ns,
                                const ListOptions& o) override;
  Status Watch(const Resource& r, const std::string& ns, const WatchOptions& o,
               const std::function<bool(const WatchEvent&)>& on_event) override;
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& obj) override;
  Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& o) override;
  std::vector<Status> CreateAll(const std::vector<CreateCall>& calls) override;
  std::vector<Status> DeleteAll(const std::vector<DeleteCall>& calls) override;
  StatusOr<nlohmann::json> MergePatch(const Resource& r, const std::string& ns,
                                      const std::string& name,
                                      const nlohmann::json& patch) override;
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const std::string& name, const nlohmann::json& obj) override;
  StatusOr<nlohmann::json> UpdateStatus(const Resource& r, const std::string& ns,
                                        const std::string& name,
                                        const nlohmann::json& obj) override;
  StatusOr<nlohmann::json> MergePatchStatus(const Resource& r, const std::string& ns,
                                            const std::string& name,
                                            const nlohmann::json& patch) override;
  void SetRequestObserver(RequestObserver observer) override;
  void Stop() override;

 private:
  web::http::client::http_client_config MakeConfig(std::chrono::milliseconds timeout) const;
  web::http::http_request NewRequest(const web::http::method& method,
                                     const std::string& path_query);
  std::string Token();
  void Observe(const std::string& verb, int code, std::chrono::steady_clock::time_point start);
  // Starts one attempt after the rate limiter admits it. The task never throws: a failure is a
  // Reply with code 0.
  pplx::task<Reply> SendAsync(const Call& call);
  // One attempt, waited for and observed.
  Reply Exchange(const Call& call);
  // Maps `first` (attempt 0) and retries it as the client's rules allow. The body of a success
  // is parsed when `parse` is set; else the result holds null.
  StatusOr<nlohmann::json> Complete(const Call& call, Reply first, bool parse);
  StatusOr<nlohmann::json> Json(const Call& call);
  // Sends every call with at most kMaxInFlight outstanding; results in call order, bodies not
  // parsed.
  std::vector<Status> SendAll(const std::vector<Call>& calls);

  const ClientConfig cfg_;
  const std::shared_ptr<X509_STORE> ca_store_;  // declared before client_, which uses it
  const std::string cert_pem_, key_pem_;
  TokenBucket limiter_;           // every request except workload writes
  TokenBucket workload_limiter_;  // Call::workload: pod and Service creates and deletes
  web::http::client::http_client client_;
  pplx::cancellation_token_source stop_source_;
  std::atomic<bool> stopped_{false};
  std::mutex mu_;  // guards observer_ and the token cache
  RequestObserver observer_;
  std::string token_;
  struct timespec token_mtime_ {};
  off_t token_size_ = -1;
};

}  // namespace ddp::controller::internal

#endif  // DDP_OPERATOR_KUBE_CLIENT_REST_H_
