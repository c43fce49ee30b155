// process_* metrics: the /proc/<pid>/stat parser on hand-written lines, and the live values of
// this test process, checked by promtool.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <vector>

#include "common/exposition.h"
#include "common/process_metrics.h"
#include "tests/common/promtool.h"

namespace ddp::metrics {
namespace {

// proc(5) fields 1..24 with utime 250, stime 150, starttime 5000, vsize 8388608 and rss 300
// pages; the command name holds ") (" to check the split after the last ')'.
const char kStat[] =
    "4242 (ddp) (op) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 5000 8388608 300 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

TEST(ParseProcStat, ReadsCpuMemoryAndStartTime) {
  std::optional<ProcStat> s = ParseProcStat(kStat, /*clock_ticks=*/100, /*page_bytes=*/4096);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);         // (250 + 150) / 100
  EXPECT_DOUBLE_EQ(s->start_after_boot, 50.0);   // 5000 / 100
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 8388608.0);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 1228800.0);  // 300 * 4096
}

TEST(ParseProcStat, RejectsMalformedLines) {
  EXPECT_FALSE(ParseProcStat("", 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat("4242 ddp S 1 2 3", 100, 4096).has_value());       // no ')'
  EXPECT_FALSE(ParseProcStat("4242 (ddp) S 1 2 3 4", 100, 4096).has_value());   // too short
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " x50 ");
  EXPECT_FALSE(ParseProcStat(bad, 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat(kStat, 0, 4096).has_value());
}

TEST(ProcessMetrics, ReportsThisProcessAndPassesPromtool) {
  Registry reg;
  ProcessMetrics process(&reg);
  // Burn 50 ms of this process's CPU (not of wall time: on a loaded machine 50 ms of wall time
  // can be less than the kernel's 10 ms tick of CPU, and the counter would read 0).
  volatile double x = 0;
  const std::clock_t cpu0 = std::clock();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::clock() - cpu0 < CLOCKS_PER_SEC / 20 && std::chrono::steady_clock::now() < give_up) {
    x = x + std::sqrt(x + 1.0);
  }
  process.Update();
  const std::string text = reg.Render();
  auto families = ParseExposition(text);
  ASSERT_TRUE(families.ok()) << families.status().ToString();
  EXPECT_GT(FindSample(*families, "process_cpu_seconds_total").value_or(0), 0.0);
  EXPECT_GT(FindSample(*families, "process_resident_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GT(FindSample(*families, "process_virtual_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GE(FindSample(*families, "process_open_fds").value_or(0), 3.0);  // stdin, stdout, stderr
  EXPECT_GE(FindSample(*families, "process_max_fds").value_or(0),
            FindSample(*families, "process_open_fds").value_or(0));
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  const double start = FindSample(*families, "process_start_time_seconds").value_or(0);
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 24 * 3600) << "this test started less than a day ago";

  // The CPU counter never goes down across updates.
  const double before = FindSample(*families, "process_cpu_seconds_total").value_or(0);
  process.Update();
  auto again = ParseExposition(reg.Render());
  ASSERT_TRUE(again.ok());
  EXPECT_GE(FindSample(*again, "process_cpu_seconds_total").value_or(0), before);

  if (!ddp::testing::HavePromtool()) GTEST_SKIP() << "promtool not installed";
  std::string out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(text, &out), 0) << out << text;
}

}  // namespace
}  // namespace ddp::metrics
