// Launch planning and the launcher's exit-code decision.
#include "worker/launch/launch_plan.h"

#include <cstdlib>

#include "common/group_contract.h"
#include "worker/comm/rendezvous.h"
#include "worker/train/exit_codes.h"

namespace ddp::worker {
namespace {

Status ReadInt(const std::function<const char*(const char*)>& getenv, const char* name, int def,
               int min, int* out) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') {
    *out = def;
    return Status::OK();
  }
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < min || x > 1 << 20) {
    return Status::InvalidArgument(std::string(name) + ": want an integer >= " +
                                   std::to_string(min) + ", got '" + v + "'");
  }
  *out = static_cast<int>(x);
  return Status::OK();
}

}  // namespace

StatusOr<LaunchPlan> PlanLaunch(const std::function<const char*(const char*)>& getenv,
                                const std::vector<std::string>& args, bool metrics,
                                const std::string& port_dir) {
  LaunchPlan p;
  int nnodes = 1;
  DDP_RETURN_IF_ERROR(ReadInt(getenv, kEnvNodeRank, 0, 0, &p.node_rank));
  DDP_RETURN_IF_ERROR(ReadInt(getenv, kEnvNprocPerNode, 1, 1, &p.nproc_per_node));
  DDP_RETURN_IF_ERROR(ReadInt(getenv, kEnvNnodes, 1, 1, &nnodes));
  DDP_RETURN_IF_ERROR(ReadInt(getenv, kEnvWorldSize, nnodes * p.nproc_per_node, 1, &p.world_size));
  if (p.world_size != nnodes * p.nproc_per_node) {
    return Status::InvalidArgument(std::string(kEnvWorldSize) + "=" + std::to_string(p.world_size) +
                                   " but " + kEnvNnodes + " * " + kEnvNprocPerNode + " = " +
                                   std::to_string(nnodes * p.nproc_per_node));
  }
  if (p.node_rank >= nnodes) {
    return Status::InvalidArgument(std::string(kEnvNodeRank) + "=" + std::to_string(p.node_rank) +
                                   " must be < " + kEnvNnodes + "=" + std::to_string(nnodes));
  }
  for (int local = 0; local < p.nproc_per_node; ++local) {
    ChildSpec c;
    c.local_rank = local;
    c.rank = GlobalRank(p.node_rank, p.nproc_per_node, local);
    c.env[kEnvRank] = std::to_string(c.rank);
    c.env[kEnvLocalRank] = std::to_string(local);
    c.env[kEnvLocalWorldSize] = std::to_string(p.nproc_per_node);
    c.env[kEnvWorldSize] = std::to_string(p.world_size);
    // The pod's launcher or supervisor says why the pod ended, for every rank: not the trainers.
    c.env[group::kEnvTerminationLog] = "";
    c.args = args;
    // Appended last so they win over the user's flags: the launcher owns DDP_METRICS_PORT.
    if (metrics) {
      c.args.insert(c.args.end(), {"--metrics-port", "0", "--metrics-addr", "127.0.0.1",
                                   "--metrics-port-file",
                                   port_dir + "/rank-" + std::to_string(local) + ".port"});
    } else {
      c.args.insert(c.args.end(), {"--metrics-port", "-1"});
    }
    p.children.push_back(std::move(c));
  }
  return p;
}

int LaunchExitCode(const std::vector<ChildExit>& exits_in_order) {
  for (const auto& e : exits_in_order) {
    if (e.code != kExitOk) return e.code;
  }
  return kExitOk;
}

}  // namespace ddp::worker
