// Rank 0's training progress, read from a worker's /metrics page (parsed by common/exposition.h).
// Pure; thread-compatible.
#ifndef DDP_OPERATOR_LOCAL_METRICS_TEXT_H_
#define DDP_OPERATOR_LOCAL_METRICS_TEXT_H_

#include <optional>
#include <string>
#include <vector>

#include "common/exposition.h"

namespace ddp::controller::local {

// Worker metric names (exported by worker/, listed in docs/metrics.md); read here for the status line.
inline constexpr char kMetricSteps[] = "ddp_worker_steps_total";
inline constexpr char kMetricLoss[] = "ddp_worker_loss";
inline constexpr char kMetricTokensPerSecond[] = "ddp_worker_tokens_per_second";
inline constexpr char kMetricTotalSteps[] = "ddp_worker_total_steps";

struct WorkerProgress {
  std::optional<double> steps;
  std::optional<double> loss;
  std::optional<double> tokens_per_second;
  std::optional<double> total_steps;
};

// With `ddp-worker launch` every series carries a `rank` label: the rank="0" series is used;
// without it, the first series of each name.
WorkerProgress ReadWorkerProgress(const std::vector<metrics::ParsedFamily>& families);

// Parses `text` and reads it; a page that does not parse yields an empty WorkerProgress (a scrape
// racing a worker's shutdown must not stop the terminal).
WorkerProgress ParseWorkerProgress(const std::string& text);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_METRICS_TEXT_H_
