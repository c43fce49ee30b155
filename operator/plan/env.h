// The rendezvous environment of a worker (DESIGN.md's table). Rank arithmetic has one home: here.
// Written by BuildWorkerPod (cluster) and the local executor; read by ddp-worker and torchrun.
#ifndef DDP_OPERATOR_PLAN_ENV_H_
#define DDP_OPERATOR_PLAN_ENV_H_

#include <string>
#include <utility>
#include <vector>

#include "operator/api/types.h"

namespace ddp::plan {

// torch's names, read by ddp-worker's rendezvous and by torch.distributed scripts.
inline constexpr char kEnvMasterAddr[] = "MASTER_ADDR";  // rank 0's host
inline constexpr char kEnvMasterPort[] = "MASTER_PORT";  // rank 0's TCPStore port
inline constexpr char kEnvWorldSize[] = "WORLD_SIZE";    // replicas * nprocPerNode
inline constexpr char kEnvNnodes[] = "NNODES";           // replicas (pods)
inline constexpr char kEnvNodeRank[] = "NODE_RANK";      // the pod's index
inline constexpr char kEnvNprocPerNode[] = "NPROC_PER_NODE";
// Set by the operator only when nprocPerNode == 1; else `ddp-worker launch` sets them per process.
inline constexpr char kEnvRank[] = "RANK";
inline constexpr char kEnvLocalRank[] = "LOCAL_RANK";
inline constexpr char kEnvLocalWorldSize[] = "LOCAL_WORLD_SIZE";
// torchrun's copies of the above (read by torchrun inside user images).
inline constexpr char kEnvPetNnodes[] = "PET_NNODES";
inline constexpr char kEnvPetNodeRank[] = "PET_NODE_RANK";
inline constexpr char kEnvPetNprocPerNode[] = "PET_NPROC_PER_NODE";
inline constexpr char kEnvPetMasterAddr[] = "PET_MASTER_ADDR";
inline constexpr char kEnvPetMasterPort[] = "PET_MASTER_PORT";
// Ours, read by ddp-worker.
inline constexpr char kEnvJobName[] = "DDP_JOB_NAME";      // metrics label `job`
inline constexpr char kEnvRound[] = "DDP_ROUND";           // metrics label `round`, store prefix
inline constexpr char kEnvRendezvousTimeout[] = "DDP_RENDEZVOUS_TIMEOUT";  // seconds; then exit 75
inline constexpr char kEnvCheckpointDir[] = "DDP_CHECKPOINT_DIR";  // only when spec sets it
inline constexpr char kEnvMetricsPort[] = "DDP_METRICS_PORT";      // worker serves /metrics there
// spec.failurePolicy.recovery ("Restart" | "InPlace"), always set; read by the pod supervisor.
inline constexpr char kEnvRecovery[] = "DDP_RECOVERY";
// max(0, maxRestarts - status.restarts - status.recoveries) when the pod is created: the in-place
// recoveries the pod supervisor may heal this round before it lets the pod fail.
inline constexpr char kEnvMaxRecoveries[] = "DDP_MAX_RECOVERIES";
// For scripts written for torchelastic: equals the round.
inline constexpr char kEnvTorchelasticRestartCount[] = "TORCHELASTIC_RESTART_COUNT";

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The operator's env for pod `index` of a round with `replicas` pods, in the table's order.
// master_addr_override: "" in a cluster (MasterAddr(job)); local mode passes "127.0.0.1".
// master_port_override: 0 = spec.rendezvous.port.
// DDP_MAX_RECOVERIES reads job.status.restarts and job.status.recoveries, so pass the status
// the pod is created under. REQUIRES: 0 <= index < replicas; job defaulted.
EnvList RendezvousEnv(const api::DDPJob& job, int index, int round, int replicas,
                      const std::string& master_addr_override = "", int master_port_override = 0);

// Every name RendezvousEnv can produce (for validation of user env).
const std::vector<std::string>& OperatorEnvNames();

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_ENV_H_
