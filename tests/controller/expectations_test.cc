#include "operator/kube/expectations.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::seconds;
using Clock = Expectations::Clock;

TEST(ExpectationsTest, UnknownJobIsSatisfied) {
  Expectations e;
  EXPECT_TRUE(e.Satisfied("ml/a", Clock::time_point{}));
}

TEST(ExpectationsTest, CreatesMustAllBeObserved) {
  Expectations e(std::chrono::minutes(5));
  Clock::time_point t0{};
  e.ExpectCreate("ml/a", "a-worker-0", t0);
  e.ExpectCreate("ml/a", "a-worker-1", t0);
  Clock::duration wait{};
  EXPECT_FALSE(e.Satisfied("ml/a", t0 + seconds(1), &wait));
  EXPECT_EQ(wait, std::chrono::minutes(5) - seconds(1));
  e.CreationObserved("ml/a", "a-worker-0");
  e.CreationObserved("ml/a", "a-worker-0");  // repeated observation: harmless
  EXPECT_FALSE(e.Satisfied("ml/a", t0));
  e.CreationObserved("ml/a", "a-worker-1");
  EXPECT_TRUE(e.Satisfied("ml/a", t0));
  EXPECT_EQ(e.PendingJobs(), 0u);
}

TEST(ExpectationsTest, DeletesAreTrackedByUidAndPerJob) {
  Expectations e;
  Clock::time_point t0{};
  e.ExpectDelete("ml/a", "uid-1", t0);
  e.ExpectDelete("ml/b", "uid-2", t0);
  e.DeletionObserved("ml/a", "uid-2");  // another job's pod: not ours
  EXPECT_FALSE(e.Satisfied("ml/a", t0));
  e.DeletionObserved("ml/a", "uid-1");
  EXPECT_TRUE(e.Satisfied("ml/a", t0));
  EXPECT_FALSE(e.Satisfied("ml/b", t0));
}

TEST(ExpectationsTest, EmptyUidIsNotExpected) {
  Expectations e;
  e.ExpectDelete("ml/a", "", Clock::time_point{});
  EXPECT_TRUE(e.Satisfied("ml/a", Clock::time_point{}));
}

TEST(ExpectationsTest, ExpireAfterTimeoutFromLastAdd) {
  Expectations e(seconds(10));
  Clock::time_point t0{};
  e.ExpectCreate("ml/a", "a-worker-0", t0);
  e.ExpectCreate("ml/a", "a-worker-1", t0 + seconds(5));  // refreshes the stamp
  EXPECT_FALSE(e.Satisfied("ml/a", t0 + seconds(14)));
  EXPECT_TRUE(e.Satisfied("ml/a", t0 + seconds(15)));
}

TEST(ExpectationsTest, ForgetDropsTheJob) {
  Expectations e;
  e.ExpectCreate("ml/a", "a-worker-0", Clock::time_point{});
  e.Forget("ml/a");
  EXPECT_TRUE(e.Satisfied("ml/a", Clock::time_point{}));
}

}  // namespace
}  // namespace ddp::controller
