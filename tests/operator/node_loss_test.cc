// A lost node costs seconds (operator/plan/suspect_nodes.h, silent_rendezvous.h): the affinity
// that keeps new pods off suspect nodes, when a node becomes suspect and when it stops being one,
// pods bound to a lost node that never started, and the rendezvous pod whose page went silent.
// Expected values follow from the rules and the fixture's times, never from the program's output.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>

#include "operator/api/serialize.h"
#include "operator/plan/plan.h"
#include "operator/plan/silent_rendezvous.h"
#include "operator/plan/suspect_nodes.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using Strings = std::vector<std::string>;

const PlanOptions kOptions{seconds(30), seconds(300), seconds(60)};

ObservedPod On(ObservedPod p, const std::string& node, bool lost = false) {
  p.node_name = node;
  p.node_lost = lost;
  return p;
}

// On a node lost since At(since), by the operator's clock (ObservedPod::node_lost_since).
ObservedPod LostSince(ObservedPod p, int since) {
  p.node_lost = true;
  p.node_lost_since = At(since);
  return p;
}

json NotIn(Strings nodes) {
  return {{"key", "kubernetes.io/hostname"}, {"operator", "NotIn"}, {"values", nodes}};
}

const json* Required(const json& pod) {
  const json& r = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  return r.is_object() ? &r : nullptr;
}

// ---- AvoidNodes: merged into the template's affinity, never clobbering it.

TEST(AvoidNodes, APodWithoutAffinityGetsOneTerm) {
  json pod = {{"spec", {{"containers", json::array()}}}};
  AvoidNodes({"n3", "n4"}, &pod);
  ASSERT_NE(Required(pod), nullptr) << pod.dump();
  EXPECT_EQ((*Required(pod))["nodeSelectorTerms"],
            json::array({{{"matchExpressions", json::array({NotIn({"n3", "n4"})})}}}));
}

TEST(AvoidNodes, EveryTermOfTheTemplateGetsTheExpressionAndKeepsItsOwn) {
  const json zone = {{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}};
  const json gpu = {{"key", "gpu"}, {"operator", "Exists"}};
  const json fields = {{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", {"x"}}};
  const json preferred = json::array({{{"weight", 1}, {"preference", {{"matchExpressions", {zone}}}}}});
  const json pod_anti = {{"preferredDuringSchedulingIgnoredDuringExecution", json::array()}};
  json pod = {{"spec",
               {{"affinity",
                 {{"nodeAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                     {{"nodeSelectorTerms",
                       json::array({{{"matchExpressions", {zone}}},
                                    {{"matchExpressions", {gpu}}, {"matchFields", {fields}}}})}}},
                    {"preferredDuringSchedulingIgnoredDuringExecution", preferred}}},
                  {"podAntiAffinity", pod_anti}}}}}};
  AvoidNodes({"n3"}, &pod);
  const json& terms = (*Required(pod))["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0]["matchExpressions"], json::array({zone, NotIn({"n3"})}));
  EXPECT_EQ(terms[1]["matchExpressions"], json::array({gpu, NotIn({"n3"})}));
  EXPECT_EQ(terms[1]["matchFields"], json::array({fields}));
  EXPECT_EQ(pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            preferred);
  EXPECT_EQ(pod["spec"]["affinity"]["podAntiAffinity"], pod_anti);
}

TEST(AvoidNodes, NothingToAvoidOrAMalformedAffinityLeavesThePodAsItIs) {
  for (const json& pod0 : {json{{"spec", {{"affinity", "junk"}}}},
                           json{{"spec", {{"affinity", {{"nodeAffinity", 3}}}}}},
                           json{{"spec",
                                 {{"affinity",
                                   {{"nodeAffinity",
                                     {{"requiredDuringSchedulingIgnoredDuringExecution",
                                       {{"nodeSelectorTerms", json::array({"x"})}}}}}}}}}}}) {
    json pod = pod0;
    AvoidNodes({"n3"}, &pod);
    EXPECT_EQ(pod, pod0);
  }
  json pod = {{"spec", json::object()}};
  AvoidNodes({}, &pod);
  EXPECT_EQ(pod, (json{{"spec", json::object()}}));
}

