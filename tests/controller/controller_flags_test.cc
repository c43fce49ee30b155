// `ddp-operator run` flag parsing, including the error messages for bad input.
#include "operator/controller/controller_flags.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::milliseconds;

Status Parse(std::vector<std::string> args, RunFlags* f) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseRunFlags(static_cast<int>(argv.size()), argv.data(), f);
}

TEST(ParseDurationTest, Units) {
  struct Row { const char* text; int64_t ms; } rows[] = {
      {"15s", 15000}, {"500ms", 500}, {"2m", 120000}, {"1h", 3600000}, {"3", 3000}, {"1.5s", 1500}};
  for (const auto& r : rows) {
    milliseconds d{};
    EXPECT_TRUE(ParseDuration(r.text, &d)) << r.text;
    EXPECT_EQ(d.count(), r.ms) << r.text;
  }
  for (const char* bad : {"", "s", "10x", "-1s", "ten"}) {
    milliseconds d{};
    EXPECT_FALSE(ParseDuration(bad, &d)) << bad;
  }
}

TEST(ParseByteSizeTest, UnitsAndBounds) {
  struct Row { const char* text; size_t bytes; } rows[] = {
      {"4MiB", 4u << 20}, {"4Mi", 4u << 20}, {"512KiB", 512u << 10}, {"1Gi", 1u << 30},
      {"1000", 1000}, {"1000B", 1000}};
  for (const auto& r : rows) {
    size_t n = 0;
    EXPECT_TRUE(ParseByteSize(r.text, &n)) << r.text;
    EXPECT_EQ(n, r.bytes) << r.text;
  }
  for (const char* bad : {"", "0", "MiB", "4MB", "-1", "4.5MiB", "2048GiB", "99999999999999"}) {
    size_t n = 0;
    EXPECT_FALSE(ParseByteSize(bad, &n)) << bad;
  }
  RunFlags f;
  ASSERT_TRUE(Parse({"--scrape-max-bytes=8MiB", "--scrape-max-series", "1000"}, &f).ok());
  EXPECT_EQ(f.scrape_max_bytes, 8u << 20);
  EXPECT_EQ(f.scrape_max_series, 1000u);
  RunFlags d;
  EXPECT_EQ(d.scrape_max_bytes, 4u << 20);
  EXPECT_FALSE(Parse({"--scrape-max-series=0"}, &d).ok());
}

TEST(ParseRunFlagsTest, DefaultsMatchTheIssue) {
  RunFlags f;
  ASSERT_TRUE(Parse({}, &f).ok());
  EXPECT_EQ(f.workers, 4);
  EXPECT_FALSE(f.leader_elect);
  EXPECT_EQ(f.metrics_addr, ":8080");
  EXPECT_EQ(f.health_addr, ":8081");
  EXPECT_EQ(f.lease_duration, milliseconds(15000));
  EXPECT_EQ(f.renew_deadline, milliseconds(10000));
  EXPECT_EQ(f.retry_period, milliseconds(2000));
  EXPECT_EQ(f.ns, "");
  // Per token bucket (pod/Service writes; the rest), as JobSet ships: a 1,000-pod restart is
  // then bounded by the API server, not by 100 s of client-side throttling.
  EXPECT_EQ(f.qps, 500);
  EXPECT_EQ(f.burst, 500);
}

// The lost-pod margins: operator/plan/lost_nodes.h's defaults, settable, never negative.
TEST(ParseRunFlagsTest, LostPodMargins) {
  RunFlags f;
  ASSERT_TRUE(Parse({}, &f).ok());
  EXPECT_EQ(f.lost_pod_margin, milliseconds(30000));
  EXPECT_EQ(f.unfenced_lost_pod_margin, milliseconds(300000));
  ASSERT_TRUE(Parse({"--lost-pod-margin=0", "--unfenced-lost-pod-margin", "2s"}, &f).ok());
  EXPECT_EQ(f.lost_pod_margin, milliseconds(0));
  EXPECT_EQ(f.unfenced_lost_pod_margin, milliseconds(2000));
  Status bad = Parse({"--lost-pod-margin=-5s"}, &f);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--lost-pod-margin"), std::string::npos) << bad.message();
}

TEST(ParseRunFlagsTest, BothFormsAndBooleans) {
  RunFlags f;
  ASSERT_TRUE(Parse({"--namespace", "ml", "--workers=8", "--leader-elect", "--qps=100",
                     "--burst", "200", "--log-level", "debug", "--kubeconfig=/k"}, &f).ok());
  EXPECT_EQ(f.ns, "ml");
  EXPECT_EQ(f.workers, 8);
  EXPECT_TRUE(f.leader_elect);
  EXPECT_EQ(f.qps, 100);
  EXPECT_EQ(f.burst, 200);
  EXPECT_EQ(f.log_level, LogLevel::kDebug);
  EXPECT_EQ(f.kubeconfig, "/k");
  ASSERT_TRUE(Parse({"--leader-elect=false"}, &f).ok());
  EXPECT_FALSE(f.leader_elect);
}

