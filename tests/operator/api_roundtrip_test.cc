// DDPJob parsing and serialization: every known field, defaults, type errors, and the promise
// that fields the operator does not know survive untouched.
#include <gtest/gtest.h>

#include "operator/api/serialize.h"
#include "operator/api/time_format.h"
#include "operator/api/validate.h"

namespace ddp::api {
namespace {

using nlohmann::json;

const char kFull[] = R"(
apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata:
  name: mingpt
  namespace: ml
  uid: 1234-abcd
  generation: 3
  resourceVersion: "991"
  labels: {team: nlp, tier: "1"}
  annotations: {note: "keep me", "example.com/flag": "true"}
  finalizers: [example.com/hold]
spec:
  replicas: 4
  nprocPerNode: 8
  elastic: {minReplicas: 2, maxReplicas: 8, pendingTimeoutSeconds: 90, futureKnob: on-demand}
  rendezvous: {port: 29600, timeoutSeconds: 300}
  failurePolicy: {restartPolicy: ExitCode, maxRestarts: 5, retryableExitCodes: [75, 76],
                  recovery: InPlace, spares: 2, livenessTimeoutSeconds: 5}
  runPolicy: {activeDeadlineSeconds: 7200, ttlSecondsAfterFinished: 60, suspend: true,
              cleanPodPolicy: All, schedulingHint: gang}
  checkpoint: {path: /checkpoints}
  metrics: {port: 9500}
  priorityClass: high        # a spec field this operator does not know
  template:
    metadata: {labels: {app: mingpt}}
    spec:
      schedulerName: volcano
      containers:
        - name: worker
          image: ddp-worker:1
          env: [{name: OMP_NUM_THREADS, value: "4"}]
          unknownContainerField: {a: [1, 2]}
status:
  phase: Running
  round: 2
  restarts: 1
  disruptions: 1
  recoveries: 2
  spares: 2
  readySpares: 1
  replicas: 4
  readyReplicas: 3
  worldSize: 32
  observedGeneration: 3
  selector: ddp.dev/job-name=mingpt
  startTime: "2026-01-01T00:00:00Z"
  lastFailure: {pod: mingpt-worker-1, rank: 1, exitCode: 75, reason: Error, message: peer lost,
                time: "2026-01-01T00:05:00Z", podUID: uid-7}
  conditions:
    - {type: Running, status: "True", reason: AllPodsRunning, message: ok,
       lastTransitionTime: "2026-01-01T00:06:00Z", observedGeneration: 3}
  someoneElsesField: 7
)";

DDPJob ParseOne(const std::string& yaml) {
  auto jobs = ParseDDPJobYaml(yaml);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->size(), 1u);
  return jobs->front();
}

