// recovery InPlace's pods as the builders make them (DESIGN.md "Hot spares", "Drains, silent nodes
// and the budget"): the group's env on every training pod, spare pods without a rank, and the
// rendezvous pod. Expected values are written from the contract (common/group_contract.h and
// DESIGN.md's table) by hand, not from program output.
#include <gtest/gtest.h>

#include "operator/plan/builders.h"
#include "operator/plan/env.h"
#include "operator/plan/names.h"
#include "operator/plan/observe.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;
using Env = std::vector<std::pair<std::string, std::string>>;

// name -> value ("<fieldPath>" for a downward API entry), in order.
Env EnvOf(const json& container) {
  Env out;
  for (const auto& e : container["env"]) {
    const std::string value =
        e.contains("valueFrom") ? "<" + e["valueFrom"]["fieldRef"]["fieldPath"].get<std::string>() + ">"
                                : e.value("value", std::string("?"));
    out.emplace_back(e["name"].get<std::string>(), value);
  }
  return out;
}

std::string Value(const Env& env, const std::string& name) {
  for (const auto& [n, v] : env) {
    if (n == name) return v;
  }
  return "<unset>";
}

const json& Worker(const json& pod) { return pod["spec"]["containers"][0]; }

// Everything after TORCHELASTIC_RESTART_COUNT.
Env Tail(const Env& env) {
  for (size_t i = 0; i < env.size(); ++i) {
    if (env[i].first == "TORCHELASTIC_RESTART_COUNT") return Env(env.begin() + i + 1, env.end());
  }
  return {};
}

TEST(GroupEnv, WorkerPodGetsTheGroupsVariables) {
  api::DDPJob job = InPlace(Job(3));
  const Env env = EnvOf(Worker(BuildWorkerPod(job, 1, 2, 3)));
  const Env want = {{"DDP_RECOVERY", "InPlace"},
                    {"DDP_MAX_RECOVERIES", "3"},
                    {"DDP_STORE_ADDR", "mingpt-rendezvous.mingpt.ml.svc"},
                    {"DDP_POD_NAME", "mingpt-worker-1"},
                    {"DDP_POD_ROLE", "worker"},
                    {"DDP_LIVENESS_TIMEOUT", "10"},
                    {"DDP_RESTART_POLICY", "OnFailure"},
                    {"DDP_RETRYABLE_EXIT_CODES", "75"},
                    {"DDP_TERMINATION_LOG", "/dev/termination-log"},
                    {"DDP_POD_UID", "<metadata.uid>"},
                    {"DDP_POD_IP", "<status.podIP>"}};
  EXPECT_EQ(Tail(env), want);
  // torchrun's names keep pointing at pod 0: an InPlace job's torchrun image keeps the round model.
  EXPECT_EQ(Value(env, "MASTER_ADDR"), "mingpt-worker-0.mingpt.ml.svc");
  EXPECT_EQ(Value(env, "NODE_RANK"), "1");
  EXPECT_EQ(Value(env, "RANK"), "1");
}

TEST(GroupEnv, FollowsTheFailurePolicy) {
  api::DDPJob job = InPlace(Job(2));
  job.spec.failure_policy.liveness_timeout_seconds = 4;
  job.spec.failure_policy.restart_policy = api::RestartPolicy::kExitCode;
  job.spec.failure_policy.retryable_exit_codes = {75, 76};
  Env env = EnvOf(Worker(BuildWorkerPod(job, 0, 0, 2)));
  EXPECT_EQ(Value(env, "DDP_LIVENESS_TIMEOUT"), "4");
  EXPECT_EQ(Value(env, "DDP_RESTART_POLICY"), "ExitCode");
  EXPECT_EQ(Value(env, "DDP_RETRYABLE_EXIT_CODES"), "75,76");
  job.spec.failure_policy.retryable_exit_codes = {};  // only signals retry
  job.spec.failure_policy.restart_policy = api::RestartPolicy::kNever;
  env = EnvOf(Worker(BuildWorkerPod(job, 0, 0, 2)));
  EXPECT_EQ(Value(env, "DDP_RETRYABLE_EXIT_CODES"), "none");
  EXPECT_EQ(Value(env, "DDP_RESTART_POLICY"), "Never");
}

TEST(GroupEnv, RestartModeHasNoneOfThem) {
  const Env env = EnvOf(Worker(BuildWorkerPod(Job(2), 0, 0, 2)));
  for (const char* name : {"DDP_STORE_ADDR", "DDP_POD_NAME", "DDP_POD_ROLE", "DDP_POD_UID",
                           "DDP_POD_IP", "DDP_LIVENESS_TIMEOUT", "DDP_RESTART_POLICY",
                           "DDP_RETRYABLE_EXIT_CODES"}) {
    EXPECT_EQ(Value(env, name), "<unset>") << name;
  }
  EXPECT_FALSE(BuildWorkerPod(Job(2), 0, 0, 2)["metadata"]["labels"].contains(api::kRoleLabel));
}

