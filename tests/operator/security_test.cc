// ApplyRunAsGroup (operator/plan/security.h): runAsGroup beside runAsUser, fsGroup where the
// kubelet applies it. Each row states the template and the expected securityContexts by hand.
#include <gtest/gtest.h>

#include "operator/plan/builders.h"
#include "operator/plan/security.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

const json kPvc = {{"name", "ckpt"}, {"persistentVolumeClaim", {{"claimName", "c"}}}};
const json kHostPath = {{"name", "h"}, {"hostPath", {{"path", "/data"}}}};

struct Row {
  const char* name;
  json spec;      // the template's PodSpec
  json want_pod;  // spec.securityContext afterwards (null: absent)
  json want_c0;   // containers[0].securityContext afterwards (null: absent)
};

TEST(ApplyRunAsGroup, Table) {
  const json c_plain = {{"name", "worker"}};
  const std::vector<Row> rows = {
      {"nothing set: the image's USER applies, untouched",
       {{"containers", {c_plain}}, {"volumes", {kPvc}}}, nullptr, nullptr},
      {"runAsUser alone, a PVC: group and fsGroup follow the user",
       {{"securityContext", {{"runAsUser", 65532}}}, {"containers", {c_plain}}, {"volumes", {kPvc}}},
       {{"runAsUser", 65532}, {"runAsGroup", 65532}, {"fsGroup", 65532},
        {"fsGroupChangePolicy", "OnRootMismatch"}},
       nullptr},
      {"hostPath only: fsGroup would not apply, so none is added",
       {{"securityContext", {{"runAsUser", 1000}}}, {"containers", {c_plain}}, {"volumes", {kHostPath}}},
       {{"runAsUser", 1000}, {"runAsGroup", 1000}}, nullptr},
      {"no volumes: runAsGroup only",
       {{"securityContext", {{"runAsUser", 1000}, {"runAsNonRoot", true}}}, {"containers", {c_plain}}},
       {{"runAsUser", 1000}, {"runAsGroup", 1000}, {"runAsNonRoot", true}}, nullptr},
      {"an explicit group 0 is kept (and is the fsGroup)",
       {{"securityContext", {{"runAsUser", 1000}, {"runAsGroup", 0}}}, {"containers", {c_plain}},
        {"volumes", {kPvc}}},
       {{"runAsUser", 1000}, {"runAsGroup", 0}, {"fsGroup", 0}, {"fsGroupChangePolicy", "OnRootMismatch"}},
       nullptr},
      {"the template's fsGroup and policy are kept",
       {{"securityContext", {{"runAsUser", 7}, {"fsGroup", 2000}}}, {"containers", {c_plain}},
        {"volumes", {kPvc}}},
       {{"runAsUser", 7}, {"runAsGroup", 7}, {"fsGroup", 2000}}, nullptr},
      {"a container's runAsUser gets its group when the pod sets none",
       {{"containers", {{{"name", "worker"}, {"securityContext", {{"runAsUser", 9}}}}}}},
       nullptr, {{"runAsUser", 9}, {"runAsGroup", 9}}},
      {"the pod's group applies to a container's user",
       {{"securityContext", {{"runAsGroup", 5}}},
        {"containers", {{{"name", "worker"}, {"securityContext", {{"runAsUser", 9}}}}}}},
       {{"runAsGroup", 5}}, {{"runAsUser", 9}}},
      {"a malformed securityContext is left to validation",
       {{"securityContext", "root"}, {"containers", {c_plain}}, {"volumes", {kPvc}}}, "root", nullptr},
      {"a non-integer runAsUser gets no group",
       {{"securityContext", {{"runAsUser", "65532"}}}, {"containers", {c_plain}}},
       {{"runAsUser", "65532"}}, nullptr},
      // Rule 4: the project's images run as 65532:65532 and need that group on their volumes.
      {"the project's GPU image under a registry with a port, a PVC, nothing set: fsGroup 65532",
       {{"containers", {{{"name", "worker"}, {"image", "reg.example:5000/ml/ddp-worker:0.1.0"}}}},
        {"volumes", {kPvc}}},
       {{"fsGroup", 65532}, {"fsGroupChangePolicy", "OnRootMismatch"}}, nullptr},
      {"the CPU image by digest, runAsNonRoot only: fsGroup 65532 beside it",
       {{"securityContext", {{"runAsNonRoot", true}}},
        {"containers", {{{"name", "worker"}, {"image", "ddp-worker-cpu@sha256:0123abcd"}}}},
        {"volumes", {kPvc}}},
       {{"runAsNonRoot", true}, {"fsGroup", 65532}, {"fsGroupChangePolicy", "OnRootMismatch"}},
       nullptr},
      {"the project's image as a sidecar: the pod still gets the group",
       {{"containers", {{{"name", "worker"}, {"image", "my-trainer:1"}},
                        {{"name", "side"}, {"image", "ddp-worker-cpu:0.1.0"}}}},
        {"volumes", {kPvc}}},
       {{"fsGroup", 65532}, {"fsGroupChangePolicy", "OnRootMismatch"}}, nullptr},
      {"another image, a PVC: untouched (its user is not known)",
       {{"containers", {{{"name", "worker"}, {"image", "my-pytorch-training:1.0"}}}},
        {"volumes", {kPvc}}},
       nullptr, nullptr},
      {"a name that only starts like ours is not ours",
       {{"containers", {{{"name", "worker"}, {"image", "ddp-worker-extras:1"}}}}, {"volumes", {kPvc}}},
       nullptr, nullptr},
      {"the project's image, hostPath only: the kubelet would not apply it",
       {{"containers", {{{"name", "worker"}, {"image", "ddp-worker:0.1.0"}}}}, {"volumes", {kHostPath}}},
       nullptr, nullptr},
      {"the project's image, no volume: nothing to write to",
       {{"containers", {{{"name", "worker"}, {"image", "ddp-worker:0.1.0"}}}}}, nullptr, nullptr},
      {"the project's image with a user of its own: the template decides",
       {{"containers", {{{"name", "worker"}, {"image", "ddp-worker:0.1.0"},
                         {"securityContext", {{"runAsUser", 1000}}}}}},
        {"volumes", {kPvc}}},
       nullptr, {{"runAsUser", 1000}, {"runAsGroup", 1000}}},
      {"the project's image, the template's fsGroup is kept",
       {{"securityContext", {{"fsGroup", 2000}}},
        {"containers", {{{"name", "worker"}, {"image", "ddp-worker:0.1.0"}}}}, {"volumes", {kPvc}}},
       {{"fsGroup", 2000}}, nullptr},
  };
  for (const Row& r : rows) {
    json spec = r.spec;
    ApplyRunAsGroup(&spec);
    EXPECT_EQ(spec.value("securityContext", json()), r.want_pod) << r.name;
    EXPECT_EQ(spec["containers"][0].value("securityContext", json()), r.want_c0) << r.name;
    json again = spec;
    ApplyRunAsGroup(&again);
    EXPECT_EQ(again, spec) << r.name << ": not idempotent";
  }
}

