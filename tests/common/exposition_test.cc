#include "common/exposition.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/prometheus.h"
#include "tests/common/promtool.h"

namespace ddp::metrics {
namespace {

TEST(ExpositionTest, ParsesFamiliesSamplesAndLabels) {
  const std::string text =
      "# HELP ddp_worker_loss Training loss.\n"
      "# TYPE ddp_worker_loss gauge\n"
      "ddp_worker_loss{rank=\"0\"} 2.25\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 2\n"
      "h_bucket{le=\"+Inf\"} 3\n"
      "h_sum 4 1700000000000\n"
      "h_count 3\n"
      "loose 7\n";
  auto fams = ParseExposition(text);
  ASSERT_TRUE(fams.ok()) << fams.status().ToString();
  ASSERT_EQ(fams->size(), 3u);
  EXPECT_EQ((*fams)[0].help, "Training loss.");
  EXPECT_EQ((*fams)[1].name, "h");
  EXPECT_EQ((*fams)[1].samples.size(), 4u);
  EXPECT_EQ((*fams)[2].type, "untyped");
  EXPECT_EQ(FindSample(*fams, "ddp_worker_loss", {{"rank", "0"}}), 2.25);
  EXPECT_EQ(FindSample(*fams, "ddp_worker_loss", {{"rank", "1"}}), std::nullopt);
  EXPECT_TRUE(std::isinf(*FindSample(*fams, "h_bucket", {{"le", "+Inf"}})) == false);
  EXPECT_EQ(FindSample(*fams, "h_sum"), 4);
}

TEST(ExpositionTest, RejectsMalformedLinesNamingTheLine) {
  auto fams = ParseExposition("ok 1\nbad{le=\"1\" 2\n");
  ASSERT_FALSE(fams.ok());
  EXPECT_NE(fams.status().message().find("line 2"), std::string::npos);
  EXPECT_FALSE(ParseExposition("x one\n").ok());
}

TEST(ExpositionTest, MergeAddsLabelsAndKeepsFamiliesContiguous) {
  Registry a, b;
  for (Registry* r : {&a, &b}) {
    r->AddCounter("ddp_worker_steps_total", "Steps.").Get().Inc(r == &a ? 10 : 11);
    r->AddHistogram("ddp_worker_step_seconds", "Step time.", {0.5}).Get().Observe(0.1);
  }
  std::vector<std::string> errors;
  const std::string merged = MergeExpositions(
      {{{{"rank", "0"}, {"local_rank", "0"}}, a.Render()},
       {{{"rank", "1"}, {"local_rank", "1"}}, b.Render()},
       {{{"rank", "2"}}, "garbage{\n"}},
      &errors);
  ASSERT_EQ(errors.size(), 1u);
  auto fams = ParseExposition(merged);
  ASSERT_TRUE(fams.ok()) << merged;
  ASSERT_EQ(fams->size(), 2u) << merged;  // one family each, both sources inside
  EXPECT_EQ(FindSample(*fams, "ddp_worker_steps_total", {{"rank", "1"}, {"local_rank", "1"}}), 11);
  EXPECT_EQ(FindSample(*fams, "ddp_worker_step_seconds_count", {{"rank", "0"}}), 1);
  if (ddp::testing::HavePromtool()) {
    std::string out;
    EXPECT_EQ(ddp::testing::PromtoolCheck(merged, &out), 0) << out << merged;
  }
}

}  // namespace
}  // namespace ddp::metrics
