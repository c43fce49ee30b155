// Local mode's straggler reports: every few seconds while the job runs, rank 0's page (which
// carries every rank's busy time), or without those series every rank's own page; reports ranks
// persistently slower than the others (plan/stragglers.h decides).
// A report is a line for the terminal (local mode's Event) and a count; never a restart.
// Not thread-safe; the run loop owns it.
#ifndef DDP_OPERATOR_LOCAL_STRAGGLER_WATCH_H_
#define DDP_OPERATOR_LOCAL_STRAGGLER_WATCH_H_

#include <chrono>
#include <string>
#include <vector>

#include "operator/local/executor.h"
#include "operator/plan/stragglers.h"

namespace ddp::controller::local {

class StragglerWatch {
 public:
  StragglerWatch(plan::StragglerOptions options, std::chrono::milliseconds interval)
      : options_(options), interval_(interval), detector_(options) {}

  // When due, reads rank 0's page of `round`, or every live pod's when it lacks the per-rank
  // series (a pod's page without a rank label is rank index * nproc_per_node), and returns the
  // report of each rank that just became a straggler.
  std::vector<std::string> Poll(const LocalExecutor& executor, int round, int nproc_per_node,
                                std::chrono::steady_clock::time_point now);
  // Ranks reported since the run started.
  int reported() const { return reported_; }
  std::chrono::steady_clock::time_point next_read() const { return next_read_; }

 private:
  plan::StragglerOptions options_;
  std::chrono::milliseconds interval_;
  plan::StragglerDetector detector_;
  int round_ = -1;
  bool from_rank0_ = false;  // the last read's source: rank 0's per-rank series, or every page
  int reported_ = 0;
  std::chrono::steady_clock::time_point next_read_{};
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_STRAGGLER_WATCH_H_
