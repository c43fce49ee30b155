// The group authority's rules (worker/group/authority.h), one row each: who is lost, who takes a
// free node rank, what a SIGTERM means, when the group is abandoned. Expected actions are
// written from the rules, not read off the program.
#include <gtest/gtest.h>

#include "worker/group/authority.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

using Strings = std::vector<std::string>;

AuthoritySettings Settings(int nodes = 2) {
  AuthoritySettings s;
  s.nodes = nodes;
  s.liveness_seconds = 10;
  s.stop_window_seconds = 3;
  s.rendezvous_seconds = 600;
  return s;
}

PodView Pod(const std::string& name, int home, double silent = 0.5) {
  PodView p;
  p.identity = name + "/u-" + name;
  p.home_node = home;
  p.silent_seconds = silent;
  return p;
}
std::string Id(const std::string& name) { return name + "/u-" + name; }

// Two workers holding their ranks, one idle spare; generation formed.
GroupView Steady() {
  GroupView v;
  v.world = 2;
  v.pods = {{"w0", Pod("w0", 0)}, {"w1", Pod("w1", 1)}, {"s0", Pod("s0", -1)}};
  v.node_holders = {Id("w0"), Id("w1")};
  v.ever_held = {true, true};
  v.formed = true;
  v.ever_formed = true;
  return v;
}

Strings Assigns(const Actions& a) {
  Strings out;
  for (const auto& [node, id] : a.assign) out.push_back(std::to_string(node) + "=" + id);
  return out;
}
Strings Verdicts(const Actions& a) {
  Strings out;
  for (const auto& [id, v] : a.verdicts) out.push_back(id + ":" + v);
  return out;
}
Strings Fenced(const Actions& a) {
  Strings out;
  for (const auto& [id, why] : a.fence) out.push_back(id);
  return out;
}

TEST(AuthorityTest, ASteadyGroupNeedsNothing) {
  EXPECT_TRUE(Decide(Steady(), Settings()).empty());
}

TEST(AuthorityTest, StartUpGivesEachWorkerItsOwnRankAndKeepsTheSpareWaiting) {
  GroupView v = Steady();
  v.node_holders = {"", ""};
  v.ever_held = {false, false};
  v.formed = false;
  v.ever_formed = false;
  v.unformed_seconds = 1;
  v.pods.erase("w0");  // pod 0 has not registered yet: its rank waits for it, not for the spare
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Assigns(a), (Strings{"1=" + Id("w1")}));
  EXPECT_FALSE(a.advance);
  // Pod 0 never comes: after the liveness timeout the spare may have its rank.
  v.unformed_seconds = 11;
  EXPECT_EQ(Assigns(Decide(v, Settings())), (Strings{"0=" + Id("s0"), "1=" + Id("w1")}));
}

TEST(AuthorityTest, APodWhoseProcessEndedIsLostAndTheSpareTakesItsRank) {
  GroupView v = Steady();
  v.pods["w0"].presence_closed = true;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), (Strings{Id("w0")}));
  EXPECT_EQ(Verdicts(a), (Strings{Id("w0") + ":" + kVerdictFenced}));
  EXPECT_EQ(Assigns(a), (Strings{"0=", "0=" + Id("s0")}));
  EXPECT_TRUE(a.advance);
}

TEST(AuthorityTest, APodSilentPastTheLivenessTimeoutIsLostNotBefore) {
  GroupView v = Steady();
  v.pods["w1"].silent_seconds = 9.9;
  EXPECT_TRUE(Decide(v, Settings()).empty());
  v.pods["w1"].silent_seconds = 10.1;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), (Strings{Id("w1")}));
  EXPECT_EQ(Assigns(a), (Strings{"1=", "1=" + Id("s0")}));
  EXPECT_TRUE(a.advance);
}

TEST(AuthorityTest, WithoutASpareTheRankWaitsForTheReplacementThenGoesBackToIt) {
  GroupView v = Steady();
  v.pods.erase("s0");
  v.pods["w1"].presence_closed = true;
  Actions a = Decide(v, Settings());
  EXPECT_EQ(Assigns(a), (Strings{"1="}));
  // The replacement registers under the same name with a new identity: it gets rank 1.
  v.node_holders = {Id("w0"), ""};
  v.fenced = {Id("w1")};
  v.pods["w1"] = Pod("w1", 1);
  v.pods["w1"].identity = "w1/u-new";
  v.formed = false;
  a = Decide(v, Settings());
  EXPECT_EQ(Assigns(a), (Strings{"1=w1/u-new"}));
  EXPECT_FALSE(a.advance);
}

