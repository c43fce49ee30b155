// BuildWorkerPod / BuildService / RendezvousEnv. Expected env values are written from DESIGN.md's
// table by hand, not from program output.
#include <gtest/gtest.h>

#include <algorithm>

#include "operator/plan/builders.h"
#include "operator/plan/env.h"
#include "operator/plan/names.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;
using Env = std::vector<std::pair<std::string, std::string>>;

Env WorkerEnv(const json& pod) {
  Env out;
  const int w = WorkerContainerIndex(pod["spec"]);
  for (const auto& e : pod["spec"]["containers"][w]["env"]) {
    out.emplace_back(e["name"].get<std::string>(), e.value("value", std::string("<from>")));
  }
  return out;
}

api::DDPJob JobWithCheckpoint(int replicas, int nproc) {
  api::DDPJob j = Job(replicas);
  j.spec.nproc_per_node = nproc;
  j.spec.checkpoint.path = "/ckpt";
  return j;
}

const char kMaster[] = "mingpt-worker-0.mingpt.ml.svc";

TEST(RendezvousEnv, Rank0WithOneProcessPerPod) {
  const json pod = BuildWorkerPod(JobWithCheckpoint(4, 1), 0, 2, 4);
  const Env want = {
      {"MASTER_ADDR", kMaster}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "4"},
      {"NNODES", "4"}, {"NODE_RANK", "0"}, {"NPROC_PER_NODE", "1"},
      {"RANK", "0"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
      {"PET_NNODES", "4"}, {"PET_NODE_RANK", "0"}, {"PET_NPROC_PER_NODE", "1"},
      {"PET_MASTER_ADDR", kMaster}, {"PET_MASTER_PORT", "29500"},
      {"DDP_JOB_NAME", "mingpt"}, {"DDP_ROUND", "2"}, {"DDP_RENDEZVOUS_TIMEOUT", "600"},
      {"DDP_CHECKPOINT_DIR", "/ckpt/ml/mingpt"}, {"DDP_CHECKPOINT_JOB", "ml/mingpt"},
      {"DDP_METRICS_PORT", "9400"},
      {"TORCHELASTIC_RESTART_COUNT", "2"},
      {"DDP_RECOVERY", "Restart"}, {"DDP_MAX_RECOVERIES", "3"},
      {"DDP_TERMINATION_LOG", "/dev/termination-log"}};
  EXPECT_EQ(WorkerEnv(pod), want);
}

TEST(RendezvousEnv, LastRankWithOneProcessPerPod) {
  const json pod = BuildWorkerPod(JobWithCheckpoint(4, 1), 3, 0, 4);
  const Env want = {
      {"MASTER_ADDR", kMaster}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "4"},
      {"NNODES", "4"}, {"NODE_RANK", "3"}, {"NPROC_PER_NODE", "1"},
      {"RANK", "3"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
      {"PET_NNODES", "4"}, {"PET_NODE_RANK", "3"}, {"PET_NPROC_PER_NODE", "1"},
      {"PET_MASTER_ADDR", kMaster}, {"PET_MASTER_PORT", "29500"},
      {"DDP_JOB_NAME", "mingpt"}, {"DDP_ROUND", "0"}, {"DDP_RENDEZVOUS_TIMEOUT", "600"},
      {"DDP_CHECKPOINT_DIR", "/ckpt/ml/mingpt"}, {"DDP_CHECKPOINT_JOB", "ml/mingpt"},
      {"DDP_METRICS_PORT", "9400"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"DDP_RECOVERY", "Restart"}, {"DDP_MAX_RECOVERIES", "3"},
      {"DDP_TERMINATION_LOG", "/dev/termination-log"}};
  EXPECT_EQ(WorkerEnv(pod), want);
}

// With 8 processes per pod the launcher sets RANK/LOCAL_RANK/LOCAL_WORLD_SIZE per process.
TEST(RendezvousEnv, Rank0WithEightProcessesPerPod) {
  const json pod = BuildWorkerPod(JobWithCheckpoint(2, 8), 0, 1, 2);
  const Env want = {
      {"MASTER_ADDR", kMaster}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "16"},
      {"NNODES", "2"}, {"NODE_RANK", "0"}, {"NPROC_PER_NODE", "8"},
      {"PET_NNODES", "2"}, {"PET_NODE_RANK", "0"}, {"PET_NPROC_PER_NODE", "8"},
      {"PET_MASTER_ADDR", kMaster}, {"PET_MASTER_PORT", "29500"},
      {"DDP_JOB_NAME", "mingpt"}, {"DDP_ROUND", "1"}, {"DDP_RENDEZVOUS_TIMEOUT", "600"},
      {"DDP_CHECKPOINT_DIR", "/ckpt/ml/mingpt"}, {"DDP_CHECKPOINT_JOB", "ml/mingpt"},
      {"DDP_METRICS_PORT", "9400"},
      {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"DDP_RECOVERY", "Restart"}, {"DDP_MAX_RECOVERIES", "3"},
      {"DDP_TERMINATION_LOG", "/dev/termination-log"}};
  EXPECT_EQ(WorkerEnv(pod), want);
}