TEST(ParseRunFlagsTest, ErrorsNameTheFlag) {
  struct Row { std::vector<std::string> args; const char* want; } rows[] = {
      {{"--workers", "0"}, "--workers: invalid value \"0\""},
      {{"--workers", "many"}, "--workers: invalid value"},
      {{"--log-level", "loud"}, "--log-level: invalid value \"loud\""},
      {{"--frobnicate"}, "unknown flag --frobnicate"},
      {{"--namespace"}, "--namespace: missing value"},
      {{"--leader-elect=maybe"}, "--leader-elect: expected true or false"},
      {{"--leader-election-renew-deadline", "20s"}, "renew-deadline must be shorter"},
      {{"--leader-election-retry-period", "10s"}, "retry-period must be shorter"},
      {{"stray"}, "unexpected argument \"stray\""},
      {{"--progress-interval", "soon"}, "--progress-interval: invalid value \"soon\""},
      {{"--progress-scrapers", "0"}, "--progress-scrapers: invalid value \"0\""},
      {{"--straggler-factor", "1"}, "--straggler-factor: invalid value \"1\""},
      {{"--straggler-factor", "fast"}, "--straggler-factor: invalid value \"fast\""},
      {{"--straggler-reads", "0"}, "--straggler-reads: invalid value \"0\""},
      {{"--gang-scheduler-name", "Volcano"}, "--gang-scheduler-name: invalid value \"Volcano\""},
      {{"--network-policy=no"}, "--network-policy: expected true or false"},
      {{"--metrics-namespace", "Monitoring"}, "--metrics-namespace: invalid value \"Monitoring\""},
      {{"--metrics-namespace", "-mon"}, "--metrics-namespace: invalid value"},
      {{"--operator-namespace", std::string(64, 'a')}, "--operator-namespace: invalid value"},
  };
  for (const auto& r : rows) {
    RunFlags f;
    Status s = Parse(r.args, &f);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << r.want;
    EXPECT_NE(s.message().find(r.want), std::string::npos) << s.message();
  }
}

TEST(ParseRunFlagsTest, ProgressReads) {
  RunFlags f;
  EXPECT_EQ(f.progress_interval, milliseconds(10000));  // DESIGN.md: at most every 10 s
  EXPECT_EQ(f.progress_scrapers, 8);
  ASSERT_TRUE(Parse({"--progress-interval=30s", "--progress-scrapers", "2"}, &f).ok());
  EXPECT_EQ(f.progress_interval, milliseconds(30000));
  EXPECT_EQ(f.progress_scrapers, 2);
  ASSERT_TRUE(Parse({"--progress-interval", "0"}, &f).ok());  // off
  EXPECT_EQ(f.progress_interval, milliseconds(0));
}

TEST(ParseRunFlagsTest, StragglerOptions) {
  RunFlags f;
  EXPECT_EQ(f.straggler_factor, 1.5);  // the same defaults as `ddp-operator local`
  EXPECT_EQ(f.straggler_reads, 3);
  ASSERT_TRUE(Parse({"--straggler-factor=2.5", "--straggler-reads", "5"}, &f).ok());
  EXPECT_EQ(f.straggler_factor, 2.5);
  EXPECT_EQ(f.straggler_reads, 5);
}

TEST(ParseRunFlagsTest, GangSchedulerName) {
  RunFlags f;
  EXPECT_EQ(f.gang.scheduler, plan::GangScheduler::kNone);  // off unless asked for
  ASSERT_TRUE(Parse({"--gang-scheduler-name=volcano"}, &f).ok());
  EXPECT_EQ(f.gang.scheduler, plan::GangScheduler::kVolcano);
  EXPECT_EQ(f.gang.scheduler_name, "volcano");
  ASSERT_TRUE(Parse({"--gang-scheduler-name", "scheduler-plugins-scheduler"}, &f).ok());
  EXPECT_EQ(f.gang.scheduler, plan::GangScheduler::kCoscheduling);
  EXPECT_EQ(f.gang.scheduler_name, "scheduler-plugins-scheduler");
  ASSERT_TRUE(Parse({"--gang-scheduler-name="}, &f).ok());
  EXPECT_EQ(f.gang.scheduler, plan::GangScheduler::kNone);
}

TEST(ParseRunFlagsTest, NetworkPolicy) {
  RunFlags f;
  EXPECT_TRUE(f.network_policy);  // on unless turned off
  EXPECT_EQ(f.operator_namespace, "");
  EXPECT_EQ(f.metrics_namespace, "");
  ASSERT_TRUE(Parse({"--network-policy=false", "--metrics-namespace", "monitoring",
                     "--operator-namespace=ddp-system"}, &f).ok());
  EXPECT_FALSE(f.network_policy);
  EXPECT_EQ(f.metrics_namespace, "monitoring");
  EXPECT_EQ(f.operator_namespace, "ddp-system");
  ASSERT_TRUE(Parse({"--network-policy"}, &f).ok());
  EXPECT_TRUE(f.network_policy);
}

}  // namespace
}  // namespace ddp::controller