TEST(AvoidNodes, AnEmptyTermStaysEmptyInsteadOfMatchingEveryOtherNode) {
  // Kubernetes: a term without expressions or fields matches no node. Only the other terms, the
  // ones that can place the pod, get the expression.
  const json zone = {{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}};
  for (const json& empty : {json::object(), json{{"matchExpressions", json::array()}},
                            json{{"matchExpressions", nullptr}, {"matchFields", json::array()}}}) {
    json pod = {{"spec",
                 {{"affinity",
                   {{"nodeAffinity",
                     {{"requiredDuringSchedulingIgnoredDuringExecution",
                       {{"nodeSelectorTerms", json::array({empty, {{"matchExpressions", {zone}}}})}}}}}}}}}};
    AvoidNodes({"n3"}, &pod);
    const json& terms = (*Required(pod))["nodeSelectorTerms"];
    ASSERT_EQ(terms.size(), 2u) << pod.dump();
    EXPECT_EQ(terms[0], empty) << pod.dump();
    EXPECT_EQ(terms[1]["matchExpressions"], json::array({zone, NotIn({"n3"})}));
  }
}

TEST(AvoidNodes, AMalformedLaterTermLeavesTheEarlierOnesUntouched) {
  const json zone = {{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}};
  for (const json& bad : {json("x"), json{{"matchExpressions", "zone=a"}},
                          json{{"matchFields", 7}}}) {
    // The first term lacks matchExpressions (only fields): the old code gave it an empty list
    // before it met the malformed second term.
    const json fields = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}};
    const json pod0 = {{"spec",
                        {{"affinity",
                          {{"nodeAffinity",
                            {{"requiredDuringSchedulingIgnoredDuringExecution",
                              {{"nodeSelectorTerms",
                                json::array({{{"matchFields", {fields}}},
                                             {{"matchExpressions", {zone}}}, bad})}}}}}}}}}};
    json pod = pod0;
    AvoidNodes({"n3"}, &pod);
    EXPECT_EQ(pod, pod0) << bad.dump();
  }
}

// ---- status.suspectNodes on the wire: hostile entries are dropped, the list is bounded.

TEST(SuspectNodesStatus, RoundTripsAndDropsWhatIsNotAnEntry) {
  api::DDPJobStatus st;
  st.suspect_nodes = {{"n3", At(10)}, {"n4", At(20)}};
  auto back = api::ParseStatusJson(api::StatusToJson(st));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->suspect_nodes, st.suspect_nodes);
  json bad = {{"suspectNodes", json::array({1, json{{"name", 3}, {"since", "2026-01-01T00:00:00Z"}},
                                            json{{"name", "n5"}, {"since", "yesterday"}},
                                            json{{"name", ""}, {"since", "2026-01-01T00:00:00Z"}},
                                            json{{"name", "n6"}, {"since", "2026-01-01T00:00:10Z"}}})}};
  auto parsed = api::ParseStatusJson(bad);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->suspect_nodes, (std::vector<api::SuspectNode>{{"n6", At(10)}}));
  json many = {{"suspectNodes", json::array()}};
  for (int i = 0; i < 40; ++i) {
    many["suspectNodes"].push_back({{"name", "n" + std::to_string(i)}, {"since", "2026-01-01T00:00:00Z"}});
  }
  auto bounded = api::ParseStatusJson(many);
  ASSERT_TRUE(bounded.ok());
  ASSERT_EQ(bounded->suspect_nodes.size(), api::kMaxSuspectNodes);
  EXPECT_EQ(bounded->suspect_nodes.back().name, "n39");  // the newest are kept
}

// ---- A fenced pod's node: suspect, and its replacement is kept off it.

