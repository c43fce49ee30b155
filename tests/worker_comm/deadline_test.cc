// PollUntil: the deadline, an early success, an abort, and the last look at the deadline.
#include "worker/comm/deadline.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(PollUntilTest, ADeadlineReachedReturnsAfterItAndNotMuchLater) {
  int calls = 0;
  const auto t0 = Clock::now();
  const PollOutcome r = PollUntil(t0 + milliseconds(60), milliseconds(5), [&] {
    ++calls;
    return false;
  });
  const double waited = Since(t0);
  EXPECT_EQ(r, PollOutcome::kDeadline);
  EXPECT_GE(waited, 0.060);
  EXPECT_LT(waited, 5.0);  // generous: a loaded machine, but not an unbounded wait
  EXPECT_GE(calls, 2);     // it polled, it did not sleep the whole time
}

TEST(PollUntilTest, AConditionMetEarlyReturnsAtOnce) {
  int calls = 0;
  const auto t0 = Clock::now();
  const PollOutcome r = PollUntil(t0 + std::chrono::seconds(60), milliseconds(1),
                                  [&] { return ++calls == 3; });
  EXPECT_EQ(r, PollOutcome::kDone);
  EXPECT_EQ(calls, 3);
  EXPECT_LT(Since(t0), 30.0);  // far from the 60 s deadline
}

TEST(PollUntilTest, AnAbortEndsTheWaitBeforeTheDeadline) {
  int done_calls = 0, abort_calls = 0;
  const auto t0 = Clock::now();
  const PollOutcome r = PollUntil(
      t0 + std::chrono::seconds(60), milliseconds(1),
      [&] {
        ++done_calls;
        return false;
      },
      [&] { return ++abort_calls == 2; });
  EXPECT_EQ(r, PollOutcome::kAborted);
  EXPECT_EQ(abort_calls, 2);
  EXPECT_EQ(done_calls, 2);  // the condition is looked at before the abort in every round
  EXPECT_LT(Since(t0), 30.0);
}

TEST(PollUntilTest, APastDeadlineStillLooksOnceAndTheConditionWins) {
  int calls = 0;
  const auto past = Clock::now() - std::chrono::seconds(1);
  EXPECT_EQ(PollUntil(past, milliseconds(10), [&] { return ++calls > 0; }, [] { return true; }),
            PollOutcome::kDone);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(PollUntil(past, milliseconds(10), [] { return false; }), PollOutcome::kDeadline);
}

TEST(SinceTest, CountsSecondsOnTheSteadyClock) {
  const auto t0 = Clock::now() - milliseconds(1500);
  const double s = Since(t0);
  EXPECT_GE(s, 1.5);
  EXPECT_LT(s, 60.0);
}

}  // namespace
}  // namespace ddp::worker
