// PlanReconcile with gang scheduling and queueing (Volcano, coscheduling, Kueue), one row per
// decision. Every row also checks idempotency: apply the plan to the world, plan again, expect
// no writes.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "operator/api/labels.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using Strings = std::vector<std::string>;

struct Expect {
  Strings creates;          // DescribeCreates, exact and in order
  Strings deletes;          // DescribeDeletes, exact and in order
  Strings patches;          // "PodGroup mingpt {...}", exact
  std::string phase;        // "" = not checked
  int round = -1, restarts = -1, disruptions = -1;
  Strings events;           // event reasons, exact and in order (checked when non-empty)
  std::string message;      // a substring of some event's message
  std::string condition;    // "Type=Status/Reason"
  int requeue_s = -1;       // -1: no requeue expected
  int start_s = -1;         // status.startTime as seconds after At(0); -1 = not checked
  bool no_status = false;
};

struct Row {
  std::string name;
  DDPJob job;
  Observed seen;
  TimePoint now;
  GangConfig gang;
  Expect want;
};

GangConfig Volcano() { return {GangScheduler::kVolcano, "volcano"}; }
GangConfig Cosched() { return {GangScheduler::kCoscheduling, "scheduler-plugins-scheduler"}; }

DDPJob WithPolicy(DDPJob j, api::SchedulingPolicy g) {
  j.spec.run_policy.scheduling_policy = std::move(g);
  return j;
}
DDPJob Queued(DDPJob j, const std::string& queue = "team-a") {
  j.labels[api::kKueueQueueNameLabel] = queue;
  return j;
}
DDPJob Waiting(DDPJob j, const std::string& reason, TimePoint since) {
  j.status.conditions.push_back({api::kCondQueued, "True", reason, "m", since, j.generation});
  return j;
}
DDPJob Deadline(DDPJob j, int s) {
  j.spec.run_policy.active_deadline_seconds = s;
  return j;
}
DDPJob InPlace(DDPJob j) {
  j.spec.failure_policy.recovery = api::Recovery::kInPlace;
  return j;
}
DDPJob Ready(DDPJob j, int n) {
  j.status.ready_replicas = n;
  return j;
}
DDPJob Spares(DDPJob j, int n) {
  j.spec.failure_policy.recovery = api::Recovery::kInPlace;
  j.spec.failure_policy.spares = n;
  return j;
}
ObservedPod OnNode(ObservedPod p) {
  p.node_name = "node-a";
  return p;
}
ObservedPod Gated(ObservedPod p) {
  p.scheduling_gates = {api::kKueueAdmissionGate};
  return p;
}
std::vector<ObservedPod> GatedPods(int n, int round) {
  std::vector<ObservedPod> out;
  for (int i = 0; i < n; ++i) out.push_back(Gated(Pod(i, round, "Pending")));
  return out;
}
// The job's PodGroup as the API server would hand it back.
ObservedPodGroup Group(nlohmann::json spec, const std::string& phase = "Running",
                       const std::string& owner = "uid-1") {
  ObservedPodGroup g;
  g.name = "mingpt";
  g.api_version = "scheduling.volcano.sh/v1beta1";
  g.uid = "pg-uid";
  g.owner_uid = owner;
  g.spec = std::move(spec);
  g.phase = phase;
  return g;
}
Observed WithGroup(Observed w, ObservedPodGroup g) {
  w.pod_group = std::move(g);
  return w;
}
Observed ApiMissing(Observed w) {
  w.pod_group_api_missing = true;
  return w;
}

const Strings kRound0 = {"Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0",
                         "Pod mingpt-worker-2 r0"};
const Strings kDeleteAll3 = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2"};