TEST(SuspectNodes, AFencedPodsReplacementIsKeptOffItsNodeEvenThoughTheNodeLooksReady) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[0] = On(world.pods[0], "n0");
  world.pods[1] = On(world.pods[1], "n3");  // frozen, still Ready to Kubernetes
  world.pods[1].fenced = true;
  world.nodes["n3"] = NodeHealth{false, "", At(-5)};
  const Plan replace = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(replace.ToString());
  ASSERT_TRUE(replace.status.has_value());
  EXPECT_EQ(replace.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(10)}}));
  const Strings reasons = EventReasons(replace);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), internal::kReasonNodeSuspect), reasons.end());
  ASSERT_TRUE(replace.requeue_after.has_value());  // it may prove itself at At(10 + 60)
  EXPECT_LE(*replace.requeue_after, std::chrono::milliseconds(60000));
  Apply(replace, &job, &world, At(10));
  const Plan recreate = PlanReconcile(job, world, At(11), kOptions);
  ASSERT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-worker-1 r0"}));
  ASSERT_NE(Required(recreate.creates[0]), nullptr) << recreate.creates[0].dump();
  EXPECT_EQ((*Required(recreate.creates[0]))["nodeSelectorTerms"],
            json::array({{{"matchExpressions", json::array({NotIn({"n3"})})}}}));
}

// ---- When a suspect node stops being one (rule 2), one row each.

struct ProofRow {
  std::string name;
  std::optional<NodeHealth> node;  // nullopt: the operator does not know it
  int now;
  bool still_suspect;
};

std::vector<ProofRow> ProofRows() {
  // The loss was seen at At(100); the proof window is 60 s.
  return {
      {"unknown_node_stays", std::nullopt, 500, true},
      {"ready_heartbeat_older_than_the_loss_stays", NodeHealth{false, "", At(90)}, 130, true},
      {"ready_heartbeat_newer_than_the_loss_goes", NodeHealth{false, "", At(101)}, 102, false},
      {"ready_without_heartbeat_inside_the_window_stays", NodeHealth{false, ""}, 159, true},
      {"still_ready_past_the_window_goes", NodeHealth{false, ""}, 160, false},
      {"lost_past_the_window_stays", NodeHealth{true, "Ready=Unknown"}, 900, true},
      {"lost_with_a_newer_heartbeat_stays", NodeHealth{true, "tainted x", At(200)}, 900, true},
  };
}

class ProofTable : public ::testing::TestWithParam<ProofRow> {};

TEST_P(ProofTable, Decides) {
  const ProofRow& row = GetParam();
  api::DDPJob job = InPhase(Job(1), "Running", 0, 1);
  job.status.suspect_nodes = {{"n3", At(100)}};
  Observed world = World(Pods(1, 0, "Running"));
  if (row.node) world.nodes["n3"] = *row.node;
  const Plan plan = PlanReconcile(job, world, At(row.now), kOptions);
  const auto& st = plan.status ? *plan.status : job.status;
  EXPECT_EQ(st.suspect_nodes.size(), row.still_suspect ? 1u : 0u) << plan.ToString();
  if (!row.still_suspect) {
    EXPECT_EQ(EventReasons(plan), Strings{internal::kReasonNodeSuspect});
  }
}

INSTANTIATE_TEST_SUITE_P(SuspectNodes, ProofTable, ::testing::ValuesIn(ProofRows()),
                         [](const auto& info) { return info.param.name; });

// ---- Rule 3: a pod bound to a lost or suspect node that never started goes at once.

