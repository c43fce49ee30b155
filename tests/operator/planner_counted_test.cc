// PlanReconcile under recovery InPlace: what the status remembers between passes so that nothing
// is counted twice and nothing is missed. status.countedPods keeps every pod counted in the
// round (not only status.lastFailure's), so a pod still Terminating passes after a later failure
// is not counted again; status.rendezvousUID names the rendezvous pod whose store's count
// status.progress.recoveries is, so a replaced rendezvous pod's heals are counted from 0.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;

// Round 2 of a 3-pod InPlace job, running; pods 1 then 2 failed and were counted (one recovery
// each), pod 2 last.
DDPJob TwoCounted() {
  DDPJob j = InPlace(InPhase(Job(3), "Running", 2, 3));
  j.status.recoveries = 2;
  j.status.last_failure = api::LastFailure{"mingpt-worker-2", 2, 137, "Error", "", At(5),
                                           "mingpt-worker-2-r2"};
  j.status.counted_pods = {"mingpt-worker-1-r2", "mingpt-worker-2-r2"};
  return j;
}

api::DDPJobStatus After(const DDPJob& job, const Observed& seen) {
  const Plan plan = PlanReconcile(job, seen, At(10));
  return plan.status ? *plan.status : job.status;
}

TEST(CountedPods, APodCountedBeforeTheLastFailureIsNotCountedAgainWhileItTerminates) {
  // Pod 1's old object is still Terminating (a long grace period) after pod 2's failure.
  const Observed seen = With(GroupWorld(3, 2, 0, "Running"), Deleting(Exited(1, 2, 137)));
  const api::DDPJobStatus st = After(TwoCounted(), seen);
  EXPECT_EQ(st.recoveries, 2);
  EXPECT_EQ(st.disruptions, 0);
  ASSERT_TRUE(st.last_failure.has_value());
  EXPECT_EQ(st.last_failure->pod_uid, "mingpt-worker-2-r2");
}

TEST(CountedPods, AFailureIsAddedOnceAndANewRoundForgetsThem) {
  DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  const api::DDPJobStatus st = After(job, With(GroupWorld(3, 2, 0, "Running"), Exited(1, 2, 137)));
  EXPECT_EQ(st.counted_pods, std::vector<std::string>{"mingpt-worker-1-r2"});
  EXPECT_EQ(st.recoveries, 1);
  // A resize under Restart semantics (no elastic) is a new round: the list starts empty.
  DDPJob scaled = Scaled(TwoCounted(), 4);
  const api::DDPJobStatus next = After(scaled, GroupWorld(3, 2, 0, "Running"));
  EXPECT_EQ(next.round, 3);
  EXPECT_TRUE(next.counted_pods.empty());
}

TEST(CountedPods, TheListIsBounded) {
  DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  for (size_t i = 0; i < api::kMaxCountedPods; ++i) {
    job.status.counted_pods.push_back("old-" + std::to_string(i));
  }
  const api::DDPJobStatus st = After(job, With(GroupWorld(3, 2, 0, "Running"), Exited(1, 2, 137)));
  ASSERT_EQ(st.counted_pods.size(), api::kMaxCountedPods);
  EXPECT_EQ(st.counted_pods.front(), "old-1");
  EXPECT_EQ(st.counted_pods.back(), "mingpt-worker-1-r2");
}

// Round 2 with the rendezvous pod's page: it reports `reported` heals, served by `uid`.
Observed Page(double reported, const std::string& uid) {
  Observed w = GroupWorld(3, 2, 0, "Running");
  w.group = Report(2, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}, {"mingpt-worker-2", 2}},
                   {}, reported);
  w.group->pod_uid = uid;
  return w;
}
// Two heals of rendezvous pod `uid`'s store already counted.
DDPJob Mirrored(const std::string& uid) {
  DDPJob j = InPlace(InPhase(Job(3), "Running", 2, 3));
  j.spec.failure_policy.max_restarts = 10;  // room for the heals counted here
  j.status.recoveries = 2;
  j.status.progress = api::Progress{};
  j.status.progress->recoveries = 2;
  j.status.rendezvous_uid = uid;
  return j;
}

TEST(RendezvousUid, TheSamePodsCountIsNotCountedAgain) {
  EXPECT_EQ(After(Mirrored("rdzv-a"), Page(2, "rdzv-a")).recoveries, 2);
  EXPECT_EQ(After(Mirrored("rdzv-a"), Page(3, "rdzv-a")).recoveries, 3);
}

TEST(RendezvousUid, AReplacedRendezvousPodsHealsCountFromZero) {
  // The new store healed two failures before any page of it was read: its count equals the old
  // one's, which without the uid reads as "nothing new".
  const api::DDPJobStatus st = After(Mirrored("rdzv-a"), Page(2, "rdzv-b"));
  EXPECT_EQ(st.recoveries, 4);
  EXPECT_EQ(st.rendezvous_uid, "rdzv-b");
  ASSERT_TRUE(st.progress.has_value());
  EXPECT_EQ(st.progress->recoveries, 2);
  // And one heal fewer than counted before is one new heal, not a new baseline that drops it.
  EXPECT_EQ(After(Mirrored("rdzv-a"), Page(1, "rdzv-b")).recoveries, 3);
}

TEST(RendezvousUid, AStatusWithoutAUidAdoptsThePagesPod) {
  const api::DDPJobStatus st = After(Mirrored(""), Page(2, "rdzv-a"));
  EXPECT_EQ(st.recoveries, 2);
  EXPECT_EQ(st.rendezvous_uid, "rdzv-a");
}

}  // namespace
}  // namespace ddp::plan::testing
