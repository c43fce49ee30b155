// A generation's steps summed up (worker/group/steps.h): the same heal plan as reading every
// member's step, and a summary read from the store is taken only when it is well formed.
#include <gtest/gtest.h>

#include "worker/group/steps.h"

namespace ddp::worker::group {
namespace {

TEST(StepsTest, TheSummaryNamesTheLatestStepItsLowestHolderAndWhoIsBehind) {
  struct Row {
    std::vector<int64_t> steps;
    StepsSummary want;
  };
  const std::vector<Row> rows = {
      {{-1, -1, -1}, {-1, -1, 0}},   // a new round: nobody has state
      {{5, -1, -1}, {5, 0, 2}},      // a growth: two newcomers
      {{7, 7, 6, -1}, {7, 0, 2}},    // the lowest rank at the latest step is the source
      {{3, 9, 9}, {9, 1, 1}},
      {{4}, {4, 0, 0}},
  };
  for (const Row& r : rows) {
    const StepsSummary got = SummarizeSteps(r.steps);
    EXPECT_EQ(got, r.want) << FormatSteps(got);
    StepsSummary back;
    ASSERT_TRUE(ParseSteps(FormatSteps(got), &back));
    EXPECT_EQ(back, got);
  }
}

TEST(StepsTest, AMalformedSummaryIsRefused) {
  StepsSummary out;
  for (const char* bad : {"", "5 0", "5 0 2 9", "x 0 0", "5 -1 0", "-1 0 0", "-2 -1 0", "5 0 -1",
                          "5 0 2\n", " 5 0 2"}) {
    EXPECT_FALSE(ParseSteps(bad, &out)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace ddp::worker::group