TEST(SuspectNodes, APendingPodOnASuspectNodeIsMovedAtOnceNotCounted) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Restarting", 0, 2));
  job.status.suspect_nodes = {{"n3", At(5)}};
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[1] = On(Pod(1, 0, "Pending"), "n3");  // the replacement, bound before we knew
  world.pods[0] = On(world.pods[0], "n3");         // running there: not ours to move
  const Plan plan = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(plan.ToString());
  EXPECT_EQ(DescribeDeletes(plan), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  EXPECT_EQ(EventReasons(plan), Strings{internal::kReasonPodOffLostNode});
  const auto& st = plan.status ? *plan.status : job.status;
  EXPECT_EQ(st.disruptions, 0);
  EXPECT_EQ(st.restarts, 0);
  Apply(plan, &job, &world, At(10));
  const Plan recreate = PlanReconcile(job, world, At(11), kOptions);
  ASSERT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-worker-1 r0"}));
  EXPECT_NE(Required(recreate.creates[0]), nullptr);
}

TEST(SuspectNodes, APendingPodOnALostNodeMakesItSuspectAndIsMoved) {
  api::DDPJob job = InPhase(Job(2), "Pending", 0, 2);
  Observed world = World({Pod(0, 0, "Running"), On(Pod(1, 0, "Pending"), "n3", true)});
  const Plan plan = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(plan.ToString());
  EXPECT_EQ(DescribeDeletes(plan), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(10)}}));
}

TEST(SuspectNodes, APendingPodOnANodeLostForLessThanTheMarginStays) {
  api::DDPJob job = InPhase(Job(2), "Pending", 0, 2);
  Observed world = World({Pod(0, 0, "Running"), LostSince(On(Pod(1, 0, "Pending"), "n3"), 8)});
  const Plan flap = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(flap.ToString());
  EXPECT_TRUE(flap.deletes.empty());
  EXPECT_TRUE(!flap.status || flap.status->suspect_nodes.empty());
  ASSERT_TRUE(flap.requeue_after.has_value());
  EXPECT_EQ(*flap.requeue_after, std::chrono::milliseconds(8000));  // lost at 8 + 10 s
  const Plan lost = PlanReconcile(job, world, At(18), kOptions);
  EXPECT_EQ(DescribeDeletes(lost), (Strings{"Pod mingpt-worker-1 (grace 0s)"})) << lost.ToString();
}

// ---- The rendezvous pod whose page went silent (silent_rendezvous.h).

struct SilentRow {
  std::string name;
  std::optional<RendezvousReads> reads;
  bool node_lost;
  int now;
  bool deleted;
  std::optional<int> requeue_at;  // seconds
  std::optional<int> lost_since;  // with node_lost: since when (none: not timed, long ago)
};

std::vector<SilentRow> SilentRows() {
  const std::string uid = "mingpt-rendezvous-r0";
  // livenessTimeoutSeconds 10; the last answer at At(100).
  return {
      {"answering", RendezvousReads{uid, At(100), false}, false, 130, false, std::nullopt},
      {"failing_inside_the_timeout_waits", RendezvousReads{uid, At(100), true}, false, 104, false, 110},
      {"failing_for_the_timeout_is_replaced", RendezvousReads{uid, At(100), true}, false, 110, true,
       std::nullopt},
      {"another_pods_reads_decide_nothing", RendezvousReads{"old-uid", At(100), true}, false, 200,
       false, std::nullopt},
      {"never_answered_decides_nothing", RendezvousReads{uid, TimePoint{}, true}, false, 200, false,
       std::nullopt},
      {"no_reads_decide_nothing", std::nullopt, false, 200, false, std::nullopt},
      {"on_a_lost_node_is_replaced_at_once", std::nullopt, true, 100, true, std::nullopt},
      // The margin (10 s): a node called lost for a moment replaces nothing (M2).
      {"flap_notready_for_seconds_replaces_nothing", RendezvousReads{uid, At(102), false}, true,
       103, false, 108, 98},
      {"flap_with_a_failing_page_waits_for_the_timeout", RendezvousReads{uid, At(100), true}, true,
       104, false, 110, 101},
      {"lost_past_the_margin_and_failing_is_replaced_before_the_timeout",
       RendezvousReads{uid, At(100), true}, true, 104, true, std::nullopt, 90},
      {"lost_past_the_margin_never_read_is_replaced", std::nullopt, true, 120, true, std::nullopt,
       100},
      {"lost_past_the_margin_but_answering_is_alive", RendezvousReads{uid, At(129), false}, true,
       130, false, std::nullopt, 50},
  };
}

