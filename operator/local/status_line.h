// Text of the local terminal: the live status line, the ETA estimate and the final summary.
// Pure formatting; terminal.h decides where and how often it is written. Thread-compatible.
#ifndef DDP_OPERATOR_LOCAL_STATUS_LINE_H_
#define DDP_OPERATOR_LOCAL_STATUS_LINE_H_

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operator/local/metrics_text.h"

namespace ddp::controller::local {

struct StatusLineInput {
  std::string phase;  // "" before the first reconcile
  int round = 0;
  int running = 0;  // pods of any round whose process is alive
  int total = 0;    // status.replicas (pods in the current round)
  int restarts = 0;
  int disruptions = 0;
  int recoveries = 0;  // pods replaced alone (recovery InPlace); shown when > 0
  WorkerProgress progress;          // rank 0's, from its /metrics; empty when not scraped yet
  std::optional<double> eta_seconds;
};

// One line, e.g.
//   "Running  round 1  pods 2/2  restarts 1  step 120/200 [#########-----] 60%  loss 2.31
//    1.2k tok/s  ETA 0:35"
// Fields without data are left out. `width` > 0 truncates to that many columns.
std::string FormatStatusLine(const StatusLineInput& in, int width = 0);

// "[######----]" with `cells` cells for fraction in [0,1] (clamped).
std::string ProgressBar(double fraction, int cells);
// 5 -> "0:05", 65 -> "1:05", 3725 -> "1:02:05"; negative -> "0:00".
std::string FormatDuration(double seconds);
// 950 -> "950", 1234 -> "1.2k", 2500000 -> "2.5M".
std::string FormatRate(double value);

// Estimates the time left from rank 0's step counter over a sliding window. A counter that goes
// backwards (a new round resumed from an older checkpoint) restarts the window.
class EtaEstimator {
 public:
  explicit EtaEstimator(double window_seconds = 30) : window_(window_seconds) {}
  void Add(double now_seconds, double steps);
  // Seconds to reach `total_steps`; nullopt until two points a step apart are known.
  std::optional<double> EtaSeconds(double total_steps) const;

 private:
  double window_;
  std::deque<std::pair<double, double>> points_;  // (time, steps)
};

struct SummaryInput {
  std::string job;
  std::string phase;
  std::string reason;   // the terminal condition's reason, e.g. "MaxRestartsExceeded"
  std::string message;  // its message
  int rounds = 0;       // status.round + 1
  int restarts = 0;
  int disruptions = 0;
  int recoveries = 0;
  double duration_seconds = 0;
  std::string run_dir;
  std::string failed_pod;        // lastFailure.pod when the job failed
  std::vector<std::string> log_tail;  // the last lines of that pod's log
};

// Multi-line summary printed once when ddp-operator local ends.
std::string FormatSummary(const SummaryInput& in);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_STATUS_LINE_H_
