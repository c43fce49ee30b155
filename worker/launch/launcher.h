// `ddp-worker launch`: one trainer process per local rank (torchrun's role inside a pod), signal
// forwarding, fail-together, and one merged /metrics endpoint for the pod.
#ifndef DDP_WORKER_LAUNCH_LAUNCHER_H_
#define DDP_WORKER_LAUNCH_LAUNCHER_H_

#include <string>
#include <vector>

namespace ddp::worker {

// Grace between SIGTERM and SIGKILL when the launcher stops its children; seconds, default 30.
// Written by users/tests, read by the launcher.
inline constexpr char kEnvLaunchGrace[] = "DDP_LAUNCH_GRACE_SECONDS";

// Protocol:
//   1. validate the config exactly as a trainer would (bad config -> 2 before any child starts);
//   2. plan children (launch_plan.h) and start them with `self` (the ddp-worker binary);
//   3. SIGTERM/SIGINT to the launcher are forwarded to every child (they checkpoint, exit 75);
//   4. when a child fails, the others get SIGTERM, then SIGKILL after the grace;
//   5. with DDP_METRICS_PORT, serve /metrics merging every child's series labelled rank and
//      local_rank, and /healthz;
//   6. exit with LaunchExitCode of the children's exits (0, 2, 3 or 75).
// Returns the exit code; the caller exits with it.
int LaunchMain(const char* self, const std::vector<std::string>& args);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_LAUNCHER_H_