class SilentTable : public ::testing::TestWithParam<SilentRow> {};

TEST_P(SilentTable, Decides) {
  const SilentRow& row = GetParam();
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[2] = On(world.pods[2], "n3", row.node_lost);
  if (row.lost_since) world.pods[2] = LostSince(world.pods[2], *row.lost_since);
  world.rendezvous_reads = row.reads;
  const Plan plan = PlanReconcile(job, world, At(row.now), kOptions);
  SCOPED_TRACE(plan.ToString());
  const Strings deletes = DescribeDeletes(plan);
  EXPECT_EQ(deletes, row.deleted ? Strings{"Pod mingpt-rendezvous (grace 0s)"} : Strings{});
  if (row.deleted) {
    ASSERT_TRUE(plan.status.has_value());
    EXPECT_EQ(plan.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(row.now)}}));
    const Strings reasons = EventReasons(plan);
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), internal::kReasonRendezvousSilent),
              reasons.end());
    EXPECT_EQ(plan.status->restarts + plan.status->disruptions + plan.status->recoveries, 0);
  }
  if (row.requeue_at) {
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(*plan.requeue_after, std::chrono::milliseconds((*row.requeue_at - row.now) * 1000));
  }
  if (!row.deleted) {  // nothing moved or counted; a flap makes no node suspect either
    const auto& st = plan.status ? *plan.status : job.status;
    const bool lost_for_the_margin =
        row.node_lost && (!row.lost_since || row.now >= *row.lost_since + 10);
    EXPECT_EQ(st.suspect_nodes.empty(), !lost_for_the_margin);
    EXPECT_TRUE(plan.creates.empty());
    EXPECT_EQ(st.restarts + st.disruptions + st.recoveries, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(SilentRendezvous, SilentTable, ::testing::ValuesIn(SilentRows()),
                         [](const auto& info) { return info.param.name; });

// The silent rendezvous pod's replacement comes back once it is gone, kept off its node; the
// force delete is planned once (a second pass sees it going with grace 0).
TEST(SilentRendezvous, ItsReplacementIsCreatedOffTheSilentNode) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[2] = On(world.pods[2], "n3");
  world.rendezvous_reads = RendezvousReads{"mingpt-rendezvous-r0", At(100), true};
  const Plan replace = PlanReconcile(job, world, At(111), kOptions);
  ASSERT_EQ(DescribeDeletes(replace), (Strings{"Pod mingpt-rendezvous (grace 0s)"}));
  Apply(replace, &job, &world, At(111));
  world.rendezvous_reads.reset();  // the controller tracks no gone pod
  const Plan recreate = PlanReconcile(job, world, At(112), kOptions);
  SCOPED_TRACE(recreate.ToString());
  ASSERT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-rendezvous r0"}));
  ASSERT_NE(Required(recreate.creates[0]), nullptr);
  EXPECT_EQ((*Required(recreate.creates[0]))["nodeSelectorTerms"],
            json::array({{{"matchExpressions", json::array({NotIn({"n3"})})}}}));
  EXPECT_EQ(job.status.restarts + job.status.disruptions + job.status.recoveries, 0);
}

// ---- Rule 3: a worker pod silent with the rendezvous pod of its node (one lost node holding
// both) is replaced with it, not after the new store's rejoin window; but only on evidence from
// two sides (M2): Kubernetes calls the node lost, for the margin, and the pod said nothing to at
// least two probes. The operator's failure to reach the node alone (a partition between the
// operator and a live node) replaces the store and no member.

struct MateRow {
  std::string name;
  std::string worker_node;               // worker 1's node; the rendezvous pod is on n3
  std::optional<RendezvousReads::Probes> probes;  // worker 1's probes; none: never probed
  std::optional<int> lost_since;         // n3 lost since then (seconds); none: Ready
  int now;                               // the page answered last at 100, livenessTimeout 10 s
  bool store_replaced;                   // the rendezvous pod force-deleted
  bool replaced;                         // worker 1 force-deleted with the rendezvous pod
};

std::vector<MateRow> MateRows() {
  using P = RendezvousReads::Probes;
  // The node-lost margin is 10 s: lost since 90 counts at 100, since 105 only at 115.
  return {
      {"silent_on_a_lost_node_is_replaced_with_it", "n3", P{2, false}, 90, 110, true, true},
      {"before_the_timeout_too_once_the_node_is_lost", "n3", P{2, false}, 90, 104, true, true},
      {"one_unanswered_probe_is_not_enough", "n3", P{1, false}, 90, 110, true, false},
      {"partition_node_ready_replaces_only_the_store", "n3", P{5, false}, std::nullopt, 110, true,
       false},
      {"node_lost_inside_the_margin_replaces_only_the_store", "n3", P{3, false}, 105, 110, true,
       false},
      {"answering_is_left_alone", "n3", P{2, true}, 90, 110, true, false},
      {"never_probed_decides_nothing", "n3", std::nullopt, 90, 110, true, false},
      {"probed_zero_times_decides_nothing", "n3", P{0, false}, 90, 110, true, false},
      {"on_another_node_is_left_alone", "n2", P{2, false}, 90, 110, true, false},
      {"inside_the_timeout_on_a_ready_node_waits_with_the_store", "n3", P{2, false}, std::nullopt,
       105, false, false},
  };
}

class MateTable : public ::testing::TestWithParam<MateRow> {};

// Worker 0 on n1, worker 1 on `worker_node`, the rendezvous pod on n3, its page silent since 100.
Observed StoreNodeWorld(const std::string& worker_node, std::optional<int> n3_lost_since = 90) {
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[0] = On(world.pods[0], "n1");
  world.pods[1] = On(world.pods[1], worker_node);
  world.pods[2] = On(world.pods[2], "n3");
  for (ObservedPod& pod : world.pods) {
    if (pod.node_name == "n3" && n3_lost_since) pod = LostSince(pod, *n3_lost_since);
  }
  world.rendezvous_reads = RendezvousReads{"mingpt-rendezvous-r0", At(100), true};
  return world;
}

TEST_P(MateTable, Decides) {
  const MateRow& row = GetParam();
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = StoreNodeWorld(row.worker_node, row.lost_since);
  if (row.probes) world.rendezvous_reads->node_mates["mingpt-worker-1-r0"] = *row.probes;
  const Plan plan = PlanReconcile(job, world, At(row.now), kOptions);
  SCOPED_TRACE(plan.ToString());
  Strings want;
  if (row.store_replaced) want.push_back("Pod mingpt-rendezvous (grace 0s)");
  if (row.replaced) want.push_back("Pod mingpt-worker-1 (grace 0s)");
  Strings deletes = DescribeDeletes(plan);
  std::sort(deletes.begin(), deletes.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(deletes, want);
  const auto& st = plan.status ? *plan.status : job.status;
  if (!row.replaced) {
    EXPECT_EQ(st.disruptions, 0);  // a member kept is a member not counted
    return;
  }
  ASSERT_TRUE(plan.status.has_value());
  // One disruption, not charged against maxRestarts, and no new round: the survivor heals it.
  EXPECT_EQ(plan.status->disruptions, 1);
  EXPECT_EQ(plan.status->restarts, 0);
  EXPECT_EQ(plan.status->round, 0);
  EXPECT_EQ(plan.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(row.now)}}));
}

