// The environment of an InPlace job's pods, as the group protocol reads it: the rendezvous pod
// (launch/rendezvous_pod.h) and every pod's supervisor (launch/supervisor.h). One parser, so both read
// the same variables the same way (names: common/group_contract.h and comm/rendezvous.h).
#ifndef DDP_WORKER_GROUP_SETTINGS_H_
#define DDP_WORKER_GROUP_SETTINGS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/failure_policy.h"
#include "common/status.h"
#include "worker/comm/rendezvous.h"

namespace ddp::worker::group {

struct GroupSettings {
  RendezvousConfig rendezvous;  // MASTER_PORT, DDP_ROUND, WORLD_SIZE, DDP_RENDEZVOUS_TIMEOUT
  std::string store_addr;       // DDP_STORE_ADDR, else MASTER_ADDR
  int nodes = 1;                // NNODES
  int max_nodes = 1;            // DDP_MAX_NODES (>= NNODES), else NNODES
  int min_nodes = 0;            // DDP_MIN_NODES (<= max_nodes); 0: never shrinks on a loss
  // Not from the environment: the supervisor sets it when its trainers wait as warm standbys and
  // so may prepare outside the group (prepare/<identity> "?" in a formed group until it says:
  // keys.h).
  bool decides_prepare = false;
  std::string group_size_file;  // DDP_GROUP_SIZE_FILE; "" when unset
  int nproc_per_node = 1;       // NPROC_PER_NODE
  std::chrono::milliseconds liveness{10000};  // DDP_LIVENESS_TIMEOUT (seconds)
  std::chrono::milliseconds tick{250};        // the authority's period: liveness / 20, 50-250 ms
  std::chrono::milliseconds beat{1000};       // presence bytes: liveness / 10, 100-1000 ms
  int64_t max_recoveries = 3;   // DDP_MAX_RECOVERIES
  int metrics_port = -1;        // DDP_METRICS_PORT; -1 when unset
  std::string job;              // DDP_JOB_NAME
  std::string pod_name;         // DDP_POD_NAME, else the host name
  std::string pod_uid;          // DDP_POD_UID, else a random id
  std::string pod_ip;           // DDP_POD_IP, else the host name
  std::string role;             // DDP_POD_ROLE: worker (default), spare or rendezvous
  int home_node = -1;           // NODE_RANK for a worker; -1 for a spare
  failure::Rules rules;         // DDP_RESTART_POLICY, DDP_RETRYABLE_EXIT_CODES
  std::string termination_log;  // DDP_TERMINATION_LOG, default /dev/termination-log
};

// InvalidArgument naming the variable for a malformed value.
StatusOr<GroupSettings> ReadGroupSettings(const std::function<const char*(const char*)>& getenv);

// How often a trainer's watcher beats: a tenth of DDP_LIVENESS_TIMEOUT (as a supervisor's
// presence does), 100 ms to 1 s; 100 ms when unset or malformed.
std::chrono::milliseconds TrainerHeartbeat(const std::function<const char*(const char*)>& getenv);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_SETTINGS_H_