// A spare has no rank of its own: the group gives it a lost member's.
TEST(BuildSparePod, IsAWorkerPodWithoutARank) {
  api::DDPJob job = InPlace(Job(3), 2);
  job.spec.checkpoint.path = "/ckpt";
  const json pod = BuildSparePod(job, 1, 4, 3);
  EXPECT_EQ(pod["metadata"]["name"], "mingpt-spare-1");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels[api::kRoleLabel], "spare");
  EXPECT_EQ(labels[api::kSpareIndexLabel], "1");
  EXPECT_EQ(labels[api::kRoundLabel], "4");
  EXPECT_EQ(labels[api::kJobNameLabel], "mingpt");
  EXPECT_FALSE(labels.contains(api::kReplicaIndexLabel));
  EXPECT_EQ(pod["spec"]["hostname"], "mingpt-spare-1");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(Worker(pod)["image"], "ddp-worker:test");
  const Env env = EnvOf(Worker(pod));
  for (const char* name : {"NODE_RANK", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PET_NODE_RANK"}) {
    EXPECT_EQ(Value(env, name), "<unset>") << name;
  }
  EXPECT_EQ(Value(env, "WORLD_SIZE"), "3");
  EXPECT_EQ(Value(env, "NNODES"), "3");
  EXPECT_EQ(Value(env, "DDP_POD_NAME"), "mingpt-spare-1");
  EXPECT_EQ(Value(env, "DDP_POD_ROLE"), "spare");
  // Each job under a directory of its own: <path>/<namespace>/<name>.
  EXPECT_EQ(Value(env, "DDP_CHECKPOINT_DIR"), "/ckpt/ml/mingpt");
  EXPECT_EQ(Value(env, "DDP_STORE_ADDR"), "mingpt-rendezvous.mingpt.ml.svc");
  // The planner reads it back as the spare it built.
  const ObservedPod seen = ObservePod(pod);
  EXPECT_EQ(seen.role, "spare");
  EXPECT_EQ(seen.index, 1);
  EXPECT_EQ(seen.round, 4);
}

// The rendezvous pod: `ddp-worker rendezvous` from the worker's image, small, probed, and none
// of the template's volumes, accelerators or other containers.
TEST(BuildRendezvousPod, RunsTheWorkerImagesRendezvousAndNothingElse) {
  api::DDPJob job = InPlace(Job(3));
  job.spec.metrics.port = 9500;
  job.spec.pod_template = json::parse(R"({
    "metadata": {"labels": {"team": "nlp"}},
    "spec": {
      "nodeSelector": {"pool": "cpu"},
      "tolerations": [{"key": "gpu", "operator": "Exists"}],
      "imagePullSecrets": [{"name": "regcred"}],
      "volumes": [{"name": "data", "emptyDir": {}}],
      "containers": [
        {"name": "sidecar", "image": "busybox"},
        {"name": "worker", "image": "ddp-worker:2", "imagePullPolicy": "Always",
         "resources": {"limits": {"nvidia.com/gpu": "8"}},
         "volumeMounts": [{"name": "data", "mountPath": "/data"}],
         "env": [{"name": "OMP_NUM_THREADS", "value": "4"}]}]}})");
  const json pod = BuildRendezvousPod(job, 2, 3);
  EXPECT_EQ(pod["metadata"]["name"], "mingpt-rendezvous");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels[api::kRoleLabel], "rendezvous");
  EXPECT_EQ(labels[api::kRoundLabel], "2");
  EXPECT_EQ(labels["team"], "nlp");
  EXPECT_FALSE(labels.contains(api::kReplicaIndexLabel));
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["hostname"], "mingpt-rendezvous");
  EXPECT_EQ(spec["subdomain"], "mingpt");
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["nodeSelector"]["pool"], "cpu");
  EXPECT_EQ(spec["imagePullSecrets"][0]["name"], "regcred");
  EXPECT_FALSE(spec.contains("volumes"));
  ASSERT_EQ(spec["containers"].size(), 1u);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["command"], (json{"ddp-worker", "rendezvous"}));
  EXPECT_EQ(c["image"], "ddp-worker:2");
  EXPECT_EQ(c["imagePullPolicy"], "Always");
  EXPECT_FALSE(c.contains("volumeMounts"));
  EXPECT_FALSE(c["resources"].dump().find("nvidia.com/gpu") != std::string::npos) << c["resources"];
  EXPECT_TRUE(c["resources"]["requests"].contains("cpu"));
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    EXPECT_EQ(c[probe]["httpGet"]["path"], "/healthz") << probe;
    EXPECT_EQ(c[probe]["httpGet"]["port"], 9500) << probe;
  }
  const Env env = EnvOf(c);
  EXPECT_EQ(Value(env, "DDP_POD_ROLE"), "rendezvous");
  EXPECT_EQ(Value(env, "DDP_POD_NAME"), "mingpt-rendezvous");
  EXPECT_EQ(Value(env, "NNODES"), "3");
  EXPECT_EQ(Value(env, "MASTER_PORT"), "29500");
  EXPECT_EQ(Value(env, "DDP_METRICS_PORT"), "9500");
  EXPECT_EQ(Value(env, "NODE_RANK"), "<unset>");
  EXPECT_EQ(Value(env, "OMP_NUM_THREADS"), "<unset>");  // the worker's own env is not its business
  bool store_port = false;
  for (const auto& p : c["ports"]) store_port = store_port || p["containerPort"] == 29500;
  EXPECT_TRUE(store_port) << c["ports"];
  const ObservedPod seen = ObservePod(pod);
  EXPECT_EQ(seen.role, "rendezvous");
  EXPECT_EQ(seen.index, 0);
  EXPECT_EQ(seen.round, 2);
}

TEST(Names, GroupPodsFollowDesign) {
  const api::DDPJob job = Job(1);
  EXPECT_EQ(SparePodName(job, 3), "mingpt-spare-3");
  EXPECT_EQ(RendezvousPodName(job), "mingpt-rendezvous");
  EXPECT_EQ(StoreAddr(job), "mingpt-rendezvous.mingpt.ml.svc");
}

}  // namespace
}  // namespace ddp::plan::testing
