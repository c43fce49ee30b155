// Rule 1's mass silence (worker/group/authority.h): many pods silent at once past the liveness
// timeout, but fewer than half, are likelier a starved host, a saturated network or store than
// that many deaths. The authority declares one lost per liveness timeout, the longest silent
// first, and the others wait for the silence to clear; a closed connection is a loss whatever the
// count. Expected actions are written from the rule (issue 51: 16 of 64 live, slow pods fenced
// within one second).
#include <gtest/gtest.h>

#include "worker/group/authority.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

using Strings = std::vector<std::string>;

std::string Name(int n) { return "w" + std::to_string(n); }
std::string Id(int n) { return Name(n) + "/u"; }

AuthoritySettings Settings(int nodes) {
  AuthoritySettings s;
  s.nodes = nodes;
  s.liveness_seconds = 10;
  return s;
}

// `n` pods holding their node ranks of a formed group, heard from 0.5 s ago; pods 0..silent-1
// silent for 11 s, pod 0 the longest (20 s).
GroupView Group(int n, int silent) {
  GroupView v;
  v.world = n;
  v.nodes = n;
  for (int k = 0; k < n; ++k) {
    PodView p;
    p.identity = Id(k);
    p.home_node = k;
    p.silent_seconds = k >= silent ? 0.5 : k == 0 ? 20 : 11;
    v.pods[Name(k)] = p;
    v.node_holders.push_back(Id(k));
    v.ever_held.push_back(true);
  }
  v.formed = v.ever_formed = true;
  return v;
}

Strings Fenced(const Actions& a) {
  Strings out;
  for (const auto& [id, why] : a.fence) out.push_back(id);
  return out;
}

TEST(MassSilenceTest, SixteenOfSixtyFourSilentLoseOneThePodSilentLongest) {
  const Actions a = Decide(Group(64, 16), Settings(64));
  EXPECT_EQ(Fenced(a), Strings{Id(0)});
  EXPECT_EQ(a.mass_silent, 16);
  EXPECT_EQ(a.silence_lost, 1);
  // The others keep their node ranks: only node rank 0 is freed.
  ASSERT_EQ(a.assign.size(), 1u);
  EXPECT_EQ(a.assign[0], (std::pair<int, std::string>{0, ""}));
}

TEST(MassSilenceTest, TheNextOneOnlyAfterALivenessTimeout) {
  GroupView v = Group(64, 16);
  v.pods[Name(0)].verdict = kVerdictFenced;  // declared lost 2 s ago
  v.fenced = {Id(0)};
  v.node_holders[0] = "";
  v.since_silence_lost_seconds = 2;
  Actions a = Decide(v, Settings(64));
  EXPECT_TRUE(a.fence.empty());
  EXPECT_EQ(a.mass_silent, 15);
  EXPECT_EQ(a.silence_lost, 0);
  EXPECT_TRUE(a.stalls.empty());
  v.since_silence_lost_seconds = 10.5;
  a = Decide(v, Settings(64));
  EXPECT_EQ(a.silence_lost, 1);
  ASSERT_EQ(a.fence.size(), 1u);
}

// A pod whose process ended (its connection closed) is lost at once, inside a mass silence too.
TEST(MassSilenceTest, AClosedConnectionIsALossWhateverTheCount) {
  GroupView v = Group(64, 16);
  v.since_silence_lost_seconds = 2;
  v.pods[Name(40)].presence_closed = true;
  const Actions a = Decide(v, Settings(64));
  EXPECT_EQ(Fenced(a), Strings{Id(40)});
  EXPECT_EQ(a.silence_lost, 0);
}

// The silence clears: the slow pods beat again; the one that stays silent (a dead node) is lost
// at once, as any single silent pod.
TEST(MassSilenceTest, OnceTheSilenceClearsAPodStillSilentIsLostAtOnce) {
  GroupView v = Group(64, 16);
  v.since_silence_lost_seconds = 2;
  for (int k = 1; k < 16; ++k) v.pods[Name(k)].silent_seconds = 0.5;
  const Actions a = Decide(v, Settings(64));
  EXPECT_EQ(Fenced(a), Strings{Id(0)});
  EXPECT_EQ(a.mass_silent, 0);
}

// Pods go quiet a beat apart: the first past the timeout while the others are quiet for half of
// it is already a mass silence; the next tick, the one declared lost still counts.
TEST(MassSilenceTest, PodsCrossingTheTimeoutATickApartAreOneSilence) {
  GroupView v = Group(6, 0);
  v.pods[Name(1)].silent_seconds = 10.1;
  v.pods[Name(2)].silent_seconds = 9.9;
  v.pods[Name(3)].silent_seconds = 9.8;
  Actions a = Decide(v, Settings(6));
  EXPECT_EQ(Fenced(a), Strings{Id(1)});
  EXPECT_EQ(a.silence_lost, 1);
  // A tick later: pod 1 declared lost, pods 2 and 3 past the timeout; one liveness timeout must
  // pass before the next.
  v.pods[Name(1)].verdict = kVerdictFenced;
  v.fenced = {Id(1)};
  v.node_holders[1] = "";
  v.pods[Name(2)].silent_seconds = 10.1;
  v.pods[Name(3)].silent_seconds = 10.05;
  v.recent_silence_lost = 1;
  v.since_silence_lost_seconds = 0.2;
  a = Decide(v, Settings(6));
  EXPECT_TRUE(a.fence.empty());
  EXPECT_EQ(a.mass_silent, 2);
}

TEST(MassSilenceTest, FewSilentPodsAreLossesAsBefore) {
  // Two of sixty-four: below kMassSilenceMin.
  EXPECT_EQ(Fenced(Decide(Group(64, 2), Settings(64))), (Strings{Id(0), Id(1)}));
  // Three of forty: not more than an eighth.
  EXPECT_EQ(Decide(Group(40, 3), Settings(40)).fence.size(), 3u);
  // Three of eight: a mass silence.
  EXPECT_EQ(Decide(Group(8, 3), Settings(8)).fence.size(), 1u);
}

}  // namespace
}  // namespace ddp::worker::group
