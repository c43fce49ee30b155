// A trainer's own record of the last time training stood still for it (docs/metrics.md
// "Incidents and goodput"): the wall time of the last step it committed before an interruption
// (a failed step, a re-formation, a resize), when it saw the interruption, and the wall time of
// the next step it committed. A process that just started (a new round, a replacement healed in
// place) knows only its first commit. Exported as ddp_worker_last_stall_timestamp_seconds{edge}
// and ddp_worker_last_stall_step, which the operator reads for status.incidents; logged as
// `rank R: training stood still Xs (step N at HH:MM:SS.mmm to the next commit)`.
// Not thread-safe: the training loop's thread only.
#ifndef DDP_WORKER_TRAIN_STALL_CLOCK_H_
#define DDP_WORKER_TRAIN_STALL_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "worker/train/worker_metrics.h"

namespace ddp::worker {

class StallClock {
 public:
  using WallTime = std::chrono::system_clock::time_point;

  // `m` may be null (no metrics endpoint); it must outlive this.
  StallClock(WorkerMetrics* m, int rank) : m_(m), rank_(rank) {}

  // The group's generation ended for this trainer (a failed step, or a growth it leaves). A
  // second call before the next commit keeps the first: one stall, however many re-formations.
  void Interrupted(WallTime now = std::chrono::system_clock::now());

  // A step committed; `committed` is the committed step count after it. The first commit of the
  // process, and the first after Interrupted, set the metrics and return the seconds training
  // stood still (nullopt for the first commit of a process: it saw no start). Else nullopt.
  std::optional<double> Committed(int64_t committed, WallTime now = std::chrono::system_clock::now());

 private:
  WorkerMetrics* m_;
  int rank_;
  std::optional<WallTime> last_commit_;
  bool interrupted_ = false;
  std::optional<WallTime> stall_start_, detected_;
  int64_t last_step_ = 0;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_STALL_CLOCK_H_
