// In-place recovery inside a pod (DESIGN.md "In-place recovery"): which trainer exits the pod's
// supervisor heals by restarting the trainer, and the env that ties supervisor and trainers
// together. Pure; the process handling is launcher.cc, the store it hosts is supervisor_store.h.
#ifndef DDP_WORKER_LAUNCH_SUPERVISE_H_
#define DDP_WORKER_LAUNCH_SUPERVISE_H_

#include <cstdint>
#include <functional>

#include "common/status.h"

namespace ddp::worker {

// Written by the operator's planner, read by ddp-worker: "InPlace" or "Restart" (default).
inline constexpr char kEnvRecovery[] = "DDP_RECOVERY";
// Written by the operator's planner: in-place recoveries the group may heal in this round
// before supervisors stop restarting trainers (the rest of spec.failurePolicy.maxRestarts).
inline constexpr char kEnvMaxRecoveries[] = "DDP_MAX_RECOVERIES";
// Written by the supervisor for its trainers, read by main.cc: "1" = run the trainer itself.
inline constexpr char kEnvSupervised[] = "DDP_SUPERVISED";
// Written by the supervisor: how many times this local rank's trainer was started before (0 for
// the first). Read by fault injection (fault.h), so a test can crash one incarnation only.
inline constexpr char kEnvIncarnation[] = "DDP_INCARNATION";
// Read by the supervisor: "0" turns warm standby trainers off (standby.h); "1", the default, on.
inline constexpr char kEnvWarmStandby[] = "DDP_WARM_STANDBY";

inline constexpr int64_t kDefaultMaxRecoveries = 3;  // spec.failurePolicy.maxRestarts' default

struct RecoverySettings {
  bool in_place = false;
  int64_t max_recoveries = kDefaultMaxRecoveries;
  bool warm_standby = true;  // only with in_place
};

// DDP_RECOVERY, DDP_MAX_RECOVERIES and DDP_WARM_STANDBY; InvalidArgument naming the variable otherwise.
StatusOr<RecoverySettings> RecoverySettingsFromLookup(
    const std::function<const char*(const char*)>& getenv);

// What the supervisor does when a trainer exits with `code` while the group is not stopping.
enum class OnTrainerExit {
  kDone,       // 0: this trainer finished
  kRestart,    // heal in place: start the same rank again
  kFailPod,    // stop the other trainers and exit (the operator decides)
};

// 0 -> kDone. 2 and 3 (permanent) -> kFailPod. Anything else (75, signals) -> kRestart when
// in place and the group's recoveries so far, this one included, are within the budget;
// otherwise kFailPod.
OnTrainerExit DecideTrainerExit(int code, const RecoverySettings& settings,
                                int64_t group_recoveries_including_this);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_SUPERVISE_H_
