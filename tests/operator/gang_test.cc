// The pure gang functions (operator/plan/gang.h): the scheduler setting, the gang's size, the
// PodGroup and the keys each pod carries. Expected keys are the schedulers' documented ones,
// written out here, not read from the code under test.
#include <gtest/gtest.h>

#include <set>

#include "operator/plan/builders.h"
#include "operator/plan/gang.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

TEST(GangSchedulerName, FollowsTheGangSchedulerNameConvention) {
  struct Case {
    std::string name;
    bool ok;
    GangScheduler want;
  };
  for (const Case& c : std::vector<Case>{{"", true, GangScheduler::kNone},
                                         {"volcano", true, GangScheduler::kVolcano},
                                         {"scheduler-plugins-scheduler", true,
                                          GangScheduler::kCoscheduling},
                                         {"my.coscheduler", true, GangScheduler::kCoscheduling},
                                         {"Volcano", false, GangScheduler::kNone},
                                         {"-bad", false, GangScheduler::kNone}}) {
    GangConfig g;
    EXPECT_EQ(ParseGangSchedulerName(c.name, &g), c.ok) << c.name;
    if (!c.ok) continue;
    EXPECT_EQ(g.scheduler, c.want) << c.name;
    EXPECT_EQ(g.scheduler_name, c.name);
  }
}

TEST(GangSize, MinMemberIsMinAvailableCappedByTheRound) {
  struct Case {
    std::optional<int> min_available;
    int round_size, want_count, want_min;
  };
  for (const Case& c : std::vector<Case>{{std::nullopt, 4, 4, 4},
                                         {std::nullopt, 1, 1, 1},
                                         {2, 4, 4, 2},
                                         {4, 4, 4, 4},
                                         {6, 3, 3, 3}}) {
    api::DDPJob j = Job(4);
    if (c.min_available) {
      j.spec.run_policy.scheduling_policy =
          api::SchedulingPolicy{c.min_available, "", "", {}, std::nullopt};
    }
    EXPECT_EQ(GangPodCount(j, c.round_size), c.want_count);
    EXPECT_EQ(GangMinMember(j, c.round_size), c.want_min);
  }
}

TEST(PodGroupSpecPatch, SetsWhatDiffersAndRemovesOnlyMinResources) {
  struct Case {
    json current, desired, want;
  };
  for (const Case& c : std::vector<Case>{
           {{{"minMember", 3}}, {{"minMember", 3}}, json()},
           {{{"minMember", 3}}, {{"minMember", 2}}, {{"minMember", 2}}},
           {{{"minMember", 3}, {"queue", "default"}}, {{"minMember", 3}}, json()},
           {{{"minMember", 3}, {"queue", "default"}},
            {{"minMember", 3}, {"queue", "research"}},
            {{"queue", "research"}}},
           {{{"minMember", 3}, {"minResources", {{"cpu", "8"}}}}, {{"minMember", 3}},
            {{"minResources", nullptr}}},
           {json::object(), {{"minMember", 1}}, {{"minMember", 1}}}}) {
    EXPECT_EQ(PodGroupSpecPatch(c.current, c.desired), c.want) << c.current << " -> " << c.desired;
  }
}