Strings Concat(Strings a, const Strings& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<Row> Rows() {
  const DDPJob running3 = Ready(InPhase(Job(3), "Running", 0, 3), 3);
  const nlohmann::json min3 = {{"minMember", 3}};
  const api::SchedulingPolicy volcano_policy{std::nullopt, "research", "high-priority",
                                             {{"nvidia.com/gpu", "24"}}, 90};
  return {
      // The PodGroup comes first, so the pods meet their group; one decision, one event.
      {"volcano_new_job_creates_its_podgroup_before_its_pods", Job(3), World({}, false), At(0),
       Volcano(),
       {.creates = Concat({"PodGroup mingpt", "Service mingpt"}, kRound0), .phase = "Pending",
        .events = {"JobCreated"}, .message = "creating PodGroup mingpt (minMember 3); creating "
                                             "Service mingpt and 3 pods of 3"}},
      {"coscheduling_new_job_creates_its_podgroup_too", Job(2), World({}), At(0), Cosched(),
       {.creates = {"PodGroup mingpt", "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}}},
      // A gang scheduler counts the group's pods, not their roles: a spare bound before a worker
      // would fill minMember in its place. Spares join once the workers and the rendezvous pod
      // are bound (the coscheduling plugin's queue sorts mingpt-spare-0 before mingpt-worker-1).
      {"spares_wait_until_the_gang_is_bound", Spares(Job(2), 1), World({}), At(0), Cosched(),
       {.creates = {"PodGroup mingpt", "Pod mingpt-rendezvous r0", "Pod mingpt-worker-0 r0",
                    "Pod mingpt-worker-1 r0"},
        .message = "creating PodGroup mingpt (minMember 3); creating rendezvous pod "
                   "mingpt-rendezvous and 2 pods of 2"}},
      {"spares_wait_while_a_worker_is_unbound",
       InPhase(Spares(Job(2), 1), "Pending", 0, 2),
       WithGroup(World({OnNode(Rendezvous(0, "Pending")), OnNode(Pod(0, 0, "Pending")),
                        Pod(1, 0, "Pending")}),
                 Group({{"minMember", 3}}, "Inqueue")),
       At(5), Volcano(), {.creates = {}, .condition = "Queued=True/WaitingForPodGroup"}},
      {"spares_join_once_the_gang_is_bound", InPhase(Spares(Job(2), 1), "Pending", 0, 2),
       WithGroup(World({OnNode(Rendezvous(0, "Pending")), OnNode(Pod(0, 0, "Pending")),
                        OnNode(Pod(1, 0, "Pending"))}),
                 Group({{"minMember", 3}}, "Inqueue")),
       At(5), Volcano(), {.creates = {"Pod mingpt-spare-0 r0"}}},
      {"no_gang_scheduler_creates_no_podgroup", Job(3), World({}), At(0), GangConfig{},
       {.creates = kRound0, .events = {"JobCreated"}}},
      {"no_gang_scheduler_warns_about_an_ignored_policy",
       WithPolicy(Job(3), {2, "", "", {}, std::nullopt}), World({}), At(0), GangConfig{},
       {.creates = kRound0, .events = {"GangSchedulingIgnored", "JobCreated"},
        .message = "spec.runPolicy.schedulingPolicy ignored: the operator runs without "
                   "--gang-scheduler-name"}},
      {"podgroup_in_step_means_no_write", running3, WithGroup(World(Pods(3, 0, "Running")),
       Group(min3)), At(10), Volcano(), {.events = {}, .no_status = true}},
      // The PodGroup follows rounds: minMember is the new round's pod count.
      // ...and its pods come whole once the old round's are gone (the names 3 and 4 are free
      // at once, but the plugin would count the old pods as members of the new round).
      {"resize_patches_minmember_to_the_new_round", Scaled(running3, 5),
       WithGroup(World(Pods(3, 0, "Running")), Group(min3)), At(10), Volcano(),
       {.creates = {}, .deletes = kDeleteAll3,
        .patches = {R"(PodGroup mingpt {"spec":{"minMember":5}})"}, .phase = "Scaling",
        .round = 1, .events = {"Resized", "DeletingPods", "UpdatingPodGroup"},
        .message = "round 1: updating PodGroup mingpt (minMember 5)"}},
      {"no_gang_scheduler_creates_free_names_of_a_new_round_at_once",
       InPhase(Job(2), "Restarting", 1, 2, 1), World({Deleting(Pod(0, 0, "Running"))}), At(20),
       GangConfig{}, {.creates = {"Pod mingpt-worker-1 r1"}, .round = 1}},
      {"a_new_round_waits_while_a_pod_of_the_old_one_terminates",
       InPhase(Job(2), "Restarting", 1, 2, 1),
       WithGroup(World({Deleting(Pod(0, 0, "Running"))}), Group({{"minMember", 2}}, "Running")),
       At(20), Cosched(), {.creates = {}, .round = 1}},
      {"a_new_round_is_created_whole_once_the_old_pods_are_gone",
       InPhase(Job(2), "Restarting", 1, 2, 1),
       WithGroup(World({}), Group({{"minMember", 2}}, "Running")), At(20), Cosched(),
       {.creates = {"Pod mingpt-worker-0 r1", "Pod mingpt-worker-1 r1"}, .round = 1}},
      {"inplace_new_round_holds_its_rendezvous_pod_too",
       InPhase(InPlace(Job(2)), "Restarting", 1, 2, 1),
       WithGroup(World({Deleting(Rendezvous(0, "Running"))}), Group({{"minMember", 3}}, "Running")),
       At(20), Volcano(), {.creates = {}, .round = 1}},
      {"elastic_shrink_patches_minmember", Elastic(InPhase(Job(3), "Pending", 0, 3), 1, 3, 60),
       WithGroup(World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Unschedulable(2, 0, At(0))}),
                 Group(min3, "Running")),
       At(100), Volcano(),
       {.deletes = kDeleteAll3, .patches = {R"(PodGroup mingpt {"spec":{"minMember":2}})"},
        .round = 1, .events = {"PendingTimeout", "DeletingPods", "UpdatingPodGroup"}}},
      {"min_available_is_capped_by_a_smaller_round",
       WithPolicy(Scaled(Elastic(running3, 1, 3, 60), 1), {2, "", "", {}, std::nullopt}),
       WithGroup(World(Pods(3, 0, "Running")), Group({{"minMember", 2}})), At(10), Volcano(),
       {.deletes = kDeleteAll3, .patches = {R"(PodGroup mingpt {"spec":{"minMember":1}})"},
        .round = 1, .events = {"Resized", "DeletingPods", "UpdatingPodGroup"}}},
      {"volcano_reads_queue_priority_class_and_min_resources",
       WithPolicy(running3, volcano_policy),
       WithGroup(World(Pods(3, 0, "Running")), Group(min3)), At(10), Volcano(),
       {.patches = {R"(PodGroup mingpt {"spec":{"minResources":{"nvidia.com/gpu":"24"},)"
                    R"("priorityClassName":"high-priority","queue":"research"}})"},
        .events = {"UpdatingPodGroup"}}},
      {"coscheduling_reads_min_resources_and_schedule_timeout",
       WithPolicy(running3, volcano_policy),
       WithGroup(World(Pods(3, 0, "Running")), Group(min3)), At(10), Cosched(),
       {.patches = {R"(PodGroup mingpt {"spec":{"minResources":{"nvidia.com/gpu":"24"},)"
                    R"("scheduleTimeoutSeconds":90}})"}}},
      {"a_queue_the_scheduler_defaulted_is_left_alone", running3,
       WithGroup(World(Pods(3, 0, "Running")), Group({{"minMember", 3}, {"queue", "default"}})),
       At(10), Volcano(), {.no_status = true}},
      {"min_resources_dropped_from_the_policy_are_removed", running3,
       WithGroup(World(Pods(3, 0, "Running")),
                 Group({{"minMember", 3}, {"minResources", {{"cpu", "8"}}}})),
       At(10), Volcano(), {.patches = {R"(PodGroup mingpt {"spec":{"minResources":null}})"}}},
      // A gang not placed yet: Pending, Queued, and no timer runs out.
      {"podgroup_not_placed_is_pending_and_queued", InPhase(Job(3), "Pending", 0, 3),
       WithGroup(World(Pods(3, 0, "Pending")), Group(min3, "Pending")), At(10), Volcano(),
       {.phase = "Pending", .events = {"WaitingForPodGroup"},
        .message = "round 0: PodGroup mingpt is Pending (minMember 3)",
        .condition = "Queued=True/WaitingForPodGroup"}},
      {"podgroup_wait_does_not_exceed_the_deadline",
       Waiting(Deadline(InPhase(Job(3), "Pending", 0, 3), 60), "WaitingForPodGroup", At(5)),
       WithGroup(World(Pods(3, 0, "Pending")), Group(min3, "Inqueue")), At(1000), Volcano(),
       {.phase = "Pending", .condition = "Queued=True/WaitingForPodGroup"}},
      {"podgroup_wait_does_not_shrink_an_elastic_job",
       Elastic(InPhase(Job(3), "Pending", 0, 3), 1, 3, 60),
       WithGroup(World({Unschedulable(0, 0, At(0)), Unschedulable(1, 0, At(0)),
                        Unschedulable(2, 0, At(0))}),
                 Group(min3, "Pending")),
       At(500), Volcano(), {.round = 0, .condition = "Queued=True/WaitingForPodGroup"}},
      {"admission_ends_the_wait_and_moves_the_start_time",
       Waiting(Deadline(InPhase(Job(3), "Pending", 0, 3), 300), "WaitingForPodGroup", At(100)),
       WithGroup(World(Pods(3, 0, "Running")), Group(min3, "Running")), At(400), Volcano(),
       {.phase = "Running", .events = {"Admitted", "Running"},
        .message = "round 0: the gang was admitted after 300s",
        .condition = "Queued=False/Admitted", .requeue_s = 200, .start_s = 300}},
      // The scheduler's CRD is absent: a Warning, no pods, a retry; never a crash loop.
      {"podgroup_kind_not_served_holds_the_pods_and_warns", Job(3), ApiMissing(World({}, false)),
       At(0), Volcano(),
       {.creates = {"Service mingpt"}, .phase = "Pending",
        .events = {"JobCreated", "PodGroupUnavailable", "CreatingService"},
        .message = "the API server does not serve scheduling.volcano.sh/v1beta1 PodGroups",
        .condition = "Queued=True/PodGroupUnavailable", .requeue_s = 30}},
      {"podgroup_of_someone_else_holds_the_pods", Job(3),
       WithGroup(World({}), Group(min3, "", "someone-else")), At(0), Volcano(),
       {.creates = {}, .condition = "Queued=True/PodGroupNotOwned"}},
      {"finished_job_deletes_its_podgroup", InPhase(Job(3), "Succeeded", 0, 3),
       WithGroup(World(Pods(3, 0, "Succeeded")), Group(min3)), At(10), Volcano(),
       {.deletes = {"Service mingpt", "PodGroup mingpt"}, .no_status = true}},
      {"suspended_job_deletes_its_podgroup", [&] {
         DDPJob j = running3;
         j.spec.run_policy.suspend = true;
         return j;
       }(),
       WithGroup(World(Pods(3, 0, "Running")), Group(min3)), At(10), Volcano(),
       {.deletes = Concat(kDeleteAll3, {"PodGroup mingpt"}), .phase = "Suspended"}},
      // Kueue: gated pods wait for admission; a round is one pod group.
      {"kueue_gated_pods_are_pending_and_queued", Queued(InPhase(Job(3), "Pending", 0, 3)),
       World(GatedPods(3, 0)), At(10), GangConfig{},
       {.phase = "Pending", .events = {"WaitingForAdmission"},
        .message = "round 0: 3 of 3 pods wait for Kueue to admit pod group mingpt-r0 "
                   "(LocalQueue team-a)",
        .condition = "Queued=True/WaitingForAdmission"}},
      {"kueue_wait_after_a_restart_is_pending_not_restarting",
       Queued(InPhase(Job(3), "Restarting", 1, 3, 1)), World(GatedPods(3, 1)), At(10),
       GangConfig{}, {.phase = "Pending", .round = 1, .restarts = 1}},
      {"kueue_wait_does_not_exceed_the_deadline",
       Waiting(Deadline(Queued(InPhase(Job(3), "Pending", 0, 3)), 60), "WaitingForAdmission",
               At(1)),
       World(GatedPods(3, 0)), At(5000), GangConfig{}, {.phase = "Pending"}},
      {"kueue_preemption_is_a_disruption_and_a_new_round", Queued(running3),
       World({Deleting(Pod(0, 0, "Running")), Deleting(Pod(1, 0, "Running")),
              Deleting(Pod(2, 0, "Running"))}),
       At(10), GangConfig{},
       {.phase = "Restarting", .round = 1, .restarts = 0, .disruptions = 1,
        .events = {"PodDisrupted"}}},
      {"kueue_inplace_failure_is_a_new_round_not_a_replacement", InPlace(Queued(running3)),
       World({Pod(0, 0, "Running"), Exited(1, 0, 137), Pod(2, 0, "Running")}), At(10),
       GangConfig{},
       {.deletes = kDeleteAll3, .round = 1, .restarts = 1,
        .events = {"PodFailed", "DeletingPods"}, .requeue_s = 1}},
      {"kueue_label_ignored_where_there_is_no_kueue", Queued(Job(2)), World({}), At(0),
       [] {
         GangConfig g;
         g.kueue = false;
         g.none_reason = "local mode has no scheduler";
         return g;
       }(),
       {.creates = {"Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"},
        .events = {"GangSchedulingIgnored", "JobCreated"},
        .message = "the label kueue.x-k8s.io/queue-name ignored: local mode has no scheduler"}},
  };
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class GangTable : public ::testing::TestWithParam<Row> {};

std::string ConditionString(const api::DDPJobStatus& s, const std::string& type) {
  const api::Condition* c = s.FindCondition(type);
  return c ? type + "=" + c->status + "/" + c->reason : type + " absent";
}

PlanOptions WithGang(const GangConfig& gang) {
  PlanOptions o;
  o.gang = gang;
  return o;
}

TEST_P(GangTable, Decides) {
  const Row& row = GetParam();
  const Plan plan = PlanReconcile(row.job, row.seen, row.now, WithGang(row.gang));
  SCOPED_TRACE(plan.ToString());
  const Expect& want = row.want;
  const api::DDPJobStatus result = plan.status ? *plan.status : row.job.status;

  EXPECT_EQ(DescribeCreates(plan), want.creates);
  EXPECT_EQ(DescribeDeletes(plan), want.deletes);
  Strings patches;
  for (const Patch& p : plan.patches) {
    patches.push_back(p.kind + " " + p.name + " " + p.merge_patch.dump());
  }
  EXPECT_EQ(patches, want.patches);
  if (!want.phase.empty()) { EXPECT_EQ(result.phase, want.phase); }
  if (want.round >= 0) { EXPECT_EQ(result.round, want.round); }
  if (want.restarts >= 0) { EXPECT_EQ(result.restarts, want.restarts); }
  if (want.disruptions >= 0) { EXPECT_EQ(result.disruptions, want.disruptions); }
  if (!want.events.empty() || want.no_status) { EXPECT_EQ(EventReasons(plan), want.events); }
  if (!want.message.empty()) {
    EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const Event& e) {
      return e.message.find(want.message) != std::string::npos;
    })) << "no event says \"" << want.message << "\"";
  }
  if (!want.condition.empty()) {
    const std::string type = want.condition.substr(0, want.condition.find('='));
    EXPECT_EQ(ConditionString(result, type), want.condition);
  }
  if (want.requeue_s < 0) {
    EXPECT_FALSE(plan.requeue_after.has_value());
  } else {
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(*plan.requeue_after, std::chrono::seconds(want.requeue_s));
  }
  if (want.start_s >= 0) {
    ASSERT_TRUE(result.start_time.has_value());
    EXPECT_EQ(*result.start_time, At(want.start_s));
  }
  if (want.no_status) { EXPECT_FALSE(plan.status.has_value()); }

  // Idempotency: the world after the plan asks for nothing more at the same instant.
  DDPJob job = row.job;
  Observed world = row.seen;
  Apply(plan, &job, &world, row.now);
  const Plan again = PlanReconcile(job, world, row.now, WithGang(row.gang));
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty() && again.patches.empty() &&
              !again.status && again.events.empty() && !again.delete_job)
      << "second pass was not a no-op: " << again.ToString();
}

