// The list of reserved env names, in DESIGN.md's order.
#include "operator/api/env_names.h"

#include "common/group_contract.h"

namespace ddp::api {

const std::vector<std::string>& OperatorEnvNames() {
  static const std::vector<std::string> names = {
      kEnvMasterAddr, kEnvMasterPort, kEnvWorldSize, kEnvNnodes, kEnvNodeRank,
      kEnvNprocPerNode, kEnvRank, kEnvLocalRank, kEnvLocalWorldSize, kEnvPetNnodes,
      kEnvPetNodeRank, kEnvPetNprocPerNode, kEnvPetMasterAddr, kEnvPetMasterPort, kEnvJobName,
      kEnvRound, kEnvRendezvousTimeout, kEnvCheckpointDir, kEnvCheckpointJob, kEnvMetricsPort,
      kEnvTorchelasticRestartCount, kEnvRecovery, kEnvMaxRecoveries, kEnvBatchPolicy,
      kEnvGlobalBatchSize, kEnvGlobalBatchRanks, group::kEnvStoreAddr,
      group::kEnvPodName, group::kEnvPodUid, group::kEnvPodIp, group::kEnvPodRole,
      group::kEnvLivenessTimeout, group::kEnvRestartPolicy, group::kEnvRetryableExitCodes,
      group::kEnvMaxNodes, group::kEnvMinNodes, group::kEnvGroupSizeFile, group::kEnvTerminationLog};
  return names;
}

}  // namespace ddp::api
