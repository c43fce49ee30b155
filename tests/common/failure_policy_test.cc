// The one failure decision (common/failure_policy.h) that the operator's planner and the pods'
// supervisors share, and the termination reasons of supervised pods (common/group_contract.h).
#include <gtest/gtest.h>

#include "common/failure_policy.h"
#include "common/group_contract.h"

namespace ddp {
namespace {

using failure::RestartPolicy;
using failure::Verdict;

TEST(FailurePolicyTest, OneTableForPodsAndTrainers) {
  const failure::Rules on_failure{RestartPolicy::kOnFailure, {75}};
  const failure::Rules exit_code{RestartPolicy::kExitCode, {75, 76}};
  const failure::Rules never{RestartPolicy::kNever, {75}};
  const failure::Rules no_codes{RestartPolicy::kExitCode, {}};
  struct Row {
    failure::Rules rules;
    int code;
    Verdict want;
  };
  for (const Row& r : std::vector<Row>{
           {on_failure, 0, Verdict::kSucceeded},
           {on_failure, 1, Verdict::kRetry},
           {on_failure, 2, Verdict::kRetry},  // OnFailure means any failure, as for pods
           {on_failure, 137, Verdict::kRetry},
           {exit_code, 75, Verdict::kRetry},
           {exit_code, 76, Verdict::kRetry},
           {exit_code, 1, Verdict::kNotRetryable},
           {exit_code, 2, Verdict::kNotRetryable},
           {exit_code, 128, Verdict::kRetry},  // a signal: the program did not choose it
           {exit_code, 143, Verdict::kRetry},
           {no_codes, 75, Verdict::kNotRetryable},
           {no_codes, 137, Verdict::kRetry},
           {never, 75, Verdict::kNotRetryable},
           {never, 137, Verdict::kNotRetryable},
           {never, 0, Verdict::kSucceeded}}) {
    EXPECT_EQ(failure::Decide(r.rules, r.code), r.want)
        << failure::PolicyName(r.rules.policy) << " " << r.code;
  }
}

TEST(FailurePolicyTest, PolicyNamesAndExitCodesRoundTrip) {
  for (RestartPolicy p : {RestartPolicy::kOnFailure, RestartPolicy::kExitCode, RestartPolicy::kNever}) {
    RestartPolicy back = RestartPolicy::kNever;
    ASSERT_TRUE(failure::ParsePolicy(failure::PolicyName(p), &back));
    EXPECT_EQ(back, p);
  }
  RestartPolicy unused;
  EXPECT_FALSE(failure::ParsePolicy("onfailure", &unused));
  for (const std::vector<int>& codes : {std::vector<int>{}, {75}, {75, 76, 1}}) {
    auto back = failure::ParseExitCodes(failure::FormatExitCodes(codes), "X");
    ASSERT_TRUE(back.ok()) << failure::FormatExitCodes(codes);
    EXPECT_EQ(*back, codes);
  }
  for (const char* bad : {"", "75,", ",75", "7x", "256", "-1", "75;76"}) {
    auto got = failure::ParseExitCodes(bad, "DDP_RETRYABLE_EXIT_CODES");
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("DDP_RETRYABLE_EXIT_CODES"), std::string::npos);
  }
}

TEST(GroupContractTest, TerminationReasonsParseBackAndNothingElseDoes) {
  using group::EndReason;
  for (EndReason r : {EndReason::kBudgetSpent, EndReason::kNotRetryable,
                      EndReason::kGroupAbandoned, EndReason::kDeparted, EndReason::kStopped,
                      EndReason::kFenced, EndReason::kFinished, EndReason::kReleased}) {
    const std::string msg = group::FormatEnd(r, "rank 1 exited 137\nsecond line");
    EXPECT_EQ(msg.rfind("ddp: ", 0), 0u) << msg;
    EXPECT_EQ(group::ParseEnd(msg), r) << msg;
  }
  for (const char* other : {"", "exited 75", "ddp: Unknown: x", "ddp: Departedly: x",
                            "OOMKilled", " ddp: Departed: x"}) {
    EXPECT_FALSE(group::ParseEnd(other)) << other;
  }
  EXPECT_EQ(group::ParseEnd("ddp: Departed"), group::EndReason::kDeparted);
}

TEST(GroupContractTest, AFinishedReportParsesBackAndNothingElseIsAFinish) {
  using group::FinishedReport;
  auto back = [](const FinishedReport& r) { return group::ParseFinished(group::FormatFinished(r)); };
  ASSERT_TRUE(back({6000, 0}));
  EXPECT_EQ(back({6000, 0})->steps, 6000);
  EXPECT_EQ(back({6000, 0})->recoveries, 0);
  EXPECT_EQ(back({12, 17})->recoveries, 17);
  ASSERT_TRUE(back({400, std::nullopt}));  // under Restart: no group count
  EXPECT_EQ(back({400, std::nullopt})->steps, 400);
  EXPECT_FALSE(back({400, std::nullopt})->recoveries);
  EXPECT_EQ(group::ParseEnd(group::FormatFinished({5, 3})), group::EndReason::kFinished);
  // An earlier supervisor's message, written only once every trainer exited 0: steps unknown.
  ASSERT_TRUE(group::ParseFinished("ddp: Finished: 3 recoveries charged in the group this round"));
  EXPECT_EQ(group::ParseFinished("ddp: Finished: 3 recoveries charged")->steps, -1);
  EXPECT_EQ(group::ParseFinished("ddp: Finished: 3 recoveries charged")->recoveries, 3);
  // A count past the bound (an overflow, or a lie) is not taken; the finish stands.
  ASSERT_TRUE(group::ParseFinished("ddp: Finished: step 5 of 5; 4294967291 recoveries"));
  EXPECT_FALSE(group::ParseFinished("ddp: Finished: step 5 of 5; 4294967291 recoveries")->recoveries);
  for (const char* other :
       {"", "ddp: Finished", "ddp: Finished: ", "ddp: Finished: many recoveries",
        "ddp: Finished: -2 recoveries", "ddp: Finished: 3", "ddp: Stopped: 3 recoveries",
        "3 recoveries", "ddp: Finished: step 1184 of 6000",  // not the end: never a finish
        "ddp: Finished: step 6000 of", "ddp: Finished: step 6000 of 6000;",
        "ddp: Finished: step 6000 of 6000; x recoveries", "ddp: Finished: step -1 of -1",
        "ddp: Finished: step 99999999999999999999 of 99999999999999999999",
        "ddp: Released: the job finished", "ddp: Finished: step 6000 of 6000 and more",
        "ddp: Finished: 99999999999999999999 recoveries"}) {
    EXPECT_FALSE(group::ParseFinished(other)) << other;
  }
}

TEST(GroupContractTest, AReleasedSpareIsItsOwnReason) {
  const std::string m = group::FormatEnd(group::EndReason::kReleased, "held no rank");
  EXPECT_EQ(m, "ddp: Released: held no rank");
  EXPECT_EQ(group::ParseEnd(m), group::EndReason::kReleased);
}

}  // namespace
}  // namespace ddp
