// The list of reserved env names, in DESIGN.md's order.
#include "operator/api/env_names.h"

namespace ddp::api {

const std::vector<std::string>& OperatorEnvNames() {
  static const std::vector<std::string> names = {
      kEnvMasterAddr, kEnvMasterPort, kEnvWorldSize, kEnvNnodes, kEnvNodeRank,
      kEnvNprocPerNode, kEnvRank, kEnvLocalRank, kEnvLocalWorldSize, kEnvPetNnodes,
      kEnvPetNodeRank, kEnvPetNprocPerNode, kEnvPetMasterAddr, kEnvPetMasterPort, kEnvJobName,
      kEnvRound, kEnvRendezvousTimeout, kEnvCheckpointDir, kEnvMetricsPort,
      kEnvTorchelasticRestartCount, kEnvRecovery, kEnvMaxRecoveries};
  return names;
}

}  // namespace ddp::api