INSTANTIATE_TEST_SUITE_P(Gang, GangTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// Kueue sees one group per round, and every pod of a group says the same total, which is the
// number of pods the operator creates for it: through a start, a failure restart and a resize.
TEST(GangScenario, EveryKueueGroupIsExactlyTheRoundsPods) {
  DDPJob job = Queued(Job(3));
  Observed world = World({}, false);
  std::map<std::string, std::vector<std::string>> totals;  // group -> each pod's total count
  auto pass = [&](TimePoint now) {
    const Plan plan = PlanReconcile(job, world, now);
    for (const auto& obj : plan.creates) {
      if (obj["kind"] != "Pod") continue;
      const auto& meta = obj["metadata"];
      totals[meta["labels"][api::kKueuePodGroupNameLabel]].push_back(
          meta["annotations"][api::kKueueGroupTotalCountAnnotation]);
    }
    Apply(plan, &job, &world, now);
  };
  auto run_all = [&] {
    for (auto& pod : world.pods) {
      if (!pod.deleting) pod.phase = "Running";
    }
  };
  pass(At(0));
  run_all();
  pass(At(1));
  world = With(world, Exited(1, 0, 137));  // a failure: a new round, a new group
  pass(At(2));
  ReapDeleting(&world);
  pass(At(10));  // after the restart backoff
  run_all();
  pass(At(11));
  job = Scaled(job, 2);  // a resize: a new round of 2
  pass(At(12));
  ReapDeleting(&world);
  pass(At(13));
  EXPECT_EQ(totals, (std::map<std::string, std::vector<std::string>>{
                        {"mingpt-r0", {"3", "3", "3"}},
                        {"mingpt-r1", {"3", "3", "3"}},
                        {"mingpt-r2", {"2", "2"}}}));
}

// A gang that waits says why in the scheduler's own words (the Unschedulable condition is not
// set meanwhile): the PodScheduled message of its first unschedulable pod by name, after the
// PodGroup's phase; a pod the scheduler has not reported on adds nothing.
TEST(GangWait, QueuedQuotesTheSchedulerAboutTheFirstUnschedulablePod) {
  const std::string gang_says =
      "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable";
  auto unschedulable = [](ObservedPod p, const std::string& msg) {
    p.unschedulable_since = At(1);
    p.unschedulable_message = msg;
    return p;
  };
  const DDPJob job = InPhase(Job(3), "Pending", 0, 3);
  auto queued = [&](const std::vector<ObservedPod>& pods, const GangConfig& gang) {
    const Plan plan = PlanReconcile(job, WithGroup(World(pods), Group({{"minMember", 3}}, "Pending")),
                                    At(5), WithGang(gang));
    const api::Condition* c = plan.status ? plan.status->FindCondition(api::kCondQueued) : nullptr;
    return c ? c->status + "/" + c->reason + ": " + c->message : std::string("absent");
  };
  const std::string said = queued(
      {unschedulable(Pod(2, 0, "Pending"), "0/2 nodes are available: 2 Insufficient cpu."),
       Pod(0, 0, "Pending"), unschedulable(Pod(1, 0, "Pending"), gang_says)},
      Volcano());
  const std::string tail = "; pod mingpt-worker-1: " + gang_says;
  ASSERT_GE(said.size(), tail.size()) << said;
  EXPECT_EQ(said.substr(said.size() - tail.size()), tail) << said;
  EXPECT_EQ(said.rfind("True/WaitingForPodGroup: round 0: PodGroup mingpt is Pending", 0), 0u)
      << said;
  // Nothing reported: the message ends with what the operator knows.
  const std::string silent =
      queued({Pod(0, 0, "Pending"), Pod(1, 0, "Pending"), Pod(2, 0, "Pending")}, Cosched());
  EXPECT_EQ(silent.find("; pod "), std::string::npos) << silent;
  const std::string end = "starts the gang's pods together";
  ASSERT_GE(silent.size(), end.size()) << silent;
  EXPECT_EQ(silent.substr(silent.size() - end.size()), end) << silent;
}

}  // namespace
}  // namespace ddp::plan::testing
