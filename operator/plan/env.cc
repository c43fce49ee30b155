// DESIGN.md's environment table, computed in one place.
#include "operator/plan/env.h"

#include <algorithm>

#include "operator/plan/names.h"

namespace ddp::plan {

EnvList RendezvousEnv(const api::DDPJob& job, int index, int round, int replicas,
                      const std::string& master_addr_override, int master_port_override) {
  const int nproc = job.spec.nproc_per_node;
  const std::string addr = master_addr_override.empty() ? MasterAddr(job) : master_addr_override;
  const std::string port =
      std::to_string(master_port_override > 0 ? master_port_override : job.spec.rendezvous.port);
  const std::string nnodes = std::to_string(replicas);
  const std::string node_rank = std::to_string(index);
  const std::string nproc_s = std::to_string(nproc);
  EnvList env = {
      {kEnvMasterAddr, addr},
      {kEnvMasterPort, port},
      {kEnvWorldSize, std::to_string(replicas * nproc)},
      {kEnvNnodes, nnodes},
      {kEnvNodeRank, node_rank},
      {kEnvNprocPerNode, nproc_s},
  };
  if (nproc == 1) {
    // One process per pod: its global rank is the node rank. With more, `ddp-worker launch`
    // computes RANK = NODE_RANK * NPROC_PER_NODE + LOCAL_RANK per process.
    env.push_back({kEnvRank, node_rank});
    env.push_back({kEnvLocalRank, "0"});
    env.push_back({kEnvLocalWorldSize, "1"});
  }
  env.push_back({kEnvPetNnodes, nnodes});
  env.push_back({kEnvPetNodeRank, node_rank});
  env.push_back({kEnvPetNprocPerNode, nproc_s});
  env.push_back({kEnvPetMasterAddr, addr});
  env.push_back({kEnvPetMasterPort, port});
  env.push_back({kEnvJobName, job.name});
  env.push_back({kEnvRound, std::to_string(round)});
  env.push_back({kEnvRendezvousTimeout, std::to_string(job.spec.rendezvous.timeout_seconds)});
  if (job.spec.checkpoint.path && !job.spec.checkpoint.path->empty()) {
    env.push_back({kEnvCheckpointDir, *job.spec.checkpoint.path});
  }
  env.push_back({kEnvMetricsPort, std::to_string(job.spec.metrics.port)});
  env.push_back({kEnvTorchelasticRestartCount, std::to_string(round)});
  env.push_back({kEnvRecovery, api::RecoveryName(job.spec.failure_policy.recovery)});
  const int budget =
      job.spec.failure_policy.max_restarts - job.status.restarts - job.status.recoveries;
  env.push_back({kEnvMaxRecoveries, std::to_string(std::max(0, budget))});
  return env;
}

const std::vector<std::string>& OperatorEnvNames() {
  static const std::vector<std::string> names = {
      kEnvMasterAddr, kEnvMasterPort, kEnvWorldSize, kEnvNnodes, kEnvNodeRank,
      kEnvNprocPerNode, kEnvRank, kEnvLocalRank, kEnvLocalWorldSize, kEnvPetNnodes,
      kEnvPetNodeRank, kEnvPetNprocPerNode, kEnvPetMasterAddr, kEnvPetMasterPort, kEnvJobName,
      kEnvRound, kEnvRendezvousTimeout, kEnvCheckpointDir, kEnvMetricsPort,
      kEnvTorchelasticRestartCount, kEnvRecovery, kEnvMaxRecoveries};
  return names;
}

}  // namespace ddp::plan