TEST(ParseDDPJob, ReadsEveryField) {
  const DDPJob j = ParseOne(kFull);
  EXPECT_EQ(j.name, "mingpt");
  EXPECT_EQ(j.namespace_name, "ml");
  EXPECT_EQ(j.uid, "1234-abcd");
  EXPECT_EQ(j.generation, 3);
  EXPECT_EQ(j.resource_version, "991");
  EXPECT_EQ(j.labels.at("tier"), "1");
  EXPECT_EQ(j.Key(), "ml/mingpt");
  EXPECT_EQ(j.spec.replicas, 4);
  EXPECT_EQ(j.spec.nproc_per_node, 8);
  ASSERT_TRUE(j.spec.elastic.has_value());
  EXPECT_EQ(j.spec.elastic->min_replicas, 2);
  EXPECT_EQ(j.spec.elastic->max_replicas, 8);
  EXPECT_EQ(j.spec.elastic->pending_timeout_seconds, 90);
  EXPECT_EQ(j.spec.rendezvous.port, 29600);
  EXPECT_EQ(j.spec.rendezvous.timeout_seconds, 300);
  EXPECT_EQ(j.spec.failure_policy.restart_policy, RestartPolicy::kExitCode);
  EXPECT_EQ(j.spec.failure_policy.max_restarts, 5);
  EXPECT_EQ(j.spec.failure_policy.retryable_exit_codes, (std::vector<int>{75, 76}));
  EXPECT_EQ(j.spec.failure_policy.recovery, Recovery::kInPlace);
  EXPECT_EQ(j.spec.failure_policy.spares, 2);
  EXPECT_EQ(j.spec.failure_policy.liveness_timeout_seconds, 5);
  EXPECT_EQ(j.spec.run_policy.active_deadline_seconds, 7200);
  EXPECT_EQ(j.spec.run_policy.ttl_seconds_after_finished, 60);
  EXPECT_TRUE(j.spec.run_policy.suspend);
  EXPECT_EQ(j.spec.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(j.spec.checkpoint.path, "/checkpoints");
  EXPECT_EQ(j.spec.metrics.port, 9500);
  EXPECT_EQ(j.spec.pod_template["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(j.status.phase, "Running");
  EXPECT_EQ(j.status.round, 2);
  EXPECT_EQ(j.status.world_size, 32);
  EXPECT_EQ(j.status.start_time, *ParseTime("2026-01-01T00:00:00Z"));
  ASSERT_TRUE(j.status.last_failure.has_value());
  EXPECT_EQ(j.status.last_failure->exit_code, 75);
  EXPECT_EQ(j.status.last_failure->pod_uid, "uid-7");
  EXPECT_EQ(j.status.recoveries, 2);
  EXPECT_EQ(j.status.spares, 2);
  EXPECT_EQ(j.status.ready_spares, 1);
  ASSERT_EQ(j.status.conditions.size(), 1u);
  EXPECT_EQ(j.status.conditions[0].last_transition_time, *ParseTime("2026-01-01T00:06:00Z"));
}

TEST(ParseDDPJob, AbsentFieldsTakeDesignDefaults) {
  DDPJob j = ParseOne("apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n"
                      "spec:\n  replicas: 3\n  elastic: {}\n");
  ApplyDefaults(&j);
  EXPECT_EQ(j.namespace_name, "default");
  EXPECT_EQ(j.spec.nproc_per_node, 1);
  EXPECT_EQ(j.spec.rendezvous.port, 29500);
  EXPECT_EQ(j.spec.rendezvous.timeout_seconds, 600);
  EXPECT_EQ(j.spec.failure_policy.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(j.spec.failure_policy.max_restarts, 3);
  EXPECT_EQ(j.spec.failure_policy.retryable_exit_codes, (std::vector<int>{75}));
  EXPECT_EQ(j.spec.failure_policy.recovery, Recovery::kRestart);
  EXPECT_EQ(j.spec.failure_policy.spares, 0);
  EXPECT_EQ(j.spec.failure_policy.liveness_timeout_seconds, 10);
  EXPECT_FALSE(j.spec.run_policy.active_deadline_seconds.has_value());
  EXPECT_FALSE(j.spec.run_policy.suspend);
  EXPECT_EQ(j.spec.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(j.spec.checkpoint.path.has_value());
  EXPECT_EQ(j.spec.metrics.port, 9400);
  EXPECT_EQ(j.spec.elastic->min_replicas, 1);
  EXPECT_EQ(j.spec.elastic->max_replicas, 3);
  DDPJob again = j;
  ApplyDefaults(&again);  // idempotent
  EXPECT_EQ(ToJson(again), ToJson(j));
}

TEST(ToJson, KeepsUnknownFieldsEverywhere) {
  const DDPJob j = ParseOne(kFull);
  const json out = ToJson(j);
  EXPECT_EQ(out["metadata"]["annotations"]["note"], "keep me");
  EXPECT_EQ(out["metadata"]["annotations"]["example.com/flag"], "true");  // a string, not a bool
  EXPECT_EQ(out["metadata"]["finalizers"][0], "example.com/hold");
  EXPECT_EQ(out["spec"]["priorityClass"], "high");
  EXPECT_EQ(out["spec"]["elastic"]["futureKnob"], "on-demand");
  EXPECT_EQ(out["spec"]["runPolicy"]["schedulingHint"], "gang");
  EXPECT_EQ(out["spec"]["template"]["spec"]["containers"][0]["unknownContainerField"]["a"][1], 2);
  EXPECT_EQ(out["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"], "4");
  EXPECT_EQ(out["status"]["someoneElsesField"], 7);
  EXPECT_EQ(out["metadata"]["resourceVersion"], "991");
}

TEST(ToJson, ParseOfToJsonIsTheSameJob) {
  const DDPJob j = ParseOne(kFull);
  const json once = ToJson(j);
  auto back = ParseDDPJobJson(once);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), once);
  EXPECT_EQ(back->status, j.status);
  EXPECT_EQ(back->spec.pod_template, j.spec.pod_template);
}

TEST(ToJson, EditedFieldsAreWrittenAndClearedOptionalsRemoved) {
  DDPJob j = ParseOne(kFull);
  j.spec.replicas = 6;
  j.spec.run_policy.active_deadline_seconds.reset();
  j.status.last_failure.reset();
  const json out = ToJson(j);
  EXPECT_EQ(out["spec"]["replicas"], 6);
  EXPECT_FALSE(out["spec"]["runPolicy"].contains("activeDeadlineSeconds"));
  EXPECT_FALSE(out["status"].contains("lastFailure"));
}

TEST(StatusToJson, WritesDesignFieldNamesAndRfc3339Times) {
  DDPJobStatus s;
  s.phase = "Running";
  s.round = 2;
  s.completion_time = *ParseTime("2026-01-01T01:02:03Z");
  const json out = StatusToJson(s);
  for (const char* key : {"phase", "conditions", "observedGeneration", "replicas", "readyReplicas",
                          "worldSize", "round", "restarts", "disruptions", "selector"}) {
    EXPECT_TRUE(out.contains(key)) << key;
  }
  EXPECT_EQ(out["completionTime"], "2026-01-01T01:02:03Z");
  EXPECT_FALSE(out.contains("startTime"));
  auto back = ParseStatusJson(out);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, s);
}

TEST(ParseDDPJob, TypeErrorsNameTheFieldAndValue) {
  struct Case { const char* spec; const char* want; };
  const Case cases[] = {
      {"replicas: four", "spec.replicas: expected an integer, got \"four\""},
      {"replicas: 2.5", "spec.replicas: expected an integer, got 2.5"},
      {"elastic: {minReplicas: [1]}", "spec.elastic.minReplicas: expected an integer, got [1]"},
      {"runPolicy: {suspend: \"yes\"}", "spec.runPolicy.suspend: expected true or false, got \"yes\""},
      {"runPolicy: {networkPolicy: \"off\"}",
       "spec.runPolicy.networkPolicy: expected true or false, got \"off\""},
      {"failurePolicy: {restartPolicy: Always}",
       "spec.failurePolicy.restartPolicy (\"Always\") must be one of OnFailure, ExitCode, Never"},
      {"failurePolicy: {recovery: inplace}",
       "spec.failurePolicy.recovery (\"inplace\") must be one of Restart, InPlace"},
      {"runPolicy: {cleanPodPolicy: Some}",
       "spec.runPolicy.cleanPodPolicy (\"Some\") must be one of None, Running, All"},
      {"failurePolicy: {retryableExitCodes: [75, x]}",
       "spec.failurePolicy.retryableExitCodes[1]: expected an integer, got \"x\""},
      {"template: [1]", "spec.template: expected an object, got [1]"},
      {"runPolicy: {schedulingPolicy: gang}",
       "spec.runPolicy.schedulingPolicy: expected an object, got \"gang\""},
      {"runPolicy: {schedulingPolicy: {minAvailable: two}}",
       "spec.runPolicy.schedulingPolicy.minAvailable: expected an integer, got \"two\""},
      {"runPolicy: {schedulingPolicy: {minResources: {cpu: [8]}}}",
       "spec.runPolicy.schedulingPolicy.minResources.cpu: expected a quantity (\"8\", \"64Gi\"), "
       "got [8]"},
  };
  for (const auto& c : cases) {
    auto jobs = ParseDDPJobYaml(std::string("apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\n"
                                            "metadata: {name: a}\nspec:\n  ") + c.spec + "\n");
    ASSERT_FALSE(jobs.ok()) << c.spec;
    EXPECT_EQ(jobs.status().message(), std::string("document 1: ") + c.want);
  }
}

TEST(ParseDDPJob, SchedulingPolicyRoundTripsAndAbsentStaysAbsent) {
  DDPJob job = ParseOne(R"(
apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {name: a}
spec:
  runPolicy:
    schedulingPolicy:
      minAvailable: 3
      queue: research
      priorityClass: high
      minResources: {cpu: 32, nvidia.com/gpu: "8"}
      scheduleTimeoutSeconds: 60
      futureKnob: keep-me
)");
  ASSERT_TRUE(job.spec.run_policy.scheduling_policy.has_value());
  const SchedulingPolicy& g = *job.spec.run_policy.scheduling_policy;
  EXPECT_EQ(g.min_available, 3);
  EXPECT_EQ(g.queue, "research");
  EXPECT_EQ(g.priority_class, "high");
  EXPECT_EQ(g.min_resources, (std::map<std::string, std::string>{{"cpu", "32"},
                                                                  {"nvidia.com/gpu", "8"}}));
  EXPECT_EQ(g.schedule_timeout_seconds, 60);
  const json back = ToJson(job)["spec"]["runPolicy"]["schedulingPolicy"];
  EXPECT_EQ(back, json::parse(R"({"minAvailable": 3, "queue": "research", "priorityClass": "high",
      "minResources": {"cpu": "32", "nvidia.com/gpu": "8"}, "scheduleTimeoutSeconds": 60,
      "futureKnob": "keep-me"})"));
  EXPECT_FALSE(ParseOne("apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n")
                   .spec.run_policy.scheduling_policy.has_value());
  EXPECT_FALSE(ToJson(ParseOne("apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n"))
                   ["spec"]["runPolicy"].contains("schedulingPolicy"));
}

TEST(ParseDDPJobYaml, ReadsSeveralDocumentsAndRejectsOtherKinds) {
  auto jobs = ParseDDPJobYaml(
      "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n---\n"
      "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: b}\n");
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].name, "b");
  auto wrong = ParseDDPJobYaml("apiVersion: v1\nkind: DDPJob\nmetadata: {name: a}\n");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "document 1: apiVersion (\"v1\") must be \"ddp.dev/v1alpha1\"");
  auto other = ParseDDPJobYaml("apiVersion: ddp.dev/v1alpha1\nkind: Pod\n");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "document 1: kind (\"Pod\") must be \"DDPJob\"");
}

}  // namespace
}  // namespace ddp::api

namespace ddp::api {
namespace {

// Unset stays unset (the operator's default decides), true and false round-trip.
TEST(ParseDDPJob, NetworkPolicyIsAnOptionalBool) {
  const std::string head = "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n";
  struct Row {
    std::string spec;
    std::optional<bool> want;
  };
  for (const Row& r : {Row{"", std::nullopt}, Row{"spec: {runPolicy: {networkPolicy: null}}\n", std::nullopt},
                       Row{"spec: {runPolicy: {networkPolicy: true}}\n", true},
                       Row{"spec: {runPolicy: {networkPolicy: false}}\n", false}}) {
    auto jobs = ParseDDPJobYaml(head + r.spec);
    ASSERT_TRUE(jobs.ok()) << r.spec << jobs.status().ToString();
    const DDPJob& job = (*jobs)[0];
    EXPECT_EQ(job.spec.run_policy.network_policy, r.want) << r.spec;
    const nlohmann::json run = ToJson(job)["spec"]["runPolicy"];
    EXPECT_EQ(run.contains("networkPolicy"), r.want.has_value()) << run.dump();
    if (r.want) {
      EXPECT_EQ(run["networkPolicy"], *r.want);
    }
  }
}

}  // namespace
}  // namespace ddp::api
