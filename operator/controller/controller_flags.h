// Flags of `ddp-operator run`, parsed into a struct (pure: no I/O), so the command's wiring stays
// short and the parsing is unit-tested. Accepts `--flag value` and `--flag=value`.
#ifndef DDP_OPERATOR_CONTROLLER_CONTROLLER_FLAGS_H_
#define DDP_OPERATOR_CONTROLLER_CONTROLLER_FLAGS_H_

#include <chrono>
#include <string>

#include "common/logging.h"
#include "common/status.h"
#include "operator/plan/gang.h"

namespace ddp::controller {

struct RunFlags {
  std::string kubeconfig;                 // --kubeconfig ("" = KUBECONFIG / in-cluster)
  std::string ns;                         // --namespace ("" = all namespaces)
  int workers = 4;                        // --workers
  bool leader_elect = false;              // --leader-elect[=true|false]
  std::string leader_election_namespace;  // "" = --namespace, else the config's namespace
  std::string leader_election_id = "ddp-operator";  // the Lease name
  std::string identity;                   // --identity ("" = hostname_pid)
  std::chrono::milliseconds lease_duration{15000};  // --leader-election-lease-duration
  std::chrono::milliseconds renew_deadline{10000};  // --leader-election-renew-deadline
  std::chrono::milliseconds retry_period{2000};     // --leader-election-retry-period
  std::string metrics_addr = ":8080";     // --metrics-bind-address ("0" disables)
  std::string health_addr = ":8081";      // --health-probe-bind-address ("0" disables)
  double qps = 500;                       // --qps, per bucket (<= 0: unlimited)
  int burst = 500;                        // --burst
  LogLevel log_level = LogLevel::kInfo;   // --log-level
  std::chrono::milliseconds resync_period{std::chrono::minutes(10)};  // --resync-period
  std::chrono::milliseconds sync_timeout{std::chrono::minutes(2)};    // --cache-sync-timeout
  // --progress-interval: how often rank 0's /metrics of a running job is read ("0" disables).
  std::chrono::milliseconds progress_interval{std::chrono::seconds(10)};
  int progress_scrapers = 8;  // --progress-scrapers: fetches in flight at most
  // A page larger (--scrape-max-bytes) or with more series (--scrape-max-series) is refused.
  size_t scrape_max_bytes = 4 << 20;
  size_t scrape_max_series = 50000;
  // A rank whose busy time per step is --straggler-factor (> 1) times the other ranks' median
  // in --straggler-reads (>= 1) consecutive progress reads gets a Straggler Event.
  double straggler_factor = 1.5;
  int straggler_reads = 3;
  // A pod Terminating on a NotReady/unreachable node is force-deleted this long after its grace
  // period ends (--lost-pod-margin), or --unfenced-lost-pod-margin when it could still rejoin its
  // group (recovery InPlace, current round, not fenced). Whole seconds (rounded up); see
  // operator/plan/lost_nodes.h.
  std::chrono::milliseconds lost_pod_margin{std::chrono::seconds(30)};
  std::chrono::milliseconds unfenced_lost_pod_margin{std::chrono::minutes(5)};
  // --gang-scheduler-name: "" none, "volcano", or the scheduler profile running the
  // coscheduling plugin (Kubeflow's convention).
  plan::GangConfig gang;
  // --network-policy[=true|false]: a NetworkPolicy per job unless its
  // spec.runPolicy.networkPolicy says otherwise (operator/plan/network_policy.h).
  bool network_policy = true;
  // --operator-namespace: whose pods may read jobs' metrics ports ("" = the namespace of the
  // in-cluster config or the kubeconfig's context). --metrics-namespace: Prometheus' ("" none).
  std::string operator_namespace;
  std::string metrics_namespace;
  bool help = false;
};

// argv[0] is "run". Errors: InvalidArgument naming the flag and the bad value.
Status ParseRunFlags(int argc, char** argv, RunFlags* flags);
// "15s", "500ms", "2m", "1h", or a bare number of seconds. False on anything else or < 0.
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out);
// "4194304", "4MiB", "512KiB", "1Gi": a positive size up to 1 TiB. False on anything else.
bool ParseByteSize(const std::string& text, size_t* out);
const char* RunUsage();

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_CONTROLLER_CONTROLLER_FLAGS_H_
