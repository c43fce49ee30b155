// Reading every rank's step time in local mode; see straggler_watch.h.
#include "operator/local/straggler_watch.h"

#include "common/http_server.h"
#include "common/worker_progress.h"

namespace ddp::controller::local {

std::vector<std::string> StragglerWatch::Poll(const LocalExecutor& executor, int round,
                                              int nproc_per_node,
                                              std::chrono::steady_clock::time_point now) {
  if (now < next_read_) return {};
  next_read_ = now + interval_;
  if (round != round_) {  // a new round: new processes, new counters
    detector_ = plan::StragglerDetector(options_);
    round_ = round;
  }
  std::map<int, metrics::RankStepTime> by_rank;
  for (const auto& [name, pod] : executor.pods()) {
    if (!pod.alive || pod.deleting || pod.round != round || pod.metrics_port <= 0) continue;
    StatusOr<std::string> page = HttpGet("127.0.0.1", pod.metrics_port, "/metrics", 300);
    if (!page.ok()) continue;
    for (const auto& [rank, t] : metrics::ParseWorkerScrape(page.value()).step_time_by_rank) {
      by_rank[rank >= 0 ? rank : pod.index * nproc_per_node] = t;
    }
  }
  std::vector<std::string> out;
  for (const plan::Straggler& s : detector_.Add(by_rank)) {
    ++reported_;
    out.push_back(s.Describe() + " (reported, not restarted)");
  }
  return out;
}

}  // namespace ddp::controller::local
