// What a local "pod" runs: the worker container's command, args and env, read from the Pod object
// the planner built (the same code path as in a cluster), with the few values that must differ on
// one host replaced. Pure; thread-compatible.
#ifndef DDP_OPERATOR_LOCAL_POD_PROCESS_H_
#define DDP_OPERATOR_LOCAL_POD_PROCESS_H_

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ddp::controller::local {

// Host-specific values. Several ranks share one host, so each job round gets its own free
// rendezvous port and each pod its own metrics port (the cluster's 9400 would collide).
struct HostOverrides {
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR, PET_MASTER_ADDR and DDP_STORE_ADDR
  int master_port = 0;                    // MASTER_PORT and PET_MASTER_PORT; 0 = keep
  int metrics_port = 0;                   // DDP_METRICS_PORT; 0 = keep
};

inline constexpr int kDefaultGraceSeconds = 30;  // Kubernetes' terminationGracePeriodSeconds

struct ProcessSpec {
  std::vector<std::string> argv;  // container command + args, $(VAR) references expanded
  std::vector<std::pair<std::string, std::string>> env;  // the container's env, in order
  int grace_seconds = kDefaultGraceSeconds;  // spec.terminationGracePeriodSeconds
  std::vector<std::string> warnings;  // env entries local mode cannot resolve (skipped)
};

// Reads the worker container (named "worker", else the first) of `pod`. `env[].value` is used
// as is; `valueFrom.fieldRef` resolves metadata.name/namespace/uid/labels/annotations, status.podIP
// and status.hostIP (127.0.0.1) and spec.nodeName ("localhost"); other sources (secrets, config
// maps, resources) are skipped with a warning. Returns InvalidArgument when the pod has no
// containers or the container has no `command` (local mode cannot read an image's entrypoint).
StatusOr<ProcessSpec> ProcessSpecFromPod(const nlohmann::json& pod, const HostOverrides& host);

// Kubernetes' $(VAR) expansion: a reference to a name in `env` is replaced by its value, $$ is a
// literal $, and an unknown reference is left as written.
std::string ExpandVars(const std::string& text,
                       const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_POD_PROCESS_H_
