// Rank 0's training progress for the local terminal: the shared reader of a worker's /metrics
// page (common/worker_progress.h) under the names the local status line uses.
#ifndef DDP_OPERATOR_LOCAL_METRICS_TEXT_H_
#define DDP_OPERATOR_LOCAL_METRICS_TEXT_H_

#include <string>

#include "common/worker_progress.h"

namespace ddp::controller::local {

using WorkerProgress = metrics::WorkerScrape;

// A page that does not parse yields an empty WorkerProgress (see ParseWorkerScrape).
inline WorkerProgress ParseWorkerProgress(const std::string& text) {
  return metrics::ParseWorkerScrape(text);
}

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_METRICS_TEXT_H_
