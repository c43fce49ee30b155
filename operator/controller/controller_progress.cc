// The controller's side of status.progress: which pod the scraper reads, and handing its
// snapshot to the planner. The decisions (what to write, when a job is hung) are the planner's.
#include "operator/controller/controller.h"

namespace ddp::controller {

void Controller::ObserveProgress(const api::DDPJob& job, plan::Observed* seen) {
  if (!scraper_) return;
  const std::string key = job.Key();
  const plan::ObservedPod* rank0 = nullptr;
  if (job.status.phase == api::kPhaseRunning && !job.deletion_timestamp) {
    for (const auto& pod : seen->pods) {
      if (pod.round == job.status.round && pod.index == 0 && !pod.deleting &&
          pod.phase == "Running" && !pod.pod_ip.empty()) {
        rank0 = &pod;
      }
    }
  }
  // Not running (starting, restarting, finished): nothing to read, and the next round starts
  // from no progress, so its hang clock starts at its first page.
  if (!rank0) {
    scraper_->Forget(key);
    return;
  }
  scraper_->Track(key, {rank0->uid, rank0->pod_ip, job.spec.metrics.port, job.status.round});
  if (std::optional<ScrapedProgress> s = scraper_->Get(key)) {
    seen->progress = plan::ObservedProgress{s->round, s->snapshot};
  }
}

}  // namespace ddp::controller
