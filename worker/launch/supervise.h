// In-place recovery inside a pod (DESIGN.md "In-place recovery"): the env that ties the pod's
// supervisor (supervisor.h) and its trainers together. What a trainer's exit means is
// common/failure_policy.h, the same decision the operator makes for pods.
#ifndef DDP_WORKER_LAUNCH_SUPERVISE_H_
#define DDP_WORKER_LAUNCH_SUPERVISE_H_

#include <functional>

#include "common/status.h"
#include "worker/contract/env_names.h"  // kEnvRecovery, kEnvMaxRecoveries, kEnvSupervised, ...

namespace ddp::worker {

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