TEST(RendezvousEnv, LastRankWithEightProcessesPerPod) {
  api::DDPJob job = Job(3);
  job.spec.nproc_per_node = 8;
  job.spec.rendezvous = {29600, 120};
  job.spec.metrics.port = 9500;
  const json pod = BuildWorkerPod(job, 2, 5, 3);
  const Env want = {
      {"MASTER_ADDR", kMaster}, {"MASTER_PORT", "29600"}, {"WORLD_SIZE", "24"},
      {"NNODES", "3"}, {"NODE_RANK", "2"}, {"NPROC_PER_NODE", "8"},
      {"PET_NNODES", "3"}, {"PET_NODE_RANK", "2"}, {"PET_NPROC_PER_NODE", "8"},
      {"PET_MASTER_ADDR", kMaster}, {"PET_MASTER_PORT", "29600"},
      {"DDP_JOB_NAME", "mingpt"}, {"DDP_ROUND", "5"}, {"DDP_RENDEZVOUS_TIMEOUT", "120"},
      {"DDP_METRICS_PORT", "9500"}, {"TORCHELASTIC_RESTART_COUNT", "5"},
      {"DDP_RECOVERY", "Restart"}, {"DDP_MAX_RECOVERIES", "3"},
      {"DDP_TERMINATION_LOG", "/dev/termination-log"}};
  EXPECT_EQ(WorkerEnv(pod), want);
}

// DDP_MAX_RECOVERIES is what is left of maxRestarts after the restarts and recoveries so far,
// never negative; DDP_RECOVERY names the spec's recovery mode. Both follow
// TORCHELASTIC_RESTART_COUNT; recovery InPlace adds its own after them (group_builders_test.cc).
TEST(RendezvousEnv, RecoveryModeAndBudgetLeft) {
  struct Case { int max_restarts, restarts, recoveries; const char* want; };
  const Case cases[] = {{3, 0, 0, "3"}, {5, 1, 2, "2"}, {3, 2, 1, "0"}, {2, 3, 4, "0"}};
  for (api::Recovery mode : {api::Recovery::kRestart, api::Recovery::kInPlace}) {
    for (const auto& c : cases) {
      api::DDPJob job = Job(3);
      job.spec.failure_policy.recovery = mode;
      job.spec.failure_policy.max_restarts = c.max_restarts;
      job.status.restarts = c.restarts;
      job.status.recoveries = c.recoveries;
      const Env env = WorkerEnv(BuildWorkerPod(job, 1, 0, 3));
      auto at = std::find(env.begin(), env.end(),
                          Env::value_type{"TORCHELASTIC_RESTART_COUNT", "0"});
      ASSERT_GE(std::distance(at, env.end()), 3) << "TORCHELASTIC_RESTART_COUNT missing or last";
      const Env two(at + 1, at + 3);
      const char* name = mode == api::Recovery::kInPlace ? "InPlace" : "Restart";
      EXPECT_EQ(two, (Env{{"DDP_RECOVERY", name}, {"DDP_MAX_RECOVERIES", c.want}}))
          << name << " " << c.max_restarts << " " << c.restarts << " " << c.recoveries;
    }
  }
}

// spec.elastic's batch policy reaches the trainer: the policy, and for ConstantGlobal either the
// explicit global batch or the ranks whose batches make it (maxReplicas x nprocPerNode). Without
// elastic, none of the three is set (the trainer's default: each rank's batch fixed).
TEST(RendezvousEnv, BatchPolicyFromElastic) {
  auto batch_env = [](const api::DDPJob& job) {
    Env out;
    for (const auto& [n, v] : WorkerEnv(BuildWorkerPod(job, 0, 0, job.spec.replicas))) {
      if (n == "DDP_BATCH_POLICY" || n.rfind("DDP_GLOBAL_BATCH_", 0) == 0) out.emplace_back(n, v);
    }
    return out;
  };
  api::DDPJob job = JobWithCheckpoint(2, 4);
  EXPECT_EQ(batch_env(job), Env{});
  job.spec.elastic = api::ElasticPolicy{1, 3, 120};  // ConstantGlobal by default
  EXPECT_EQ(batch_env(job),
            (Env{{"DDP_BATCH_POLICY", "ConstantGlobal"}, {"DDP_GLOBAL_BATCH_RANKS", "12"}}));
  job.spec.elastic->global_batch_size = 96;
  EXPECT_EQ(batch_env(job),
            (Env{{"DDP_BATCH_POLICY", "ConstantGlobal"}, {"DDP_GLOBAL_BATCH_SIZE", "96"}}));
  job.spec.elastic->global_batch_size.reset();
  job.spec.elastic->batch_policy = api::BatchPolicy::kConstantPerRank;
  EXPECT_EQ(batch_env(job), (Env{{"DDP_BATCH_POLICY", "ConstantPerRank"}}));
}