INSTANTIATE_TEST_SUITE_P(SilentRendezvous, MateTable, ::testing::ValuesIn(MateRows()),
                         [](const auto& info) { return info.param.name; });

// A partition between the operator and a live node n3 that holds the store and worker 1: the
// operator's page reads and probes fail while the group's presence beats flow between the pods.
// The store is replaced (rule 1: a new registration), the member is not: it registers with the
// new store and trains on. Nothing touches it until its group says so (the new store's report
// fences it) or Kubernetes calls n3 lost past the margin.
TEST(SilentRendezvous, APartitionFromALiveNodeReplacesNoMemberUntilTheGroupSaysSo) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = StoreNodeWorld("n3", std::nullopt);  // n3 Ready: its kubelet reaches the API
  world.rendezvous_reads->node_mates["mingpt-worker-1-r0"] = {5, false};
  const Plan at_timeout = PlanReconcile(job, world, At(110), kOptions);
  ASSERT_EQ(DescribeDeletes(at_timeout), (Strings{"Pod mingpt-rendezvous (grace 0s)"}))
      << at_timeout.ToString();
  Apply(at_timeout, &job, &world, At(110));
  world.rendezvous_reads.reset();  // the controller tracks no gone pod
  const Plan recreate = PlanReconcile(job, world, At(111), kOptions);
  ASSERT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-rendezvous r0"})) << recreate.ToString();
  Apply(recreate, &job, &world, At(111));
  // The new store runs on n2 and answers; worker 1 registered with it again: not fenced.
  ObservedPod store = On(Rendezvous(0, "Running"), "n2");
  store.uid = "mingpt-rendezvous-r0-again";
  world = With(world, store);
  const std::string rdzv_uid = store.uid;
  world.rendezvous_reads = RendezvousReads{rdzv_uid, At(114), false};
  world.group = Report(0, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}});
  world.group->pod_uid = rdzv_uid;
  for (int now : {115, 200, 400}) {
    const Plan plan = PlanReconcile(job, world, At(now), kOptions);
    EXPECT_TRUE(DescribeDeletes(plan).empty()) << now << ": " << plan.ToString();
    Apply(plan, &job, &world, At(now));
  }
  EXPECT_EQ(job.status.disruptions + job.status.restarts + job.status.recoveries, 0);
  // The group's word: the new store fenced worker 1 (it did not register). Replaced at once.
  world.group = Report(0, {{"mingpt-worker-0", 0}}, {}, 0,
                       {{"mingpt-worker-1", "mingpt-worker-1-r0"}});
  world.group->pod_uid = rdzv_uid;
  const Plan fenced = PlanReconcile(job, world, At(401), kOptions);
  EXPECT_EQ(DescribeDeletes(fenced), (Strings{"Pod mingpt-worker-1 (grace 0s)"})) << fenced.ToString();
  ASSERT_TRUE(fenced.status.has_value());
  EXPECT_EQ(fenced.status->disruptions, 1);
  EXPECT_EQ(fenced.status->round, 0);
}

