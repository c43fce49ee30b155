#include "operator/kube/operator_metrics.h"

#include "operator/api/types.h"

namespace ddp::controller {

using metrics::CounterFamily;

std::vector<double> OperatorMetrics::ReconcileBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

OperatorMetrics::OperatorMetrics()
    : reconcile_total(registry.AddCounter("ddp_operator_reconcile_total",
                                          "Reconcile passes, successful or not.")),
      reconcile_errors_total(registry.AddCounter("ddp_operator_reconcile_errors_total",
                                                 "Reconcile passes that returned an error.")),
      reconcile_panics_total(registry.AddCounter(
          "ddp_operator_reconcile_panics_total",
          "Reconcile passes ended by an exception; also counted in reconcile_errors_total. The "
          "job is retried with backoff, the operator runs on.")),
      reconcile_duration_seconds(registry.AddHistogram(
          "ddp_operator_reconcile_duration_seconds", "Wall time of one reconcile pass.",
          ReconcileBuckets())),
      queue_depth(registry.AddGauge("ddp_operator_queue_depth",
                                    "Job keys ready in the work queue, waiting for a worker.")),
      jobs(registry.AddGauge("ddp_operator_jobs", "DDPJobs in the cache by status.phase.",
                             {"phase"})),
      pods_created_total(registry.AddCounter("ddp_operator_pods_created_total",
                                             "Worker pods created.")),
      pods_deleted_total(registry.AddCounter("ddp_operator_pods_deleted_total",
                                             "Worker pods deleted.")),
      job_restarts_total(registry.AddCounter("ddp_operator_job_restarts_total",
                                             "Group restarts and in-place recoveries, by cause.",
                                             {"kind"})),
      api_requests_total(registry.AddCounter("ddp_operator_api_requests_total",
                                             "Kubernetes API requests by verb and HTTP code.",
                                             {"verb", "code"})),
      leader(registry.AddGauge("ddp_operator_leader",
                               "1 while this replica holds the leader lease (or runs without "
                               "leader election), else 0.")),
      recovery_seconds(registry.AddHistogram(
          "ddp_operator_recovery_seconds",
          "Seconds from a failure or disruption being observed to every pod of the next round "
          "running.",
          {1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800})),
      progress_scrapes_total(registry.AddCounter(
          "ddp_operator_progress_scrapes_total",
          "Reads of rank 0's /metrics for status.progress, by result (refused: past "
          "--scrape-max-bytes or --scrape-max-series, or a value out of range).", {"result"})),
      stragglers(registry.AddGauge(
          "ddp_operator_stragglers",
          "Ranks of running jobs currently flagged as stragglers (busy time per step a set "
          "factor above the median of the other ranks').")),
      straggler_events_total(registry.AddCounter(
          "ddp_operator_straggler_events_total",
          "Straggler Events recorded (one per rank each time it becomes a straggler).")),
      job_recovery_seconds(registry.AddHistogram(
          "ddp_job_recovery_seconds",
          "Seconds training stood still in one incident of a job (status.incidents), once its "
          "outcome and stall are known.",
          {0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600},
          {"ddp_namespace", "ddp_job", "kind", "outcome"})),
      job_incidents_total(registry.AddCounter(
          "ddp_job_incidents_total", "Incidents of a job (status.incidents) by kind.",
          {"ddp_namespace", "ddp_job", "kind"})),
      job_goodput_ratio(registry.AddGauge(
          "ddp_job_goodput_ratio",
          "Share of the time since the job started (status.startTime) that training advanced.",
          {"ddp_namespace", "ddp_job"})),
      process(&registry) {
  for (CounterFamily* f : {&reconcile_total, &reconcile_errors_total, &reconcile_panics_total,
                           &pods_created_total,
                           &pods_deleted_total, &straggler_events_total}) {
    f->Get();
  }
  for (const char* kind : {kRestartKindFailure, kRestartKindDisruption, kRestartKindRecovery}) {
    job_restarts_total.Labels({kind});
  }
  for (const char* result : {kScrapeOk, kScrapeError, kScrapeRefused}) progress_scrapes_total.Labels({result});
  for (const char* phase : {api::kPhasePending, api::kPhaseRunning, api::kPhaseRestarting,
                            api::kPhaseScaling, api::kPhaseSucceeded, api::kPhaseFailed,
                            api::kPhaseSuspended}) {
    jobs.Labels({phase});
  }
  reconcile_duration_seconds.Get();
  recovery_seconds.Get();
  queue_depth.Get();
  leader.Get();
  stragglers.Get();
}

}  // namespace ddp::controller