TEST(AuthorityTest, AHolderReplacedUnderItsNameIsFencedAndItsRankFreed) {
  GroupView v = Steady();
  v.pods.erase("s0");
  v.pods["w1"].identity = "w1/u-new";  // re-registered before the old one was seen to go
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), (Strings{Id("w1")}));
  // With the fenced verdict: its supervisor reads its trainers' exits as the group's doing and
  // charges nothing (a fence without a verdict charged every trainer's exit).
  EXPECT_EQ(Verdicts(a), (Strings{Id("w1") + ":" + kVerdictFenced}));
  EXPECT_EQ(Assigns(a), (Strings{"1=", "1=w1/u-new"}));
  EXPECT_TRUE(a.advance);
}

// Every fence the authority makes comes with a verdict, whichever rule made it.
TEST(AuthorityTest, EveryFenceHasAVerdict) {
  std::vector<GroupView> views;
  GroupView replaced = Steady();
  replaced.pods["w1"].identity = "w1/u-new";
  views.push_back(replaced);
  GroupView ended = Steady();
  ended.pods["w0"].presence_closed = true;
  views.push_back(ended);
  GroupView silent = Steady();
  silent.pods["w1"].silent_seconds = 11;
  views.push_back(silent);
  GroupView unregistered = Steady();
  unregistered.pods.erase("w1");  // its holder no longer registered at all
  views.push_back(unregistered);
  for (const GroupView& v : views) {
    const Actions a = Decide(v, Settings());
    ASSERT_FALSE(a.fence.empty());
    for (const auto& [id, why] : a.fence) {
      bool has = false;
      for (const auto& [vid, verdict] : a.verdicts) has = has || vid == id;
      EXPECT_TRUE(has) << id << " fenced without a verdict (" << why << ")";
    }
  }
}

TEST(AuthorityTest, OneSigtermedPodDepartsAfterTheStopWindowNotBefore) {
  GroupView v = Steady();
  v.pods["w1"].leaving = true;
  v.pods["w1"].leaving_seconds = 2.9;
  EXPECT_TRUE(Decide(v, Settings()).empty());  // maybe a whole-job stop still arriving
  v.pods["w1"].leaving_seconds = 3.0;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Verdicts(a), (Strings{Id("w1") + ":" + kVerdictDepart}));
  EXPECT_EQ(Fenced(a), (Strings{Id("w1")}));
  EXPECT_EQ(Assigns(a), (Strings{"1=", "1=" + Id("s0")}));
  EXPECT_TRUE(a.advance);
  EXPECT_FALSE(a.stop);
}

TEST(AuthorityTest, EveryMemberSigtermedIsOneStopEvenWhenTheSignalsArriveApart) {
  GroupView v = Steady();
  v.pods["w0"].leaving = true;
  v.pods["w0"].leaving_seconds = 1.5;  // a second and a half before the other
  v.pods["w1"].leaving = true;
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(a.stop);
  EXPECT_EQ(Verdicts(a), (Strings{Id("w0") + ":" + kVerdictStop, Id("w1") + ":" + kVerdictStop}));
  EXPECT_FALSE(a.advance);
  EXPECT_TRUE(Assigns(a).empty());
  // Once stopping, nothing else happens: no departures, no spare taking a rank.
  v.stop = true;
  v.pods["w1"].presence_closed = true;
  const Actions after = Decide(v, Settings());
  EXPECT_FALSE(after.stop);
  EXPECT_TRUE(Verdicts(after).size() == 1 && Assigns(after) == Strings{"1="}) << Verdicts(after).size();
}

