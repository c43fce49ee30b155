// The trainer's stall record (worker/train/stall_clock.h): what it exports and returns, from
// times given in closed form.
#include <gtest/gtest.h>

#include "common/worker_progress.h"
#include "worker/train/stall_clock.h"

namespace ddp::worker {
namespace {

using Wall = StallClock::WallTime;

Wall At(double s) {
  return Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::duration<double>(s)));
}

TEST(StallClock, AFreshProcessKnowsOnlyItsFirstCommitThenASurvivorKnowsAll) {
  WorkerMetrics m(WorkerIdentity{});
  StallClock c(&m, 0);
  EXPECT_FALSE(c.Committed(11, At(1000.5)));  // resumed from step 10: no start seen
  auto page = metrics::ReadWorkerPage(m.Render());
  ASSERT_TRUE(page.ok() && page->last_stall) << m.Render();
  EXPECT_FALSE(page->last_stall->start);
  EXPECT_EQ(page->last_stall->end, 1000.5);
  EXPECT_EQ(page->last_stall->step, 10);

  EXPECT_FALSE(c.Committed(12, At(1000.6)));  // an ordinary step changes nothing
  EXPECT_FALSE(c.Committed(13, At(1000.7)));
  c.Interrupted(At(1001.0));
  c.Interrupted(At(1002.0));  // a second re-formation before a commit: the same stall
  auto stood = c.Committed(14, At(1003.2));
  ASSERT_TRUE(stood);
  EXPECT_NEAR(*stood, 1003.2 - 1000.7, 1e-6);
  page = metrics::ReadWorkerPage(m.Render());
  ASSERT_TRUE(page.ok() && page->last_stall);
  EXPECT_NEAR(*page->last_stall->start, 1000.7, 1e-6);
  EXPECT_NEAR(*page->last_stall->detected, 1001.0, 1e-6);
  EXPECT_NEAR(page->last_stall->end, 1003.2, 1e-6);
  EXPECT_EQ(page->last_stall->step, 13);
  EXPECT_FALSE(c.Committed(15, At(1003.3)));
}

}  // namespace
}  // namespace ddp::worker
