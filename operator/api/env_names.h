// The names of the environment variables the operator sets in every worker container (DESIGN.md's
// table). They are API: validation rejects user env with these names; plan/env.cc sets them.
#ifndef DDP_OPERATOR_API_ENV_NAMES_H_
#define DDP_OPERATOR_API_ENV_NAMES_H_

#include <string>
#include <vector>

namespace ddp::api {

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
// <spec.checkpoint.path>/<namespace>/<name>: a directory of the job's own (plan/names.h
// CheckpointDir); only when the spec sets a path.
inline constexpr char kEnvCheckpointDir[] = "DDP_CHECKPOINT_DIR";
// "<namespace>/<name>", beside DDP_CHECKPOINT_DIR: ddp-worker records it with its checkpoints and
// refuses to resume from another job's (worker/train/checkpoint_owner.h).
inline constexpr char kEnvCheckpointJob[] = "DDP_CHECKPOINT_JOB";
inline constexpr char kEnvMetricsPort[] = "DDP_METRICS_PORT";      // worker serves /metrics there
// For scripts written for torchelastic: equals the round.
inline constexpr char kEnvTorchelasticRestartCount[] = "TORCHELASTIC_RESTART_COUNT";
// spec.failurePolicy.recovery ("Restart" | "InPlace"), always set; read by the pod supervisor.
inline constexpr char kEnvRecovery[] = "DDP_RECOVERY";
// max(0, maxRestarts - status.restarts - status.recoveries) when the pod is created: the in-place
// recoveries the pod supervisors may heal this round before they let the pod fail.
inline constexpr char kEnvMaxRecoveries[] = "DDP_MAX_RECOVERIES";
// With spec.elastic only, read by ddp-worker's trainer (worker/train/config.h):
// spec.elastic.batchPolicy ("ConstantGlobal" | "ConstantPerRank").
inline constexpr char kEnvBatchPolicy[] = "DDP_BATCH_POLICY";
// ConstantGlobal with spec.elastic.globalBatchSize: the global batch in samples.
inline constexpr char kEnvGlobalBatchSize[] = "DDP_GLOBAL_BATCH_SIZE";
// ConstantGlobal without it: maxReplicas x nprocPerNode, the ranks whose batches make the global
// batch (global = this x the per-rank batch x grad_accum).
inline constexpr char kEnvGlobalBatchRanks[] = "DDP_GLOBAL_BATCH_RANKS";

// Recovery InPlace adds the group's variables (common/group_contract.h): DDP_STORE_ADDR,
// DDP_POD_NAME, DDP_POD_UID, DDP_POD_IP, DDP_POD_ROLE, DDP_LIVENESS_TIMEOUT, DDP_RESTART_POLICY,
// DDP_RETRYABLE_EXIT_CODES. And every pod's worker container gets DDP_TERMINATION_LOG (the
// builders: the container's terminationMessagePath, where the kubelet reads what ddp-worker
// writes there).

// Every name the operator sets (RendezvousEnv's names): user env with one of them is invalid.
const std::vector<std::string>& OperatorEnvNames();

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_ENV_NAMES_H_
