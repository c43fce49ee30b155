// In-place recovery inside a pod (DESIGN.md "In-place recovery"): the env that ties the pod's
// supervisor (supervisor.h) and its trainers together. What a trainer's exit means is
// common/failure_policy.h, the same decision the operator makes for pods.
#ifndef DDP_WORKER_LAUNCH_SUPERVISE_H_
#define DDP_WORKER_LAUNCH_SUPERVISE_H_

#include <functional>

#include "common/status.h"

namespace ddp::worker {

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

struct RecoverySettings {
  bool in_place = false;
  bool warm_standby = true;  // only with in_place
};

// DDP_RECOVERY and DDP_WARM_STANDBY; InvalidArgument naming the variable otherwise. (The
// supervisor reads the rest of an InPlace pod's environment through group/settings.h.)
StatusOr<RecoverySettings> RecoverySettingsFromLookup(
    const std::function<const char*(const char*)>& getenv);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_SUPERVISE_H_