// A PLEG (or container runtime) flap: the store's node n3 is NotReady for 4 s while every pod on
// it runs on and answers. Nothing is replaced, moved or made suspect, during or after it; a pod
// bound there still Pending stays too.
TEST(SilentRendezvous, APlegFlapOfTheStoresNodeReplacesNothing) {
  api::DDPJob job = InPlace(InPhase(Job(3), "Running", 0, 3));
  Observed world = GroupWorld(3, 0, 0, "Running");
  world = With(world, On(Pod(2, 0, "Pending"), "n3"));  // just bound: its image still pulls
  world.pods[0] = On(world.pods[0], "n1");
  world.pods[1] = On(world.pods[1], "n3");
  for (ObservedPod& pod : world.pods) {
    if (pod.role == group::kRoleRendezvous) pod = On(pod, "n3");
  }
  const std::string rdzv_uid = "mingpt-rendezvous-r0";
  world.rendezvous_reads = RendezvousReads{rdzv_uid, At(100), false};
  for (ObservedPod& pod : world.pods) {
    if (pod.node_name == "n3") pod = LostSince(pod, 100);  // Ready=False (PLEG is not healthy)
  }
  for (int now : {101, 103}) {
    world.rendezvous_reads->last_ok = At(now);  // the page answers through the flap
    const Plan plan = PlanReconcile(job, world, At(now), kOptions);
    SCOPED_TRACE(plan.ToString());
    EXPECT_TRUE(plan.deletes.empty());
    EXPECT_TRUE(plan.events.empty());
    ASSERT_TRUE(plan.requeue_after.has_value());  // looks again when the margin would be over
    EXPECT_EQ(*plan.requeue_after, std::chrono::milliseconds((110 - now) * 1000));
    Apply(plan, &job, &world, At(now));
  }
  for (ObservedPod& pod : world.pods) pod.node_lost = false, pod.node_lost_since.reset();
  world.rendezvous_reads->last_ok = At(110);
  const Plan after = PlanReconcile(job, world, At(110), kOptions);
  EXPECT_TRUE(after.deletes.empty()) << after.ToString();
  EXPECT_TRUE(job.status.suspect_nodes.empty());
  EXPECT_EQ(job.status.disruptions + job.status.restarts + job.status.recoveries, 0);
}