// A group still assembling at the start of a round: w1 registered and holds node rank 1, w0's
// pod has not registered yet (no pod held node rank 0 this round). w1 deleted then (a pod moved
// to another node as the job starts) is not every member's SIGTERM: it departs after the stop
// window and nothing stops (the group never formed: there is nothing to save, and a stop would
// end the round). Once every rank was held, the same SIGTERM is the whole job's stop.
TEST(AuthorityTest, ALeavingPodOfAGroupStillAssemblingDepartsAndStopsNothing) {
  GroupView v;
  v.world = 2;
  v.pods = {{"w1", Pod("w1", 1)}};
  v.pods["w1"].leaving = true;
  v.pods["w1"].leaving_seconds = 1.0;
  v.node_holders = {"", Id("w1")};
  v.ever_held = {false, true};
  Actions a = Decide(v, Settings());
  EXPECT_FALSE(a.stop);
  EXPECT_TRUE(Verdicts(a).empty());  // maybe a whole-job stop still arriving
  v.pods["w1"].leaving_seconds = 3.0;
  a = Decide(v, Settings());
  EXPECT_FALSE(a.stop);
  EXPECT_EQ(Verdicts(a), (Strings{Id("w1") + ":" + kVerdictDepart}));
  // Node rank 0's pod was lost after the group formed: w1 is every live member, and stops.
  v.ever_held = {true, true};
  v.ever_formed = true;
  v.pods["w1"].leaving_seconds = 1.0;
  a = Decide(v, Settings());
  EXPECT_TRUE(a.stop);
  EXPECT_EQ(Verdicts(a), (Strings{Id("w1") + ":" + kVerdictStop}));
  // With a new store, a rank the old store's members said was held counts as held (I4).
  v.ever_held = {false, true};
  v.previous = {{0, Id("w0")}, {1, Id("w1")}};
  v.previous_seconds = 60;  // the rejoin window is over: w0 did not come back
  a = Decide(v, Settings());
  EXPECT_TRUE(a.stop);
}

// Stopping members stay members while they write the stop's checkpoint and leave: none is
// fenced (the operator would force-delete it), no rank is freed, no generation moves.
TEST(AuthorityTest, StoppingMembersAreNeitherFencedNorFreedAsTheyLeave) {
  GroupView v = Steady();
  v.stop = true;
  v.pods["w0"].verdict = kVerdictStop;
  v.pods["w1"].verdict = kVerdictStop;
  v.pods["w1"].presence_closed = true;  // done with its checkpoint, gone
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(Fenced(a).empty());
  EXPECT_TRUE(Assigns(a).empty());
  EXPECT_FALSE(a.advance);
}

// A pod whose ranks all finished training leaves on purpose: not lost, its rank not given to a
// spare (which would start trainers into a finished group), nothing advanced.
TEST(AuthorityTest, APodWhoseRanksFinishedIsNotLostWhenItLeaves) {
  GroupView v = Steady();
  v.pods["w0"].done = true;
  v.pods["w0"].presence_closed = true;
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(Fenced(a).empty());
  EXPECT_TRUE(Assigns(a).empty());
  EXPECT_FALSE(a.advance);
  // Still training: the same end is a loss.
  v.pods["w0"].done = false;
  EXPECT_EQ(Fenced(Decide(v, Settings())), Strings{Id("w0")});
}

TEST(AuthorityTest, ALeavingSpareDepartsAtOnce) {
  GroupView v = Steady();
  v.pods["s0"].leaving = true;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Verdicts(a), (Strings{Id("s0") + ":" + kVerdictDepart}));
  EXPECT_FALSE(a.advance);
  EXPECT_FALSE(a.stop);
}

TEST(AuthorityTest, AStalledTrainerOfALivePodIsReportedOnce) {
  GroupView v = Steady();
  v.trainers.resize(2);
  v.trainers[1].identity = Id("w1") + "/0/0";
  v.trainers[1].silent_seconds = 12;
  Actions a = Decide(v, Settings());
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.stalls[0].first, 1);
  EXPECT_TRUE(a.advance);
  v.trainers[1].stall_reported = true;
  EXPECT_TRUE(Decide(v, Settings()).empty());
  // A trainer of a pod that is gone is the pod's business (rule 1), not a stall.
  v.trainers[1].stall_reported = false;
  v.pods["w1"].presence_closed = true;
  EXPECT_TRUE(Decide(v, Settings()).stalls.empty());
}

