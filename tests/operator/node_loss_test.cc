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

// ---- The rendezvous pod whose page went silent (silent_rendezvous.h).

struct SilentRow {
  std::string name;
  std::optional<RendezvousReads> reads;
  bool node_lost;
  int now;
  bool deleted;
  std::optional<int> requeue_at;  // seconds
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
  };
}

class SilentTable : public ::testing::TestWithParam<SilentRow> {};

TEST_P(SilentTable, Decides) {
  const SilentRow& row = GetParam();
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[2] = On(world.pods[2], "n3", row.node_lost);
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

// ---- Rule 3: a worker pod silent with the rendezvous pod of its node (one frozen node holding
// both) is replaced with it, not after the new store's rejoin window.

struct MateRow {
  std::string name;
  std::string worker_node;               // worker 1's node; the rendezvous pod is on n3
  std::optional<RendezvousReads::Probes> probes;  // worker 1's probes; none: never probed
  int now;                               // the page answered last at 100, livenessTimeout 10 s
  bool replaced;                         // worker 1 force-deleted with the rendezvous pod
};

std::vector<MateRow> MateRows() {
  using P = RendezvousReads::Probes;
  return {
      {"silent_on_the_same_node_is_replaced_with_it", "n3", P{2, false}, 110, true},
      {"answering_is_left_alone", "n3", P{2, true}, 110, false},
      {"never_probed_decides_nothing", "n3", std::nullopt, 110, false},
      {"probed_zero_times_decides_nothing", "n3", P{0, false}, 110, false},
      {"on_another_node_is_left_alone", "n2", P{2, false}, 110, false},
      {"inside_the_timeout_waits_with_the_store", "n3", P{2, false}, 105, false},
  };
}

class MateTable : public ::testing::TestWithParam<MateRow> {};

// Worker 0 on n1, worker 1 on `worker_node`, the rendezvous pod on n3, its page silent since 100.
Observed StoreNodeWorld(const std::string& worker_node) {
  Observed world = GroupWorld(2, 0, 0, "Running");
  world.pods[0] = On(world.pods[0], "n1");
  world.pods[1] = On(world.pods[1], worker_node);
  world.pods[2] = On(world.pods[2], "n3");
  world.rendezvous_reads = RendezvousReads{"mingpt-rendezvous-r0", At(100), true};
  return world;
}

TEST_P(MateTable, Decides) {
  const MateRow& row = GetParam();
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2));
  Observed world = StoreNodeWorld(row.worker_node);
  if (row.probes) world.rendezvous_reads->node_mates["mingpt-worker-1-r0"] = *row.probes;
  const Plan plan = PlanReconcile(job, world, At(row.now), kOptions);
  SCOPED_TRACE(plan.ToString());
  Strings want;
  if (row.now >= 110) want.push_back("Pod mingpt-rendezvous (grace 0s)");
  if (row.replaced) want.push_back("Pod mingpt-worker-1 (grace 0s)");
  Strings deletes = DescribeDeletes(plan);
  std::sort(deletes.begin(), deletes.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(deletes, want);
  if (!row.replaced) return;
  ASSERT_TRUE(plan.status.has_value());
  // One disruption, not charged against maxRestarts, and no new round: the survivor heals it.
  EXPECT_EQ(plan.status->disruptions, 1);
  EXPECT_EQ(plan.status->restarts, 0);
  EXPECT_EQ(plan.status->round, 0);
  EXPECT_EQ(plan.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(row.now)}}));
}

INSTANTIATE_TEST_SUITE_P(SilentRendezvous, MateTable, ::testing::ValuesIn(MateRows()),
                         [](const auto& info) { return info.param.name; });

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
