// The controller's side of status.progress: which pod the scraper reads, and handing its
// snapshot to the planner; and the per-job straggler detectors fed by the same reads. The
// decisions (what to write, when a job is hung, who is a straggler) are the plan layer's.
#include "operator/controller/controller.h"

#include "common/group_contract.h"

namespace ddp::controller {

void Controller::ObserveProgress(const api::DDPJob& job, plan::Observed* seen) {
  if (!scraper_) return;
  const std::string key = job.Key();
  // recovery InPlace: the rendezvous pod's page (the group's report and rank 0's series, which
  // it fetches from whichever pod holds rank 0), read while the job is not finished, heals
  // included. Otherwise rank 0's page while the job runs.
  const bool in_place = job.spec.failure_policy.recovery == api::Recovery::kInPlace;
  const bool finished = job.status.phase == api::kPhaseSucceeded ||
                        job.status.phase == api::kPhaseFailed || job.status.phase.empty();
  const plan::ObservedPod* rank0 = nullptr;
  if (!job.deletion_timestamp && (in_place ? !finished : job.status.phase == api::kPhaseRunning)) {
    for (const auto& pod : seen->pods) {
      const bool want = in_place ? pod.role == group::kRoleRendezvous
                                 : pod.index == 0 && pod.role == group::kRoleWorker;
      if (pod.round == job.status.round && want && !pod.deleting && pod.phase == "Running" &&
          !pod.pod_ip.empty()) {
        rank0 = &pod;
      }
    }
  }
  // Not running (starting, restarting, finished): nothing to read, and the next round starts
  // from no progress, so its hang clock starts at its first page.
  if (!rank0) {
    ForgetProgress(key);
    return;
  }
  scraper_->Track(key, {rank0->uid, rank0->pod_ip, job.spec.metrics.port, job.status.round, in_place});
  // The job's pods on the rendezvous pod's node: probed while its page is silent, so a silent
  // node's workers are replaced with it (plan/silent_rendezvous.h rule 3).
  if (in_place && !rank0->node_name.empty()) {
    std::vector<ProbeTarget> mates;
    for (const auto& pod : seen->pods) {
      if (pod.role != group::kRoleRendezvous && pod.round == job.status.round && !pod.deleting &&
          pod.phase == "Running" && !pod.pod_ip.empty() && pod.node_name == rank0->node_name) {
        mates.push_back({pod.uid, pod.pod_ip, job.spec.metrics.port});
      }
    }
    scraper_->SetProbes(key, std::move(mates));
  }
  // A refused page leaves the progress as it was: say so, once per streak, on the job itself.
  if (std::optional<std::string> why = scraper_->RefusalToReport(key)) {
    EmitEvents(job, {plan::Event{"Warning", kMetricsRefusedReason,
                                 "metrics page of pod " + rank0->name + " refused: " + *why +
                                     "; status.progress is not updated until a page is read "
                                     "(flags --scrape-max-bytes, --scrape-max-series)"}});
  }
  if (std::optional<ScrapedProgress> s = scraper_->Get(key)) {
    seen->progress = plan::ObservedProgress{s->round, s->snapshot};
  }
  if (auto g = scraper_->GetGroup(key)) seen->group = plan::ObservedGroup{g->round, g->report, g->pod_uid};
  if (auto r = scraper_->Reads(key); r && in_place) {
    seen->rendezvous_reads = plan::RendezvousReads{r->pod_uid, r->last_ok, r->failing, {}};
    for (const auto& [uid, probe] : r->probes) {
      seen->rendezvous_reads->node_mates[uid] = {probe.sent, probe.answered};
    }
  }
  ObserveStragglers(job, *rank0);
}

void Controller::ObserveStragglers(const api::DDPJob& job, const plan::ObservedPod& rank0) {
  const std::string key = job.Key();
  std::vector<BusyRead> reads = scraper_->TakeBusyReads(key);
  if (reads.empty()) return;  // no new page, or a worker without the per-rank series
  std::shared_ptr<JobStragglers> st;
  {
    std::lock_guard<std::mutex> l(stragglers_mu_);
    std::shared_ptr<JobStragglers>& slot = stragglers_[key];
    if (!slot) slot = std::make_shared<JobStragglers>();
    st = slot;
  }
  std::vector<plan::Event> events;
  {
    std::lock_guard<std::mutex> l(st->mu);
    // Another round or rank 0 pod: other processes, counters from zero.
    if (st->round != job.status.round || st->rank0_uid != rank0.uid) {
      st->round = job.status.round;
      st->rank0_uid = rank0.uid;
      st->detector = plan::StragglerDetector(options_.stragglers);
    }
    for (const BusyRead& read : reads) {
      for (const plan::Straggler& s : st->detector.Add(read, job.status.world_size)) {
        events.push_back(plan::StragglerEvent(job, s));
      }
    }
    st->flagged = st->detector.flagged();
  }
  if (events.empty()) return;
  metrics_->straggler_events_total.Get().Inc(static_cast<double>(events.size()));
  EmitEvents(job, events);
}

void Controller::ForgetProgress(const std::string& key) {
  if (scraper_) scraper_->Forget(key);
  std::lock_guard<std::mutex> l(stragglers_mu_);
  stragglers_.erase(key);
}

}  // namespace ddp::controller
