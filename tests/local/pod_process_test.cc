// A local pod runs exactly the cluster pod's command and env, with only the host values replaced.
#include "operator/local/pod_process.h"

#include <gtest/gtest.h>

#include "operator/local/manifest.h"
#include "operator/plan/builders.h"

namespace ddp::controller::local {
namespace {

using Json = nlohmann::json;

api::DDPJob Job(const std::string& container_extra = "") {
  const std::string yaml =
      "apiVersion: ddp.dev/v1alpha1\n"
      "kind: DDPJob\n"
      "metadata: {name: demo}\n"
      "spec:\n"
      "  replicas: 2\n"
      "  template:\n"
      "    spec:\n"
      "      terminationGracePeriodSeconds: 3\n"
      "      containers:\n"
      "      - name: worker\n"
      "        image: ignored\n"
      "        command: [ddp-worker]\n"
      "        args: [--steps, \"$(STEPS)\", --rank-file, \"r$(RANK).txt\", \"$$(RANK)\"]\n"
      "        env:\n"
      "        - {name: STEPS, value: \"40\"}\n"
      "        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
      "        - {name: SECRET, valueFrom: {secretKeyRef: {name: s, key: k}}}\n" +
      container_extra;
  StatusOr<api::DDPJob> job = ParseLocalManifest(yaml, "test.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? job.value() : api::DDPJob{};
}

Json EnvOf(const Json& pod) {
  const Json& spec = pod["spec"];
  return spec["containers"][plan::WorkerContainerIndex(spec)]["env"];
}

TEST(ProcessSpecFromPod, EnvIsTheClusterEnvWithHostOverrides) {
  api::DDPJob job = Job();
  Json pod = plan::BuildWorkerPod(job, 1, 3, 2);
  HostOverrides host{"127.0.0.1", 41000, 42000};
  StatusOr<ProcessSpec> spec = ProcessSpecFromPod(pod, host);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // The reference: what the builder itself makes with the local overrides.
  Json reference = EnvOf(plan::BuildWorkerPod(job, 1, 3, 2, {"127.0.0.1", 41000, 42000}));
  std::vector<std::pair<std::string, std::string>> expected;
  for (const Json& e : reference) {
    const std::string name = e["name"];
    if (name == "SECRET") continue;  // skipped with a warning
    if (name == "POD") {
      expected.emplace_back(name, "demo-worker-1");
      continue;
    }
    expected.emplace_back(name, e["value"].get<std::string>());
  }
  EXPECT_EQ(spec.value().env, expected);
  ASSERT_EQ(spec.value().warnings.size(), 1u);
  EXPECT_NE(spec.value().warnings[0].find("SECRET"), std::string::npos);
  EXPECT_EQ(spec.value().grace_seconds, 3);
}

TEST(ProcessSpecFromPod, ArgvExpandsReferences) {
  api::DDPJob job = Job();
  StatusOr<ProcessSpec> spec = ProcessSpecFromPod(plan::BuildWorkerPod(job, 1, 0, 2), {});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  std::vector<std::string> expected = {"ddp-worker", "--steps", "40", "--rank-file", "r1.txt",
                                       "$(RANK)"};
  EXPECT_EQ(spec.value().argv, expected);
}

TEST(ProcessSpecFromPod, NoCommandIsAClearError) {
  Json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"containers", Json::array({{{"name", "worker"}, {"image", "x"}}})}}}};
  StatusOr<ProcessSpec> spec = ProcessSpecFromPod(pod, {});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("containers[0].command is not set"), std::string::npos);
  Json empty = {{"metadata", {{"name", "p"}}}, {"spec", {{"containers", Json::array()}}}};
  EXPECT_FALSE(ProcessSpecFromPod(empty, {}).ok());
}

TEST(ExpandVars, KubernetesRules) {
  std::vector<std::pair<std::string, std::string>> env = {{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(ExpandVars("$(A)-$(B)", env), "1-two");
  EXPECT_EQ(ExpandVars("$$(A)", env), "$(A)");
  EXPECT_EQ(ExpandVars("$(MISSING)", env), "$(MISSING)");
  EXPECT_EQ(ExpandVars("cost $5 $(A", env), "cost $5 $(A");
}

}  // namespace
}  // namespace ddp::controller::local
