// Where the operator finds its API server and credentials: a kubeconfig file or the in-cluster
// service account. Pure parsing plus file reads; no network.
#ifndef DDP_OPERATOR_KUBE_CONFIG_H_
#define DDP_OPERATOR_KUBE_CONFIG_H_

#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"

namespace ddp::controller {

// Everything needed to talk to one API server. Data fields win over the matching file fields.
struct ClientConfig {
  std::string server;            // "https://10.0.0.1:443" or "http://127.0.0.1:8001"
  std::string ca_data;           // PEM bundle
  std::string ca_file;           // path to a PEM bundle
  std::string bearer_token;      // static token
  std::string token_file;        // re-read when it changes (projected tokens rotate); wins over bearer_token
  std::string client_cert_data;  // PEM
  std::string client_cert_file;
  std::string client_key_data;   // PEM
  std::string client_key_file;
  bool insecure_skip_tls_verify = false;
  // Client-side rate limit, per token bucket: pod and Service creates and deletes have one,
  // every other request the other (see RestClient). <= 0 disables it.
  double qps = 500;
  int burst = 500;
  std::chrono::milliseconds request_timeout{30000};  // every request except watch streams
  int max_retries = 3;           // extra attempts: 429 any verb; 5xx/transport errors get/list only
  std::string default_namespace; // from the context or the service account; "default" if unset
  std::string user_agent = "ddp-operator";
  // Threads of cpprestsdk's process-wide I/O pool, fixed by the first client of the process.
  // cpprestsdk's default is 40: every completion then wakes another thread, which cost the
  // operator about twice the CPU per request (bench/RESULTS.md). Callers block in their own
  // threads, so two threads keep the socket work off the workers without extra hand-offs.
  int io_threads = 2;
};

// The in-cluster service account directory (token, ca.crt, namespace).
inline constexpr const char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// Inputs of the config search, injectable for tests.
struct ConfigSources {
  std::string kubeconfig_flag;                            // --kubeconfig
  std::function<std::string(const std::string&)> getenv;  // unset: ::getenv
  std::string service_account_dir = kServiceAccountDir;
};

// Search order: --kubeconfig; else $KUBECONFIG (first entry of the ':' list that exists); else
// in-cluster (KUBERNETES_SERVICE_HOST and _PORT set); else $HOME/.kube/config.
// Errors: InvalidArgument naming the file and field; NotFound when nothing applies.
StatusOr<ClientConfig> LoadClientConfig(const std::string& kubeconfig_flag);
StatusOr<ClientConfig> LoadClientConfig(const ConfigSources& sources);

// In-cluster config from KUBERNETES_SERVICE_HOST/PORT and <sa_dir>/{token,ca.crt,namespace}.
// token_file is set (not the token) so rotation is picked up. IPv6 hosts are bracketed.
StatusOr<ClientConfig> InClusterConfig(const std::function<std::string(const std::string&)>& getenv,
                                       const std::string& sa_dir);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CONFIG_H_
