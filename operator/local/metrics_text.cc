// The few worker metrics the local terminal shows.
#include "operator/local/metrics_text.h"

namespace ddp::controller::local {

WorkerProgress ReadWorkerProgress(const std::vector<metrics::ParsedFamily>& families) {
  auto read = [&](const char* name) {
    std::optional<double> v = metrics::FindSample(families, name, {{"rank", "0"}});
    return v ? v : metrics::FindSample(families, name);
  };
  WorkerProgress p;
  p.steps = read(kMetricSteps);
  p.loss = read(kMetricLoss);
  p.tokens_per_second = read(kMetricTokensPerSecond);
  p.total_steps = read(kMetricTotalSteps);
  return p;
}

WorkerProgress ParseWorkerProgress(const std::string& text) {
  auto families = metrics::ParseExposition(text);
  if (!families.ok()) return {};
  return ReadWorkerProgress(families.value());
}

}  // namespace ddp::controller::local
