// The rendezvous environment of a worker (DESIGN.md's table). Rank arithmetic has one home: here.
// Written by BuildWorkerPod (cluster) and the local executor; read by ddp-worker and torchrun.
#ifndef DDP_OPERATOR_PLAN_ENV_H_
#define DDP_OPERATOR_PLAN_ENV_H_

#include <string>
#include <utility>
#include <vector>

#include "operator/api/env_names.h"
#include "operator/api/types.h"

namespace ddp::plan {

// Where the rendezvous pod of an elastic InPlace job finds its ddp.dev/group-size annotation
// (a downwardAPI volume, builders.cc).
inline constexpr char kGroupSizeDir[] = "/etc/ddp-group";
inline constexpr char kGroupSizeFile[] = "/etc/ddp-group/size";

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The operator's env for pod `index` of a round with `replicas` pods, in the table's order.
// master_addr_override: "" in a cluster (MasterAddr(job)); local mode passes "127.0.0.1".
// master_port_override: 0 = spec.rendezvous.port.
// DDP_MAX_RECOVERIES reads job.status.restarts and job.status.recoveries, so pass the status
// the pod is created under. With recovery InPlace the group's variables follow
// (common/group_contract.h): DDP_STORE_ADDR (the rendezvous pod; master_addr_override in local
// mode), DDP_POD_NAME, DDP_POD_ROLE `role`, DDP_LIVENESS_TIMEOUT, DDP_RESTART_POLICY and
// DDP_RETRYABLE_EXIT_CODES (DDP_POD_UID and DDP_POD_IP come from the downward API: builders.cc).
// A spare or the rendezvous pod (index -1) has no NODE_RANK, RANK, LOCAL_RANK or
// LOCAL_WORLD_SIZE: its rank comes from the group. REQUIRES: -1 <= index < replicas; job
// defaulted.
EnvList RendezvousEnv(const api::DDPJob& job, int index, int round, int replicas,
                      const std::string& master_addr_override = "", int master_port_override = 0,
                      const std::string& pod_name = "", const std::string& role = "worker");

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_ENV_H_