// Slow is not stalled (rule 5): trainers that go silent together are a group-wide slowdown (a
// machine or store overloaded: the first steps of a big job), and a tick that came late says
// the authority's own clocks are stale. Nobody is declared stalled, so nothing is charged per
// rank; one trainer silent alone among many still is.
TEST(AuthorityTest, TrainersSilentTogetherOrALateTickAreASlowdownNotStalls) {
  // 20 pods of one trainer each, all live.
  GroupView v;
  v.world = 20;
  v.formed = v.ever_formed = true;
  for (int n = 0; n < 20; ++n) {
    const std::string name = "w" + std::to_string(n);
    v.pods[name] = Pod(name, n);
    v.node_holders.push_back(Id(name));
    v.ever_held.push_back(true);
    TrainerView t;
    t.identity = Id(name) + "/0/0";
    t.silent_seconds = 0.5;
    v.trainers.push_back(t);
  }
  AuthoritySettings s = Settings(20);
  v.trainers[3].silent_seconds = 12;  // one alone: a stall
  Actions a = Decide(v, s);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.slowdown, 0);
  v.trainers[7].silent_seconds = 11;  // two of twenty: a tenth, together: a slowdown
  a = Decide(v, s);
  EXPECT_TRUE(a.stalls.empty());
  EXPECT_EQ(a.slowdown, 2);
  EXPECT_FALSE(a.advance);
  v.trainers[7].silent_seconds = 0.5;
  v.tick_late_seconds = 6;  // past half the liveness timeout: this tick's clocks are stale
  a = Decide(v, s);
  EXPECT_TRUE(a.stalls.empty());
  EXPECT_EQ(a.slowdown, 1);
  v.tick_late_seconds = 0.2;
  v.since_slowdown_seconds = 2;  // within a liveness timeout of a slowdown: still one
  EXPECT_TRUE(Decide(v, s).stalls.empty());
  v.since_slowdown_seconds = 11;
  EXPECT_EQ(Decide(v, s).stalls.size(), 1u);
  // Every trainer of one pod silent (its node's devices hung): that pod's stall, not the group's.
  v.trainers[3].silent_seconds = 0.5;
  for (int n = 1; n < 20; ++n) v.trainers[static_cast<size_t>(n)].identity = Id("w0") + "/" + std::to_string(n) + "/0";
  for (int n = 0; n < 20; ++n) v.trainers[static_cast<size_t>(n)].silent_seconds = n < 5 ? 12 : 0.5;
  EXPECT_EQ(Decide(v, s).stalls.size(), 5u);
}

// More than half the pods silent at once: the authority hears too few (its presence reader was
// starved, or its own node is cut off): nobody is declared lost by silence until it hears again.
// A pod whose process ended (its connection closed) is still lost at once, and a late tick waits.
TEST(AuthorityTest, MostPodsSilentAtOnceIsTheAuthorityNotThem) {
  GroupView v = Steady();
  v.pods["w0"].silent_seconds = 11;
  v.pods["w1"].silent_seconds = 11;  // two of three silent
  Actions a = Decide(v, Settings());
  EXPECT_TRUE(Fenced(a).empty());
  EXPECT_EQ(a.unheard, 2);
  v.pods["s0"].presence_closed = true;  // an ended process is no silence
  a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), (Strings{Id("s0")}));
  // One of three silent: that pod is lost, as ever.
  v = Steady();
  v.pods["w1"].silent_seconds = 11;
  EXPECT_EQ(Fenced(Decide(v, Settings())), (Strings{Id("w1")}));
  v.tick_late_seconds = 6;  // ... unless this tick came late: its clocks are stale
  EXPECT_TRUE(Fenced(Decide(v, Settings())).empty());
}

// Two ranks both silent: together, not two stalls (two charges on a machine that was slow).
TEST(AuthorityTest, BothTrainersOfAPairSilentAreASlowdown) {
  GroupView v = Steady();
  v.pods.erase("s0");
  v.trainers.resize(2);
  for (int r = 0; r < 2; ++r) {
    v.trainers[static_cast<size_t>(r)].identity = Id("w" + std::to_string(r)) + "/0/0";
    v.trainers[static_cast<size_t>(r)].silent_seconds = 12;
  }
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(a.stalls.empty());
  EXPECT_EQ(a.slowdown, 2);
}

TEST(AuthorityTest, AGroupThatCannotFormIsAbandonedOnce) {
  GroupView v = Steady();
  v.formed = false;
  v.unformed_seconds = 599;
  EXPECT_TRUE(Decide(v, Settings()).abandon.empty());
  v.unformed_seconds = 601;
  EXPECT_EQ(Decide(v, Settings()).abandon, "lost");
  v.ever_formed = false;
  EXPECT_EQ(Decide(v, Settings()).abandon, "never-formed");
  v.abandon = true;
  EXPECT_TRUE(Decide(v, Settings()).abandon.empty());
}

TEST(AuthorityTest, EveryRankDoneFinishesTheRound) {
  GroupView v = Steady();
  v.done_ranks = 2;
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(a.finished);
  v.finished = true;
  EXPECT_TRUE(Decide(v, Settings()).empty());
}

TEST(AuthorityTest, TwoPodsLostTogetherTakeTheOnlySpareAndWaitForTheOther) {
  GroupView v = Steady();
  v.pods["w0"].presence_closed = true;
  v.pods["w1"].silent_seconds = 30;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), (Strings{Id("w0"), Id("w1")}));
  EXPECT_EQ(Assigns(a), (Strings{"0=", "1=", "0=" + Id("s0")}));
}

}  // namespace
}  // namespace ddp::worker::group
