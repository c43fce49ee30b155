// `ddp-operator local`: runs one DDPJob on this machine. The loop is the controller's, with the
// local executor in place of the API server and kubelet:
//   1. reap exited processes, SIGKILL deletes past their grace period;
//   2. if the manifest file changed and is valid, take its spec (generation + 1);
//   3. PlanReconcile(job, observed, now); keep plan.status as job.status; apply creates and
//      deletes; print the plan's events;
//   4. wait until a process exits, a signal arrives, requeue_after or a grace period ends, or the
//      next manifest poll is due.
// It ends when the job is Succeeded or Failed (after ttlSecondsAfterFinished when set), or on
// SIGINT/SIGTERM/SIGHUP; then it stops every process it started.
#ifndef DDP_OPERATOR_LOCAL_RUNNER_H_
#define DDP_OPERATOR_LOCAL_RUNNER_H_

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace ddp::controller::local {

// Exit codes of `ddp-operator local`.
inline constexpr int kExitSucceeded = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;  // bad flags, unreadable or invalid manifest

struct RunOptions {
  std::string manifest_path;
  std::string run_dir;  // "" = ./runs/<job>-<YYYYmmdd-HHMMSS>
  std::optional<int> grace_seconds;  // overrides terminationGracePeriodSeconds of every pod
  // Emulates a cluster's pod start latency: each pod's process starts this long after its create.
  std::chrono::milliseconds pod_start_delay{0};
  bool live = true;                  // live status line (only honoured on a terminal)
  std::chrono::milliseconds watch_interval{300};
  std::chrono::milliseconds scrape_interval{1000};
  std::vector<std::string> command_dirs;  // searched before $PATH; default next to the binary
  // A rank whose busy time per step is at least this times the other ranks' median, for
  // straggler_reads consecutive reads (one every straggler_interval), is reported as a straggler.
  double straggler_factor = 1.5;
  int straggler_reads = 3;
  std::chrono::milliseconds straggler_interval{5000};
  // Scripted resizes (--scale-at STEP=REPLICAS,...), in step order: once rank 0 has trained
  // STEP steps, spec.replicas becomes REPLICAS, as an edit of the manifest would make it.
  std::vector<std::pair<int64_t, int>> scale_at;
};

// Runs the job to its end. Returns kExitSucceeded, kExitFailed, kExitUsage, or 128+n when
// stopped by signal n. Writes progress to `out` and problems to `err`.
int RunLocal(const RunOptions& options, FILE* out, FILE* err);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_RUNNER_H_
