// Reading every rank's busy time in local mode; see straggler_watch.h.
#include "operator/local/straggler_watch.h"

#include <optional>

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
  auto read = [](const LocalPod& pod) -> std::optional<metrics::WorkerScrape> {
    StatusOr<std::string> page = HttpGet("127.0.0.1", pod.metrics_port, "/metrics", 300);
    if (!page.ok()) return std::nullopt;
    return metrics::ParseWorkerScrape(page.value());
  };
  auto live = [&](const LocalPod& pod) {
    return pod.alive && !pod.deleting && pod.round == round && pod.metrics_port > 0;
  };
  // Rank 0's page carries every rank's busy time (the cluster's source too): one read. Without
  // it (an older ddp-worker, another trainer exporting the step series), every pod's page.
  std::map<int, metrics::RankStepTime> by_rank;
  bool from_rank0 = false;
  for (const auto& [name, pod] : executor.pods()) {
    if (pod.index != 0 || !live(pod)) continue;
    if (auto scrape = read(pod); scrape && !scrape->busy_by_rank.empty()) {
      by_rank = scrape->busy_by_rank;
      from_rank0 = true;
    }
  }
  for (const auto& [name, pod] : executor.pods()) {
    if (from_rank0 || !live(pod)) break;
    std::optional<metrics::WorkerScrape> scrape = read(pod);
    if (!scrape) continue;
    for (const auto& [rank, t] : scrape->step_time_by_rank) {
      by_rank[rank >= 0 ? rank : pod.index * nproc_per_node] = t;
    }
  }
  // The two sources measure different sums (busy time, step time): a switch starts over.
  if (!by_rank.empty() && from_rank0 != from_rank0_) {
    detector_ = plan::StragglerDetector(options_);
    from_rank0_ = from_rank0;
  }
  std::vector<std::string> out;
  for (const plan::Straggler& s : detector_.Add(by_rank)) {
    ++reported_;
    out.push_back(s.Describe() + " (reported, not restarted)");
  }
  return out;
}

}  // namespace ddp::controller::local
