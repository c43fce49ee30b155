#include "common/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/exposition.h"
#include "tests/common/promtool.h"

namespace ddp::metrics {
namespace {

TEST(PrometheusTest, RendersCounterGaugeAndHistogramInTextFormat) {
  Registry reg;
  reg.AddCounter("ddp_requests_total", "Requests by verb.", {"verb", "code"})
      .Labels({"GET", "200"}).Inc(3);
  reg.AddGauge("ddp_queue_depth", "Keys waiting.").Get().Set(2.5);
  auto& h = reg.AddHistogram("ddp_step_seconds", "Step time.", {0.1, 1});
  h.Get().Observe(0.05);
  h.Get().Observe(0.5);
  h.Get().Observe(7);
  // Written from the text format's rules (HELP, TYPE, cumulative buckets with le, +Inf, sum,
  // count) in prometheus-cpp's layout: a histogram's count and sum before its buckets; families
  // in registration order, labels in the order the family declares them.
  const std::string want =
      "# HELP ddp_requests_total Requests by verb.\n"
      "# TYPE ddp_requests_total counter\n"
      "ddp_requests_total{verb=\"GET\",code=\"200\"} 3\n"
      "# HELP ddp_queue_depth Keys waiting.\n"
      "# TYPE ddp_queue_depth gauge\n"
      "ddp_queue_depth 2.5\n"
      "# HELP ddp_step_seconds Step time.\n"
      "# TYPE ddp_step_seconds histogram\n"
      "ddp_step_seconds_count 3\n"
      "ddp_step_seconds_sum 7.55\n"
      "ddp_step_seconds_bucket{le=\"0.1\"} 1\n"
      "ddp_step_seconds_bucket{le=\"1\"} 2\n"
      "ddp_step_seconds_bucket{le=\"+Inf\"} 3\n";
  EXPECT_EQ(reg.Render(), want);
}

TEST(PrometheusTest, EscapesLabelValuesAndHelp) {
  Registry reg;
  reg.AddGauge("g", "line1\nback\\slash", {"k"}).Labels({"a\"b\\c\nd"}).Set(1);
  const std::string text = reg.Render();
  EXPECT_NE(text.find("# HELP g line1\\nback\\\\slash\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{k=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << text;
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(FindSample(*parsed, "g", {{"k", "a\"b\\c\nd"}}), 1.0);
}

TEST(PrometheusTest, SameNameReturnsSameFamilyAndCountersNeverGoDown) {
  Registry reg;
  auto& a = reg.AddCounter("c_total", "c");
  auto& b = reg.AddCounter("c_total", "c");
  EXPECT_EQ(&a, &b);
  a.Get().Inc(2);
  a.Get().Inc(-5);
  EXPECT_EQ(b.Get().value(), 2);
}

TEST(PrometheusTest, ConcurrentIncrementsAreNotLost) {
  Registry reg;
  auto& c = reg.AddCounter("c_total", "c", {"t"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { for (int i = 0; i < 10000; ++i) c.Labels({"x"}).Inc(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Labels({"x"}).value(), 40000);
}

TEST(PrometheusTest, RemoveDropsASeries) {
  Registry reg;
  auto& g = reg.AddGauge("jobs", "jobs", {"job"});
  g.Labels({"a"}).Set(1);
  g.Labels({"b"}).Set(1);
  g.Remove({"a"});
  const std::string text = reg.Render();
  EXPECT_EQ(text.find("job=\"a\""), std::string::npos);
  EXPECT_NE(text.find("job=\"b\""), std::string::npos);
}

TEST(PrometheusTest, FamilyWithoutChildrenKeepsHelpAndTypeAndChildrenComeInLabelOrder) {
  Registry reg;
  reg.AddGauge("ddp_empty", "Nothing yet.", {"job"});
  auto& c = reg.AddCounter("ddp_jobs_total", "Jobs.", {"job"});
  for (const char* job : {"c", "a", "b"}) c.Labels({job}).Inc();
  EXPECT_EQ(reg.Render(),
            "# HELP ddp_empty Nothing yet.\n# TYPE ddp_empty gauge\n"
            "# HELP ddp_jobs_total Jobs.\n# TYPE ddp_jobs_total counter\n"
            "ddp_jobs_total{job=\"a\"} 1\nddp_jobs_total{job=\"b\"} 1\nddp_jobs_total{job=\"c\"} 1\n");
}

TEST(PrometheusTest, ARemovedSeriesStartsAgainFromZero) {
  Registry reg;
  auto& c = reg.AddCounter("c_total", "c", {"job"});
  c.Labels({"a"}).Inc(5);
  c.Remove({"a"});
  c.Remove({"never"});
  EXPECT_EQ(c.Labels({"a"}).value(), 0);
  int children = 0;
  c.ForEach([&](const std::vector<std::string>&, const Counter&) { ++children; });
  EXPECT_EQ(children, 1);
}

// prometheus-cpp writes NaN as "Nan" and infinities as +Inf/-Inf: our parser and promtool read them.
TEST(PrometheusTest, NanAndInfinitiesReadBack) {
  Registry reg;
  auto& g = reg.AddGauge("ddp_test_value", "Value.", {"k"});
  g.Labels({"nan"}).Set(std::nan(""));
  g.Labels({"inf"}).Set(HUGE_VAL);
  g.Labels({"third"}).Set(1.0 / 3);
  const std::string text = reg.Render();
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
  EXPECT_TRUE(std::isnan(FindSample(*parsed, "ddp_test_value", {{"k", "nan"}}).value_or(0))) << text;
  EXPECT_EQ(FindSample(*parsed, "ddp_test_value", {{"k", "inf"}}), HUGE_VAL) << text;
  EXPECT_NEAR(FindSample(*parsed, "ddp_test_value", {{"k", "third"}}).value_or(0), 1.0 / 3, 1e-15);
  if (!ddp::testing::HavePromtool()) return;
  std::string out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(text, &out), 0) << out << text;
}

TEST(PrometheusTest, PromtoolAcceptsRealOutput) {
  if (!ddp::testing::HavePromtool()) GTEST_SKIP() << "promtool not installed";
  Registry reg;
  reg.AddCounter("ddp_test_requests_total", "Requests.", {"verb", "code"})
      .Labels({"GET", "200"}).Inc();
  reg.AddGauge("ddp_test_queue_depth", "Depth.").Get().Set(1);
  reg.AddHistogram("ddp_test_step_seconds", "Step time.", DefaultSecondsBuckets(), {"rank"})
      .Labels({"0"}).Observe(0.3);
  std::string out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(reg.Render(), &out), 0) << out;
  // And promtool does reject a broken page, so the check above can fail.
  EXPECT_NE(ddp::testing::PromtoolCheck("# TYPE x counter\nx{ 1\n", &out), 0);
}

}  // namespace
}  // namespace ddp::metrics
