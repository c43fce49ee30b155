// Local mode sees every rank's /metrics: this reads them all every few seconds while the job
// runs and reports ranks persistently slower than the others (plan/stragglers.h decides).
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

  // When due, reads every live pod of `round` (a pod's page without a rank label is rank
  // index * nproc_per_node) and returns the report of each rank that just became a straggler.
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
  int reported_ = 0;
  std::chrono::steady_clock::time_point next_read_{};
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_STRAGGLER_WATCH_H_
