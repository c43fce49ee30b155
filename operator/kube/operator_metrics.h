// The operator's Prometheus metrics (names listed in docs/metrics.md). One instance per process,
// owned by `ddp-operator run` and shared by reference with the controller, queue and client.
// Thread-safe (the metric types are).
#ifndef DDP_OPERATOR_KUBE_OPERATOR_METRICS_H_
#define DDP_OPERATOR_KUBE_OPERATOR_METRICS_H_

#include <string>

#include "common/process_metrics.h"
#include "common/prometheus.h"

namespace ddp::controller {

// Label values, written by the controller and read by the dashboard and docs/metrics.md.
// ddp_operator_job_restarts_total{kind}: group restarts caused by failures, by disruptions, and
// failures healed in place.
inline constexpr char kRestartKindFailure[] = "failure";
inline constexpr char kRestartKindDisruption[] = "disruption";
inline constexpr char kRestartKindRecovery[] = "recovery";
// ddp_operator_progress_scrapes_total{result}.
inline constexpr char kScrapeOk[] = "ok";
inline constexpr char kScrapeError[] = "error";
inline constexpr char kScrapeRefused[] = "refused";  // past a cap, or a value out of range

// Every series whose labels are known in advance exists from construction, at 0 (Prometheus'
// instrumentation guidelines): a rate, an increase or an absence alert has a series before the
// first event. Only api_requests_total{verb,code} appears with its first request.
struct OperatorMetrics {
  OperatorMetrics();
  // Reconcile latency buckets (seconds): fine below 100 ms, where a healthy pass lands.
  static std::vector<double> ReconcileBuckets();

  metrics::Registry registry;
  metrics::CounterFamily& reconcile_total;
  metrics::CounterFamily& reconcile_errors_total;
  metrics::CounterFamily& reconcile_panics_total;  // passes ended by an exception (a bug)
  metrics::HistogramFamily& reconcile_duration_seconds;
  metrics::GaugeFamily& queue_depth;
  metrics::GaugeFamily& jobs;  // {phase}
  metrics::CounterFamily& pods_created_total;
  metrics::CounterFamily& pods_deleted_total;
  metrics::CounterFamily& job_restarts_total;  // {kind="failure|disruption|recovery"}
  metrics::CounterFamily& api_requests_total;  // {verb,code}
  metrics::GaugeFamily& leader;
  // From a failure being observed to every pod of the next round running.
  metrics::HistogramFamily& recovery_seconds;
  metrics::CounterFamily& progress_scrapes_total;  // {result="ok|error|refused"}
  metrics::GaugeFamily& stragglers;                // ranks flagged now, over all running jobs
  metrics::CounterFamily& straggler_events_total;  // Straggler Events recorded
  // Per job (labels namespace, ddp_job), from status.incidents (docs/metrics.md "Incidents and
  // goodput"): seconds training stood still per incident once it is closed {kind, outcome}, the
  // incidents opened {kind}, and the goodput (set at each scrape of /metrics). A job's series go
  // with the job.
  metrics::HistogramFamily& job_recovery_seconds;
  metrics::CounterFamily& job_incidents_total;
  metrics::GaugeFamily& job_goodput_ratio;
  // process_cpu_seconds_total, process_resident_memory_bytes, ...: call process.Update() before
  // rendering.
  metrics::ProcessMetrics process;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_OPERATOR_METRICS_H_