TEST(ApplyRunAsGroup, WorkerAndRendezvousPodsRunWithTheGroup) {
  api::DDPJob job = Job(2);
  job.spec.failure_policy.recovery = api::Recovery::kInPlace;
  job.spec.pod_template["spec"]["securityContext"] = {{"runAsUser", 65532}, {"runAsNonRoot", true}};
  job.spec.pod_template["spec"]["volumes"] = {kPvc};
  const json worker = BuildWorkerPod(job, 0, 0, 2);
  EXPECT_EQ(worker["spec"]["securityContext"]["runAsGroup"], 65532);
  EXPECT_EQ(worker["spec"]["securityContext"]["fsGroup"], 65532);
  const json rdzv = BuildRendezvousPod(job, 0, 2);
  EXPECT_EQ(rdzv["spec"]["securityContext"]["runAsGroup"], 65532);
  EXPECT_FALSE(rdzv["spec"]["securityContext"].contains("fsGroup"));  // it mounts no volume
}

// What the examples that run the project's images on a shared volume get (gpt2-shards,
// torchscript-model, mingpt-inplace set no securityContext): every pod that mounts the volume
// can write it as 65532; the rendezvous pod mounts none.
TEST(ApplyRunAsGroup, ProjectImagesGetTheirGroupOnTheirVolumes) {
  api::DDPJob job = Job(2);
  job.spec.failure_policy.recovery = api::Recovery::kInPlace;
  job.spec.failure_policy.spares = 1;
  job.spec.pod_template["spec"]["containers"][0]["image"] = "ddp-worker-cpu:0.1.0";
  job.spec.pod_template["spec"]["volumes"] = {kPvc};
  for (const json& pod : {BuildWorkerPod(job, 1, 0, 2), BuildSparePod(job, 0, 0, 2)}) {
    EXPECT_EQ(pod["spec"]["securityContext"],
              json({{"fsGroup", 65532}, {"fsGroupChangePolicy", "OnRootMismatch"}}))
        << pod["metadata"]["name"];
  }
  const json rdzv = BuildRendezvousPod(job, 0, 2);
  EXPECT_FALSE(rdzv["spec"].value("securityContext", json::object()).contains("fsGroup"));
}

TEST(IsProjectWorkerImage, RepositoryNameUnderAnyRegistryTagOrDigest) {
  for (const char* yes : {"ddp-worker", "ddp-worker:0.1.0", "ddp-worker-cpu:0.1.0",
                          "registry.example/team/ddp-worker:1", "host:5000/ddp-worker-cpu",
                          "ddp-worker@sha256:00ff", "host:5000/a/ddp-worker:2@sha256:00ff"}) {
    EXPECT_TRUE(IsProjectWorkerImage(yes)) << yes;
  }
  for (const char* no : {"", "ddp-operator:0.1.0", "ddp-worker-gpu", "my-ddp-worker",
                         "ddp-worker/other:1", "pytorch/pytorch:2.1", "host:5000/ddp-workers"}) {
    EXPECT_FALSE(IsProjectWorkerImage(no)) << no;
  }
}

}  // namespace
}  // namespace ddp::plan::testing
