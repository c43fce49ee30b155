// `ddp-worker launch` decisions, pure: rank arithmetic (its one home), each child's environment
// and arguments, and the launcher's exit code. The process handling lives in launcher.cc.
#ifndef DDP_WORKER_LAUNCH_LAUNCH_PLAN_H_
#define DDP_WORKER_LAUNCH_LAUNCH_PLAN_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/contract/env_names.h"  // kEnvNodeRank, kEnvNprocPerNode, kEnvNnodes

namespace ddp::worker {

// The global rank of local process `local_rank` on node `node_rank`. The only place in the
// worker that computes a rank from node and local indices.
inline int GlobalRank(int node_rank, int nproc_per_node, int local_rank) {
  return node_rank * nproc_per_node + local_rank;
}

struct ChildSpec {
  int rank = 0;
  int local_rank = 0;
  std::map<std::string, std::string> env;  // set on top of the launcher's own environment
  std::vector<std::string> args;           // after argv[0]
};

struct LaunchPlan {
  int node_rank = 0;
  int nproc_per_node = 1;
  int world_size = 1;
  std::vector<ChildSpec> children;
};

// NODE_RANK (default 0), NPROC_PER_NODE (default 1), NNODES (default 1); WORLD_SIZE defaults to
// NNODES * NPROC_PER_NODE and must equal it when both are set. Each child gets RANK, LOCAL_RANK,
// LOCAL_WORLD_SIZE, WORLD_SIZE, and `args` followed by its metrics flags: with a launcher port
// (metrics_port >= 0) a child serves on 127.0.0.1, an ephemeral port, written to
// <port_dir>/rank-<local>.port; without one the child serves nothing (--metrics-port -1).
// InvalidArgument naming the variable.
StatusOr<LaunchPlan> PlanLaunch(const std::function<const char*(const char*)>& getenv,
                                const std::vector<std::string>& args, bool metrics,
                                const std::string& port_dir);

// How a child ended: exit code, or 128 + signal when killed.
struct ChildExit {
  int local_rank = 0;
  int code = 0;
};

// The launcher's exit code from children's exits in the order they happened: 0 when all exited
// 0; else the first failure's own code, unchanged (the root cause: the others were stopped
// because of it), so that the operator applies restartPolicy to the code the trainer chose.
int LaunchExitCode(const std::vector<ChildExit>& exits_in_order);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_LAUNCH_PLAN_H_
