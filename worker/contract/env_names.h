// The worker's process contract: the environment the operator's planner and the worker's own
// launcher/supervisor hand down to a pod's processes (DESIGN.md env table, "In-place recovery").
// Below both launch/ (which sets and reads them) and group/ (which reads them), so the group
// protocol knows no process control. The group's own variables are common/group_contract.h.
#ifndef DDP_WORKER_CONTRACT_ENV_NAMES_H_
#define DDP_WORKER_CONTRACT_ENV_NAMES_H_

namespace ddp::worker {

// Written by the operator's planner (DESIGN.md env table), read by the launcher and the group.
inline constexpr char kEnvNodeRank[] = "NODE_RANK";            // this pod's index
inline constexpr char kEnvNprocPerNode[] = "NPROC_PER_NODE";   // trainers per pod
inline constexpr char kEnvNnodes[] = "NNODES";                 // pods in the round

// Written by the operator's planner, read by ddp-worker: "InPlace" or "Restart" (default).
inline constexpr char kEnvRecovery[] = "DDP_RECOVERY";
// Written by the operator's planner: failures the group may heal in place in this round (the rest
// of spec.failurePolicy.maxRestarts); the rendezvous pod keeps the count (group/budget.h).
inline constexpr char kEnvMaxRecoveries[] = "DDP_MAX_RECOVERIES";
// Written by the supervisor for its trainers, read by main.cc: "1" = run the trainer itself.
inline constexpr char kEnvSupervised[] = "DDP_SUPERVISED";
// Written by the supervisor: how many times this local rank's trainer was started before (0 for
// the first). Read by fault injection (fault.h), so a test can crash one incarnation only.
inline constexpr char kEnvIncarnation[] = "DDP_INCARNATION";
// Read by the supervisor: "0" turns warm standby trainers off (standby.h); "1", the default, on.
inline constexpr char kEnvWarmStandby[] = "DDP_WARM_STANDBY";

}  // namespace ddp::worker

#endif  // DDP_WORKER_CONTRACT_ENV_NAMES_H_
