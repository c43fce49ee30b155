// OperatorMetrics: every series whose labels are known in advance exists at 0 from the start
// (Prometheus' instrumentation guidelines), so the dashboard's error, event and restart panels
// read 0 instead of "no data" until something happens.
#include "operator/kube/operator_metrics.h"

#include <gtest/gtest.h>

#include "common/exposition.h"

namespace ddp::controller {
namespace {

// Series a fresh operator must export, each with the value 0 (a fresh process has counted
// nothing; the histograms have observed nothing).
const std::vector<std::pair<std::string, metrics::LabelPairs>> kZeroSeries = {
    {"ddp_operator_reconcile_total", {}},
    {"ddp_operator_reconcile_errors_total", {}},
    {"ddp_operator_reconcile_panics_total", {}},
    {"ddp_operator_reconcile_duration_seconds_count", {}},
    {"ddp_operator_queue_depth", {}},
    {"ddp_operator_pods_created_total", {}},
    {"ddp_operator_pods_deleted_total", {}},
    {"ddp_operator_job_restarts_total", {{"kind", "failure"}}},
    {"ddp_operator_job_restarts_total", {{"kind", "disruption"}}},
    {"ddp_operator_job_restarts_total", {{"kind", "recovery"}}},
    {"ddp_operator_leader", {}},
    {"ddp_operator_recovery_seconds_count", {}},
    {"ddp_operator_recovery_seconds_bucket", {{"le", "+Inf"}}},
    {"ddp_operator_progress_scrapes_total", {{"result", "ok"}}},
    {"ddp_operator_progress_scrapes_total", {{"result", "error"}}},
    {"ddp_operator_stragglers", {}},
    {"ddp_operator_straggler_events_total", {}},
    {"ddp_operator_jobs", {{"phase", "Pending"}}},
    {"ddp_operator_jobs", {{"phase", "Running"}}},
    {"ddp_operator_jobs", {{"phase", "Restarting"}}},
    {"ddp_operator_jobs", {{"phase", "Scaling"}}},
    {"ddp_operator_jobs", {{"phase", "Succeeded"}}},
    {"ddp_operator_jobs", {{"phase", "Failed"}}},
    {"ddp_operator_jobs", {{"phase", "Suspended"}}},
};

TEST(OperatorMetricsTest, KnownSeriesExistAtZeroBeforeAnyEvent) {
  OperatorMetrics m;
  auto families = metrics::ParseExposition(m.registry.Render());
  ASSERT_TRUE(families.ok()) << families.status().ToString();
  for (const auto& [name, labels] : kZeroSeries) {
    std::string what = name;
    for (const auto& [k, v] : labels) what += " " + k + "=" + v;
    EXPECT_EQ(metrics::FindSample(*families, name, labels), 0.0) << what;
  }
}

TEST(OperatorMetricsTest, InitialSeriesAreTheOnesTheControllerIncrements) {
  // The controller increments through the same label constants; a count moves the zero series
  // rather than adding a second one.
  OperatorMetrics m;
  m.job_restarts_total.Labels({kRestartKindFailure}).Inc();
  m.progress_scrapes_total.Labels({kScrapeError}).Inc(2);
  m.reconcile_errors_total.Get().Inc();
  auto families = metrics::ParseExposition(m.registry.Render());
  ASSERT_TRUE(families.ok());
  EXPECT_EQ(metrics::FindSample(*families, "ddp_operator_job_restarts_total", {{"kind", "failure"}}), 1.0);
  EXPECT_EQ(metrics::FindSample(*families, "ddp_operator_job_restarts_total", {{"kind", "recovery"}}), 0.0);
  EXPECT_EQ(metrics::FindSample(*families, "ddp_operator_progress_scrapes_total", {{"result", "error"}}), 2.0);
  EXPECT_EQ(metrics::FindSample(*families, "ddp_operator_reconcile_errors_total"), 1.0);
  size_t failure_series = 0;
  for (const auto& f : *families) {
    if (f.name != "ddp_operator_job_restarts_total") continue;
    for (const auto& s : f.samples) failure_series += s.labels == metrics::LabelPairs{{"kind", "failure"}};
  }
  EXPECT_EQ(failure_series, 1u);
}

}  // namespace
}  // namespace ddp::controller
