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

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The operator's env for pod `index` of a round with `replicas` pods, in the table's order.
// master_addr_override: "" in a cluster (MasterAddr(job)); local mode passes "127.0.0.1".
// master_port_override: 0 = spec.rendezvous.port.
// DDP_MAX_RECOVERIES reads job.status.restarts and job.status.recoveries, so pass the status
// the pod is created under. REQUIRES: 0 <= index < replicas; job defaulted.
EnvList RendezvousEnv(const api::DDPJob& job, int index, int round, int replicas,
                      const std::string& master_addr_override = "", int master_port_override = 0);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_ENV_H_