TEST(BuildPodGroup, OwnedByTheJobWithTheSpecItsSchedulerReads) {
  api::DDPJob j = Job(4);
  j.spec.run_policy.scheduling_policy =
      api::SchedulingPolicy{3, "research", "high", {{"nvidia.com/gpu", "32"}}, 120};
  const json volcano = BuildPodGroup(j, {GangScheduler::kVolcano, "volcano"}, 4);
  EXPECT_EQ(volcano["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(volcano["kind"], "PodGroup");
  EXPECT_EQ(volcano["metadata"]["name"], "mingpt");
  EXPECT_EQ(volcano["metadata"]["namespace"], "ml");
  EXPECT_EQ(volcano["metadata"]["labels"], json({{"ddp.dev/job-name", "mingpt"}}));
  EXPECT_EQ(volcano["metadata"]["ownerReferences"], json::array({OwnerReference(j)}));
  EXPECT_EQ(volcano["spec"], json({{"minMember", 3},
                                   {"queue", "research"},
                                   {"priorityClassName", "high"},
                                   {"minResources", {{"nvidia.com/gpu", "32"}}}}));
  const json cosched = BuildPodGroup(j, {GangScheduler::kCoscheduling, "sp"}, 2);
  EXPECT_EQ(cosched["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(cosched["spec"], json({{"minMember", 2},
                                   {"scheduleTimeoutSeconds", 120},
                                   {"minResources", {{"nvidia.com/gpu", "32"}}}}));
}

// The keys a gang adds to a pod: the pod built with the gang minus the pod built without it.
struct Added {
  std::map<std::string, std::string> labels, annotations;
  json scheduler_name;
};

Added AddedKeys(const api::DDPJob& j, const GangConfig& g, int round, int size) {
  json plain = BuildWorkerPod(j, 1, round, size);
  json gang = plain;
  AddGangKeys(j, g, round, size, &gang);
  Added out;
  for (const char* field : {"labels", "annotations"}) {
    const json& pm = plain["metadata"];
    const json& gm = gang["metadata"];
    const json before = pm.contains(field) ? pm[field] : json::object();
    const json after = gm.contains(field) ? gm[field] : json::object();
    for (const auto& [k, v] : after.items()) {
      if (before.contains(k)) {
        EXPECT_EQ(before[k], v) << "the gang changed " << k;
        continue;
      }
      (std::string(field) == "labels" ? out.labels : out.annotations)[k] = v;
    }
  }
  const json& spec = gang["spec"];
  out.scheduler_name = spec.contains("schedulerName") ? spec["schedulerName"] : json();
  json rest = gang;
  rest["metadata"] = plain["metadata"];
  rest["spec"].erase("schedulerName");
  EXPECT_EQ(rest, plain) << "the gang changed more than its keys";
  return out;
}

TEST(GangKeys, VolcanoPodsNameTheirPodGroupInAnAnnotation) {
  Added a = AddedKeys(Job(3), {GangScheduler::kVolcano, "volcano"}, 0, 3);
  EXPECT_EQ(a.labels, (std::map<std::string, std::string>{}));
  EXPECT_EQ(a.annotations,
            (std::map<std::string, std::string>{{"scheduling.k8s.io/group-name", "mingpt"}}));
  EXPECT_EQ(a.scheduler_name, "volcano");
}

TEST(GangKeys, CoschedulingPodsNameTheirPodGroupInALabel) {
  Added a = AddedKeys(Job(3), {GangScheduler::kCoscheduling, "scheduler-plugins-scheduler"}, 0, 3);
  EXPECT_EQ(a.labels,
            (std::map<std::string, std::string>{{"scheduling.x-k8s.io/pod-group", "mingpt"}}));
  EXPECT_EQ(a.annotations, (std::map<std::string, std::string>{}));
  EXPECT_EQ(a.scheduler_name, "scheduler-plugins-scheduler");
}

TEST(GangKeys, KueuePodsCarryTheQueueTheRoundsGroupAndItsSize) {
  api::DDPJob j = Job(3);
  j.labels["kueue.x-k8s.io/queue-name"] = "team-a";
  Added a = AddedKeys(j, GangConfig{}, 2, 3);
  EXPECT_EQ(a.labels, (std::map<std::string, std::string>{
                          {"kueue.x-k8s.io/queue-name", "team-a"},
                          {"kueue.x-k8s.io/pod-group-name", "mingpt-r2"}}));
  EXPECT_EQ(a.annotations, (std::map<std::string, std::string>{
                               {"kueue.x-k8s.io/pod-group-total-count", "3"},
                               {"kueue.x-k8s.io/retriable-in-group", "false"}}));
  EXPECT_TRUE(a.scheduler_name.is_null()) << "Kueue leaves the scheduler alone";
}

TEST(GangKeys, NothingWithoutAGangOrAQueue) {
  Added a = AddedKeys(Job(3), GangConfig{}, 0, 3);
  EXPECT_TRUE(a.labels.empty() && a.annotations.empty() && a.scheduler_name.is_null());
  api::DDPJob j = Job(3);
  j.labels["kueue.x-k8s.io/queue-name"] = "team-a";
  GangConfig local;
  local.kueue = false;
  a = AddedKeys(j, local, 0, 3);
  EXPECT_TRUE(a.labels.empty() && a.annotations.empty());
}

}  // namespace
}  // namespace ddp::plan::testing
