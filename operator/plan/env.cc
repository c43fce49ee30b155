// DESIGN.md's environment table, computed in one place.
#include "operator/plan/env.h"

#include <algorithm>

#include "common/failure_policy.h"
#include "common/group_contract.h"
#include "operator/plan/names.h"

namespace ddp::plan {

EnvList RendezvousEnv(const api::DDPJob& job, int index, int round, int replicas,
                      const std::string& master_addr_override, int master_port_override,
                      const std::string& pod_name, const std::string& role) {
  const int nproc = job.spec.nproc_per_node;
  const std::string addr = master_addr_override.empty() ? MasterAddr(job) : master_addr_override;
  const std::string port =
      std::to_string(master_port_override > 0 ? master_port_override : job.spec.rendezvous.port);
  const std::string nnodes = std::to_string(replicas);
  const std::string node_rank = std::to_string(index);
  const std::string nproc_s = std::to_string(nproc);
  EnvList env = {
      {api::kEnvMasterAddr, addr},
      {api::kEnvMasterPort, port},
      {api::kEnvWorldSize, std::to_string(replicas * nproc)},
      {api::kEnvNnodes, nnodes},
  };
  if (index >= 0) env.push_back({api::kEnvNodeRank, node_rank});
  env.push_back({api::kEnvNprocPerNode, nproc_s});
  if (nproc == 1 && index >= 0) {
    // One process per pod: its global rank is the node rank. With more, `ddp-worker launch`
    // computes RANK = NODE_RANK * NPROC_PER_NODE + LOCAL_RANK per process.
    env.push_back({api::kEnvRank, node_rank});
    env.push_back({api::kEnvLocalRank, "0"});
    env.push_back({api::kEnvLocalWorldSize, "1"});
  }
  env.push_back({api::kEnvPetNnodes, nnodes});
  if (index >= 0) env.push_back({api::kEnvPetNodeRank, node_rank});
  env.push_back({api::kEnvPetNprocPerNode, nproc_s});
  env.push_back({api::kEnvPetMasterAddr, addr});
  env.push_back({api::kEnvPetMasterPort, port});
  env.push_back({api::kEnvJobName, job.name});
  env.push_back({api::kEnvRound, std::to_string(round)});
  env.push_back({api::kEnvRendezvousTimeout, std::to_string(job.spec.rendezvous.timeout_seconds)});
  if (job.spec.checkpoint.path && !job.spec.checkpoint.path->empty()) {
    env.push_back({api::kEnvCheckpointDir, CheckpointDir(job)});
    env.push_back({api::kEnvCheckpointJob, JobIdentity(job)});
  }
  env.push_back({api::kEnvMetricsPort, std::to_string(job.spec.metrics.port)});
  env.push_back({api::kEnvTorchelasticRestartCount, std::to_string(round)});
  env.push_back({api::kEnvRecovery, api::RecoveryName(job.spec.failure_policy.recovery)});
  const api::FailurePolicy& fp = job.spec.failure_policy;
  const int budget = fp.max_restarts - job.status.restarts - job.status.recoveries;
  env.push_back({api::kEnvMaxRecoveries, std::to_string(std::max(0, budget))});
  if (const auto& e = job.spec.elastic) {
    // The same global batch at every size the job may run at (worker/data/global_batch.h).
    env.push_back({api::kEnvBatchPolicy, api::BatchPolicyName(e->batch_policy)});
    if (e->batch_policy == api::BatchPolicy::kConstantGlobal) {
      if (e->global_batch_size) {
        env.push_back({api::kEnvGlobalBatchSize, std::to_string(*e->global_batch_size)});
      } else {
        env.push_back({api::kEnvGlobalBatchRanks, std::to_string(e->max_replicas * nproc)});
      }
    }
  }
  if (fp.recovery == api::Recovery::kInPlace) {
    env.push_back({group::kEnvStoreAddr,
                   master_addr_override.empty() ? StoreAddr(job) : master_addr_override});
    env.push_back({group::kEnvPodName, pod_name.empty() ? PodName(job, std::max(0, index)) : pod_name});
    env.push_back({group::kEnvPodRole, role});
    env.push_back({group::kEnvLivenessTimeout, std::to_string(fp.liveness_timeout_seconds)});
    env.push_back({group::kEnvRestartPolicy, api::RestartPolicyName(fp.restart_policy)});
    env.push_back({group::kEnvRetryableExitCodes, failure::FormatExitCodes(fp.retryable_exit_codes)});
    if (job.spec.elastic) {
      // Elastic in place: node ranks up to maxReplicas may exist; the rendezvous pod reads the
      // size the operator asks for from its projected annotation (docs/in-place-recovery.md).
      env.push_back({group::kEnvMaxNodes,
                     std::to_string(std::max(replicas, job.spec.elastic->max_replicas))});
      if (role == group::kRoleRendezvous) {
        env.push_back({group::kEnvGroupSizeFile, kGroupSizeFile});
        // A loss with no spare: the group goes on smaller at once, down to minReplicas, and
        // grows back when the replacement is ready (docs/failures-and-elasticity.md).
        env.push_back({group::kEnvMinNodes, std::to_string(job.spec.elastic->min_replicas)});
      }
    }
  }
  return env;
}

}  // namespace ddp::plan
