// A worker's or rendezvous pod's page read as the operator reads it (limits, value checks, the
// group report, the step tracker). Besides not crashing: what passes the checks is within the
// bounds the status relies on.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/worker_progress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddp::metrics;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto page = ReadWorkerPage(text, {1 << 20, 5000});
  if (!page.ok()) return 0;
  const WorkerScrape& s = *page;
  if (s.steps && !(*s.steps >= 0 && *s.steps <= kMaxPageSteps)) std::abort();
  if (s.loss && !std::isfinite(*s.loss)) std::abort();
  const GroupScrape& g = s.group;
  if (g.present && !(g.recoveries >= 0 && g.recoveries <= kMaxPageCount)) std::abort();
  if (g.present && !(std::fabs(g.budget_left) <= kMaxPageCount)) std::abort();
  for (const auto& [pod, rank] : g.members) {
    if (rank < -1 || rank > kMaxPageRank) std::abort();
  }
  for (const auto& [peer, t] : s.busy_by_rank) {
    if (peer < 0 || peer > kMaxPageRank || !std::isfinite(t.sum_seconds)) std::abort();
  }
  ProgressTracker tracker;
  const WallTime t0{};
  tracker.Add(s, t0);
  tracker.Add(s, t0 + std::chrono::seconds(1));
  if (tracker.snapshot()) {
    if (auto eta = tracker.snapshot()->EtaSeconds(); eta && std::isnan(*eta)) std::abort();
  }
  return 0;
}