// The same flap under a page that fails too (the node is briefly starved): a few seconds of
// failing reads and a NotReady shorter than the margin replace nothing before the liveness
// timeout; the page answers again and it is over.
TEST(SilentRendezvous, AShortNotReadyWithAFewFailedReadsReplacesNothing) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = StoreNodeWorld("n3", 101);  // n3 NotReady since 101
  world.rendezvous_reads->node_mates["mingpt-worker-1-r0"] = {2, false};
  for (int now : {102, 105, 108}) {
    const Plan plan = PlanReconcile(job, world, At(now), kOptions);
    EXPECT_TRUE(plan.deletes.empty()) << now << ": " << plan.ToString();
    Apply(plan, &job, &world, At(now));
  }
  for (ObservedPod& pod : world.pods) pod.node_lost = false, pod.node_lost_since.reset();
  world.rendezvous_reads = RendezvousReads{"mingpt-rendezvous-r0", At(109), false};
  const Plan back = PlanReconcile(job, world, At(109), kOptions);
  EXPECT_TRUE(back.deletes.empty()) << back.ToString();
  EXPECT_TRUE(job.status.suspect_nodes.empty());
  EXPECT_EQ(job.status.disruptions, 0);
}

// Both come back off the silent node, each once, and the disruption is counted once over the
// passes that follow.
TEST(SilentRendezvous, AWorkerSilentWithItIsCreatedAgainOffTheNodeAndCountedOnce) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = StoreNodeWorld("n3");
  world.rendezvous_reads->node_mates["mingpt-worker-1-r0"] = {3, false};
  Apply(PlanReconcile(job, world, At(111), kOptions), &job, &world, At(111));
  world.rendezvous_reads.reset();  // the controller tracks no gone pod
  const Plan recreate = PlanReconcile(job, world, At(112), kOptions);
  SCOPED_TRACE(recreate.ToString());
  Strings creates = DescribeCreates(recreate);
  std::sort(creates.begin(), creates.end());
  EXPECT_EQ(creates, (Strings{"Pod mingpt-rendezvous r0", "Pod mingpt-worker-1 r0"}));
  for (const json& pod : recreate.creates) {
    ASSERT_NE(Required(pod), nullptr) << pod.dump();
    EXPECT_EQ((*Required(pod))["nodeSelectorTerms"],
              json::array({{{"matchExpressions", json::array({NotIn({"n3"})})}}}));
  }
  Apply(recreate, &job, &world, At(112));
  EXPECT_EQ(job.status.disruptions, 1);
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.round, 0);
  Apply(PlanReconcile(job, world, At(113), kOptions), &job, &world, At(113));
  EXPECT_EQ(job.status.disruptions, 1);
}

}  // namespace
}  // namespace ddp::plan::testing