TEST(RendezvousEnv, LocalModeOverridesMasterAndPorts) {
  api::DDPJob job = Job(2);
  PodOverrides o;
  o.master_addr = "127.0.0.1";
  o.master_port = 40001;
  o.metrics_port = 40100;
  const Env env = WorkerEnv(BuildWorkerPod(job, 1, 0, 2, o));
  auto value = [&](const std::string& k) {
    for (const auto& [n, v] : env) if (n == k) return v;
    return std::string("<unset>");
  };
  EXPECT_EQ(value("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(value("PET_MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(value("MASTER_PORT"), "40001");
  EXPECT_EQ(value("PET_MASTER_PORT"), "40001");
  EXPECT_EQ(value("DDP_METRICS_PORT"), "40100");
  const auto direct = RendezvousEnv(job, 1, 0, 2, "127.0.0.1", 40001);
  EXPECT_EQ(direct[0], (std::pair<std::string, std::string>{"MASTER_ADDR", "127.0.0.1"}));
}

TEST(BuildWorkerPod, MergesIntoTheTemplateWithoutDroppingUserFields) {
  api::DDPJob job = Job(2);
  job.spec.pod_template = json::parse(R"({
    "metadata": {"labels": {"team": "nlp", "ddp.dev/round": "spoofed"},
                 "annotations": {"sidecar.istio.io/inject": "false"}},
    "spec": {
      "nodeSelector": {"gpu": "h100"},
      "tolerations": [{"key": "gpu", "operator": "Exists"}],
      "affinity": {"podAntiAffinity": {}},
      "volumes": [{"name": "data", "emptyDir": {}}],
      "restartPolicy": "Always",
      "futureField": {"x": 1},
      "containers": [
        {"name": "log-shipper", "image": "busybox", "env": [{"name": "RANK", "value": "x"}]},
        {"name": "worker", "image": "ddp-worker:1", "resources": {"limits": {"cpu": "2"}},
         "env": [{"name": "OMP_NUM_THREADS", "value": "4"},
                 {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
         "ports": [{"name": "metrics", "containerPort": 9400}],
         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}})");
  const json pod = BuildWorkerPod(job, 1, 3, 2);
  const json& meta = pod["metadata"];
  EXPECT_EQ(meta["name"], "mingpt-worker-1");
  EXPECT_EQ(meta["namespace"], "ml");
  EXPECT_EQ(meta["labels"]["team"], "nlp");
  EXPECT_EQ(meta["labels"][api::kJobNameLabel], "mingpt");
  EXPECT_EQ(meta["labels"][api::kReplicaIndexLabel], "1");
  EXPECT_EQ(meta["labels"][api::kRoundLabel], "3");  // ours win over a user's copy
  EXPECT_EQ(meta["annotations"]["sidecar.istio.io/inject"], "false");
  ASSERT_EQ(meta["ownerReferences"].size(), 1u);
  EXPECT_EQ(meta["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(meta["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(meta["ownerReferences"][0]["kind"], "DDPJob");

  const json& spec = pod["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["hostname"], "mingpt-worker-1");
  EXPECT_EQ(spec["subdomain"], "mingpt");
  EXPECT_EQ(spec["nodeSelector"]["gpu"], "h100");
  EXPECT_EQ(spec["tolerations"].size(), 1u);
  EXPECT_TRUE(spec.contains("affinity"));
  EXPECT_EQ(spec["volumes"][0]["name"], "data");
  EXPECT_EQ(spec["futureField"]["x"], 1);
  ASSERT_EQ(spec["containers"].size(), 2u);
  // The sidecar is untouched: not our env, and its own RANK is its business.
  EXPECT_EQ(spec["containers"][0], job.spec.pod_template["spec"]["containers"][0]);
  const json& worker = spec["containers"][1];
  EXPECT_EQ(worker["resources"]["limits"]["cpu"], "2");
  EXPECT_EQ(worker["volumeMounts"][0]["mountPath"], "/data");
  const json& env = worker["env"];
  // Ours first (21 with nprocPerNode 1 and no checkpoint path, and DDP_TERMINATION_LOG), then
  // the user's.
  ASSERT_EQ(env.size(), 22u + 2u);
  EXPECT_EQ(env[0]["name"], "MASTER_ADDR");
  EXPECT_EQ(env[21]["name"], "DDP_TERMINATION_LOG");
  EXPECT_EQ(env[22]["name"], "OMP_NUM_THREADS");
  EXPECT_EQ(env[23]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
  // The user's metrics port entry is kept and not duplicated; the rendezvous port is added.
  ASSERT_EQ(worker["ports"].size(), 2u);
  EXPECT_EQ(worker["ports"][0]["name"], "metrics");
  EXPECT_EQ(worker["ports"][1]["name"], "rendezvous");
  EXPECT_EQ(worker["ports"][1]["containerPort"], 29500);
}

TEST(BuildWorkerPod, FirstContainerGetsEnvWhenNoneIsNamedWorker) {
  api::DDPJob job = Job(1);
  job.spec.pod_template = {{"spec", {{"containers", {{{"name", "trainer"}}, {{"name", "b"}}}}}}};
  const json pod = BuildWorkerPod(job, 0, 0, 1);
  EXPECT_TRUE(pod["spec"]["containers"][0].contains("env"));
  EXPECT_FALSE(pod["spec"]["containers"][1].contains("env"));
}

// The kubelet reads a container's termination message at its terminationMessagePath; the worker
// writes ddp-worker's `Finished` to DDP_TERMINATION_LOG: the same path, whatever the template.
TEST(BuildWorkerPod, TheTerminationLogIsTheContainersTerminationMessagePath) {
  auto log_of = [](const json& pod) {
    for (const auto& [name, value] : WorkerEnv(pod)) {
      if (name == "DDP_TERMINATION_LOG") return value;
    }
    return std::string("<unset>");
  };
  api::DDPJob job = InPlace(Job(2));
  EXPECT_EQ(log_of(BuildWorkerPod(job, 0, 0, 2)), "/dev/termination-log");  // Kubernetes' default
  job.spec.pod_template["spec"]["containers"][0]["terminationMessagePath"] = "/var/run/msg";
  const json pod = BuildWorkerPod(job, 1, 0, 2);
  EXPECT_EQ(log_of(pod), "/var/run/msg");
  EXPECT_EQ(pod["spec"]["containers"][0]["terminationMessagePath"], "/var/run/msg");  // kept
  EXPECT_EQ(log_of(BuildSparePod(job, 0, 0, 2)), "/var/run/msg");
  // The rendezvous pod's container is the operator's own: Kubernetes' default path.
  const json rdzv = BuildRendezvousPod(job, 0, 2);
  EXPECT_FALSE(rdzv["spec"]["containers"][0].contains("terminationMessagePath"));
  EXPECT_EQ(log_of(rdzv), "/dev/termination-log");
  // Only the worker container's path counts; a sidecar's is its own.
  job.spec.pod_template["spec"]["containers"] = json::array(
      {{{"name", "shipper"}, {"image", "s"}, {"terminationMessagePath", "/shipper/msg"}},
       {{"name", "worker"}, {"image", "w"}}});
  EXPECT_EQ(log_of(BuildWorkerPod(job, 0, 0, 2)), "/dev/termination-log");
  job = Job(2);  // Restart: the same
  job.spec.pod_template["spec"]["containers"][0]["terminationMessagePath"] = "/logs/end";
  EXPECT_EQ(log_of(BuildWorkerPod(job, 0, 0, 2)), "/logs/end");
}

TEST(BuildService, IsHeadlessPublishesNotReadyAndSelectsTheJob) {
  const json svc = BuildService(Job(3));
  EXPECT_EQ(svc["kind"], "Service");
  EXPECT_EQ(svc["metadata"]["name"], "mingpt");
  EXPECT_EQ(svc["metadata"]["namespace"], "ml");
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["name"], "mingpt");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"], (json{{"ddp.dev/job-name", "mingpt"}}));
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 29500);
}

TEST(BuildService, DryRunJobWithoutUidHasNoOwnerReference) {
  api::DDPJob job = Job(1);
  job.uid.clear();
  EXPECT_FALSE(BuildService(job)["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(BuildWorkerPod(job, 0, 0, 1)["metadata"].contains("ownerReferences"));
}

TEST(Names, FollowDesign) {
  const api::DDPJob job = Job(1);
  EXPECT_EQ(PodName(job, 7), "mingpt-worker-7");
  EXPECT_EQ(ServiceName(job), "mingpt");
  EXPECT_EQ(Selector(job), "ddp.dev/job-name=mingpt");
  EXPECT_EQ(MasterAddr(job), "mingpt-worker-0.mingpt.ml.svc");
}

}  // namespace
}  // namespace ddp::plan::testing
