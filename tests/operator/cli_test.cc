// `ddp-operator validate` and `render` as a user runs them: the real binary, real files, stdin.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Runs the binary through the shell; `stdin_text` (if any) is fed from a temporary file.
Result RunOperator(const std::string& args, const std::string& stdin_text = "") {
  std::string cmd = Quote(DDP_OPERATOR_BIN) + " " + args + " 2>&1";
  std::string tmp;
  if (!stdin_text.empty()) {
    tmp = ::testing::TempDir() + "ddp_cli_stdin_" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(tmp) << stdin_text;
    cmd += " < " + Quote(tmp);
  }
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!tmp.empty()) std::remove(tmp.c_str());
  return r;
}

const std::string kExample = std::string(DDP_EXAMPLES_DIR) + "/mingpt-cpu.yaml";

const char kTwoJobs[] = R"(apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {name: alpha}
spec:
  replicas: 2
  template: {spec: {containers: [{name: worker, image: w}]}}
---
apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {name: beta, namespace: ml}
spec:
  replicas: 3
  nprocPerNode: 8
  template: {spec: {containers: [{name: worker, image: w}]}}
)";

TEST(ValidateCommand, ExampleIsValid) {
  const Result r = RunOperator("validate -f " + Quote(kExample));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 DDPJob document valid"), std::string::npos) << r.out;
}

TEST(ValidateCommand, EachProblemOnItsOwnLinePrefixedWithTheDocument) {
  const std::string bad = std::string(kTwoJobs) +
                          "---\napiVersion: ddp.dev/v1alpha1\nkind: DDPJob\n"
                          "metadata: {name: Gamma}\nspec: {replicas: 0, template: {spec: "
                          "{containers: [{name: worker}]}}}\n";
  const Result r = RunOperator("validate -f -", bad);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("document 3 (Gamma): metadata.name (\"Gamma\") must be a DNS-1035 label"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ndocument 3 (Gamma): spec.replicas (0) must be >= 1\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("document 1"), std::string::npos) << r.out;
}

TEST(ValidateCommand, ParseErrorNamesTheField) {
  const Result r = RunOperator("validate -f -", "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\n"
                                         "metadata: {name: a}\nspec: {replicas: many}\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("document 1 (a): spec.replicas: expected an integer, got \"many\""),
            std::string::npos) << r.out;
}

TEST(ValidateCommand, MissingFileAndUsageErrors) {
  Result r = RunOperator("validate -f /nonexistent/job.yaml");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot open /nonexistent/job.yaml"), std::string::npos) << r.out;
  r = RunOperator("validate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("-f FILE is required"), std::string::npos) << r.out;
  r = RunOperator("validate --bogus");
  EXPECT_EQ(r.code, 2);
}

TEST(ValidateCommand, OtherKindsAreSkippedAndApiVersionIsRequired) {
  const std::string pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n---\n";
  Result r = RunOperator("validate -f -", pvc + kTwoJobs);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("document 1 (data): kind PersistentVolumeClaim is not a DDPJob; skipped"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 DDPJob documents valid"), std::string::npos) << r.out;
  // A file of other kinds only (examples/*-pvc.yaml) holds no DDPJob to refuse: valid, said so.
  r = RunOperator("validate -f -", pvc);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no DDPJob documents (1 of other kinds skipped): nothing to refuse"),
            std::string::npos) << r.out;
  r = RunOperator("validate -f -", "# nothing\n");
  EXPECT_EQ(r.code, 1) << r.out;
  r = RunOperator("validate -f -", "kind: DDPJob\nmetadata: {name: a}\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("document 1 (a): apiVersion is required (expected \"ddp.dev/v1alpha1\")"),
            std::string::npos) << r.out;
}

// `kubectl get ddpj -A -o yaml` is a v1 List: each item is checked as a document of its own,
// named by its namespace and name; an empty List has nothing to refuse.
TEST(ValidateCommand, ReadsAListItemByItem) {
  const std::string list = R"(apiVersion: v1
kind: List
items:
- apiVersion: ddp.dev/v1alpha1
  kind: DDPJob
  metadata: {name: good, namespace: ml, uid: u1}
  spec: {replicas: 2, template: {spec: {containers: [{name: worker, image: w}]}}}
  status: {phase: Running, round: 3}
- apiVersion: ddp.dev/v1alpha1
  kind: DDPJob
  metadata: {name: bad, namespace: team}
  spec: {replicas: 0, template: {spec: {containers: [{name: worker, image: w}]}}}
metadata: {resourceVersion: ""}
)";
  Result r = RunOperator("validate -f -", list);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("document 1, item 2 (team/bad): spec.replicas (0) must be >= 1"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("item 1"), std::string::npos) << r.out;
  const std::string good = list.substr(0, list.find("- apiVersion", list.find("status:")));
  r = RunOperator("validate -f -", good + "metadata: {resourceVersion: \"\"}\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 DDPJob document valid"), std::string::npos) << r.out;
  r = RunOperator("validate -f -", "apiVersion: v1\nkind: List\nitems: []\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("a List with no items"), std::string::npos) << r.out;
  r = RunOperator("validate -f -", "apiVersion: v1\nkind: List\nitems: {a: 1}\n");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("items of a List must be a list"), std::string::npos) << r.out;
}

// A misspelt kind is not another kind to skip: it would pass unchecked.
TEST(ValidateCommand, AMisspeltDDPJobIsAnError) {
  for (const char* doc : {"apiVersion: ddp.dev/v1alpha1\nkind: DDPjob\nmetadata: {name: a}\n",
                          "apiVersion: ddp.dev/v1alpha1\nkind: Job\nmetadata: {name: a}\n",
                          "apiVersion: batch/v1\nkind: ddpjob\nmetadata: {name: a}\n"}) {
    const Result r = RunOperator("validate -f -", doc);
    EXPECT_EQ(r.code, 1) << doc << r.out;
    EXPECT_NE(r.out.find("did you mean DDPJob?"), std::string::npos) << r.out;
  }
}

// Strict field validation, as the API server's: validate, render and local refuse a misspelt
// field, naming its path and the field meant (docs-2026-12-06 U4), and run nothing.
TEST(StrictFields, ValidateRenderAndLocalRefuseAMisspeltField) {
  std::string job = kTwoJobs;
  job = job.substr(0, job.find("---"));
  job.replace(job.find("  replicas: 2\n"), 14, "  replicas: 2\n  failurePolicy: {recovry: InPlace}\n");
  const std::string want =
      "unknown field \"spec.failurePolicy.recovry\" (did you mean recovery?)";
  Result r = RunOperator("validate -f -", job);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("document 1 (alpha): " + want), std::string::npos) << r.out;
  r = RunOperator("render -f -", job);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kind: Pod"), std::string::npos) << "rendered anyway:\n" << r.out;
  const std::string file = ::testing::TempDir() + "ddp_cli_strict_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << job;
  r = RunOperator("local -f " + Quote(file));
  std::remove(file.c_str());
  EXPECT_EQ(r.code, 2) << r.out;  // `local --help`: 2 is an invalid manifest
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
}

TEST(RenderCommand, JsonListHasServiceAndPodsOfEveryDocument) {
  const Result r = RunOperator("render -f - -o json --round 2 --network-policy=false", kTwoJobs);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto list = nlohmann::json::parse(r.out);
  ASSERT_EQ(list["kind"], "List");
  const auto& items = list["items"];
  ASSERT_EQ(items.size(), 1u + 2u + 1u + 3u);
  EXPECT_EQ(items[0]["kind"], "Service");
  EXPECT_EQ(items[0]["metadata"]["name"], "alpha");
  EXPECT_EQ(items[3]["kind"], "Service");  // alpha: Service + 2 pods, then beta
  const auto& last = items[6];
  EXPECT_EQ(last["metadata"]["name"], "beta-worker-2");
  EXPECT_EQ(last["metadata"]["namespace"], "ml");
  EXPECT_EQ(last["metadata"]["labels"]["ddp.dev/round"], "2");
  std::map<std::string, std::string> env;
  for (const auto& e : last["spec"]["containers"][0]["env"]) env[e["name"]] = e["value"];
  EXPECT_EQ(env["MASTER_ADDR"], "beta-worker-0.beta.ml.svc");
  EXPECT_EQ(env["WORLD_SIZE"], "24");
  EXPECT_EQ(env["NODE_RANK"], "2");
  EXPECT_EQ(env["DDP_ROUND"], "2");
  EXPECT_EQ(env.count("RANK"), 0u);  // nprocPerNode 8: the launcher sets it
}

TEST(RenderCommand, YamlOfTheExampleMatchesDesignEnv) {
  const Result r = RunOperator("render -f " + Quote(kExample));
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* want :
       {"kind: Service", "clusterIP: None", "publishNotReadyAddresses: true",
        "name: mingpt-cpu-worker-1", "restartPolicy: Never", "subdomain: mingpt-cpu",
        "value: mingpt-cpu-worker-0.mingpt-cpu.default.svc", "name: DDP_CHECKPOINT_DIR"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want;
  }
}

// The issue's acceptance check: every example renders, and every pod carries DESIGN.md's env.
TEST(RenderCommand, EveryExampleRendersPodsWithTheDesignEnv) {
  int rendered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DDP_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    const Result r = RunOperator("render -o json -f " + Quote(entry.path().string()));
    ASSERT_EQ(r.code, 0) << entry.path() << "\n" << r.out;
    if (r.out.find("no DDPJob documents") != std::string::npos) continue;  // e.g. a PVC
    const auto list = nlohmann::json::parse(r.out);
    for (const auto& obj : list["items"]) {
      // Worker pods carry the whole env contract; InPlace's rendezvous and spare pods a part.
      if (obj["kind"] != "Pod" || obj["metadata"]["labels"]["ddp.dev/role"] != "worker") continue;
      const auto& containers = obj["spec"]["containers"];
      nlohmann::json worker = containers[0];
      for (const auto& c : containers) if (c["name"] == "worker") worker = c;
      std::map<std::string, std::string> env;
      for (const auto& e : worker["env"]) env[e["name"]] = e.value("value", "");
      for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NNODES", "NODE_RANK",
                               "NPROC_PER_NODE", "PET_NNODES", "PET_NODE_RANK",
                               "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT",
                               "DDP_JOB_NAME", "DDP_ROUND", "DDP_RENDEZVOUS_TIMEOUT",
                               "DDP_METRICS_PORT", "TORCHELASTIC_RESTART_COUNT"}) {
        EXPECT_EQ(env.count(name), 1u) << entry.path() << " " << obj["metadata"]["name"] << " "
                                       << name;
      }
      const int nnodes = std::stoi(env["NNODES"]), nproc = std::stoi(env["NPROC_PER_NODE"]);
      EXPECT_EQ(std::stoi(env["WORLD_SIZE"]), nnodes * nproc) << entry.path();
      EXPECT_EQ(env.count("RANK"), nproc == 1 ? 1u : 0u) << entry.path();
      EXPECT_EQ(obj["spec"]["restartPolicy"], "Never");
      ++rendered;
    }
  }
  EXPECT_GT(rendered, 0);
}

// What a gang-scheduled example becomes: the PodGroup first, then pods carrying its keys; a job
// labelled for Kueue renders with Kueue's pod-group keys. The values are those the examples and
// docs/volcano.md, docs/kueue.md state.
TEST(RenderCommand, GangExamplesRenderTheirPodGroupAndKeys) {
  const std::string dir = DDP_EXAMPLES_DIR;
  Result r = RunOperator("render -o json --network-policy=false --gang-scheduler-name volcano -f " +
                         Quote(dir + "/gang-volcano.yaml"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json items = nlohmann::json::parse(r.out)["items"];
  ASSERT_EQ(items.size(), 1u + 1u + 3u);
  EXPECT_EQ(items[0]["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(items[0]["kind"], "PodGroup");
  EXPECT_EQ(items[0]["spec"], nlohmann::json::parse(
                                  R"({"minMember": 3, "queue": "default",
                                      "minResources": {"cpu": "6", "memory": "6Gi"}})"));
  for (size_t i = 2; i < items.size(); ++i) {
    EXPECT_EQ(items[i]["spec"]["schedulerName"], "volcano");
    EXPECT_EQ(items[i]["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "mlp-volcano");
  }
  r = RunOperator("render -o json --network-policy=false --round 2 -f " +
                  Quote(dir + "/gang-kueue.yaml"));
  ASSERT_EQ(r.code, 0) << r.out;
  items = nlohmann::json::parse(r.out)["items"];
  ASSERT_EQ(items.size(), 1u + 3u);
  for (size_t i = 1; i < items.size(); ++i) {
    const auto& meta = items[i]["metadata"];
    EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
    EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/pod-group-name"], "mlp-kueue-r2");
    EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"], "3");
    EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/retriable-in-group"], "false");
  }
  r = RunOperator("render --gang-scheduler-name Volcano -f " + Quote(dir + "/gang-volcano.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--gang-scheduler-name (\"Volcano\") must be a scheduler name"),
            std::string::npos) << r.out;
}

// render shows every object the operator creates for a new job (docs/in-place-recovery.md "The
// pods of an InPlace job", docs/security.md, docs/gang-scheduling.md), in its order, and each
// reference between them points at an object in the output.
TEST(RenderCommand, ShowsEveryObjectTheOperatorCreates) {
  const char kJob[] = R"(apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {name: heal, namespace: ml, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  replicas: 3
  failurePolicy: {recovery: InPlace, spares: 2}
  template: {spec: {containers: [{name: worker, image: ddp-worker-cpu:0.1.0}]}}
)";
  const Result r = RunOperator("render -o json --gang-scheduler-name volcano -f -", kJob);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto items = nlohmann::json::parse(r.out)["items"];
  std::vector<std::string> got;
  for (const auto& o : items) {
    got.push_back(o["kind"].get<std::string>() + " " + o["metadata"]["name"].get<std::string>());
  }
  const std::vector<std::string> want = {
      "PodGroup heal",      "NetworkPolicy heal", "Service heal",       "Pod heal-rendezvous",
      "Pod heal-worker-0",  "Pod heal-worker-1",  "Pod heal-worker-2",  "Pod heal-spare-0",
      "Pod heal-spare-1"};
  ASSERT_EQ(got, want);
  // The gang: the 3 workers and the rendezvous pod must start (minMember); all 6 pods are the
  // Kueue group (3 workers + the rendezvous pod + 2 spares).
  EXPECT_EQ(items[0]["spec"]["minMember"], 3 + 1);
  std::set<std::string> names;
  for (const auto& o : items) names.insert(o["metadata"]["name"].get<std::string>());
  for (size_t i = 3; i < items.size(); ++i) {
    const auto& meta = items[i]["metadata"];
    EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"], "6") << meta["name"];
    EXPECT_EQ(meta["annotations"]["scheduling.k8s.io/group-name"], "heal") << meta["name"];
    // Every pod's store is the rendezvous pod of this output, through this output's Service.
    std::map<std::string, std::string> env;
    for (const auto& e : items[i]["spec"]["containers"][0]["env"]) {
      env[e["name"]] = e.value("value", "");
    }
    EXPECT_EQ(env["DDP_STORE_ADDR"], "heal-rendezvous.heal.ml.svc") << meta["name"];
  }
  EXPECT_EQ(names.count("heal-rendezvous") + names.count("heal"), 2u);
  // The NetworkPolicy admits the job's pods, and the operator's namespace to the metrics port.
  const std::string policy = items[1].dump();
  EXPECT_NE(policy.find(R"("kubernetes.io/metadata.name":"ddp-system")"), std::string::npos) << policy;
  // The operator's flags change what it creates, as they would the operator's.
  Result o = RunOperator("render -o json --operator-namespace ops --metrics-namespace mon -f -", kJob);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto np = nlohmann::json::parse(o.out)["items"][0];
  EXPECT_EQ(np["kind"], "NetworkPolicy");
  EXPECT_NE(np.dump().find(R"("kubernetes.io/metadata.name":"ops")"), std::string::npos);
  EXPECT_NE(np.dump().find(R"("kubernetes.io/metadata.name":"mon")"), std::string::npos);
  o = RunOperator("render -o json --network-policy=false -f -", kJob);
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["items"][0]["kind"], "Service");
  // A job that turns isolation on gets its policy whatever the operator's default.
  std::string on = kJob;
  on.replace(on.find("  template:"), 0, "  runPolicy: {networkPolicy: true}\n");
  o = RunOperator("render -o json --network-policy=false -f -", on);
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["items"][0]["kind"], "NetworkPolicy");
  for (const char* bad : {"--network-policy=maybe", "--operator-namespace Ops"}) {
    EXPECT_EQ(RunOperator(std::string("render ") + bad + " -f -", kJob).code, 2) << bad;
  }
}

// Issue 43's first user: the examples that run the project's images (uid:gid 65532:65532) on a
// shared volume render pods whose group owns that volume, whether the example says so or not.
TEST(RenderCommand, ExamplesOfTheProjectsImagesCanWriteTheirVolumes) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DDP_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    const Result r = RunOperator("render -o json -f " + Quote(entry.path().string()));
    ASSERT_EQ(r.code, 0) << entry.path() << "\n" << r.out;
    if (r.out.find("no DDPJob documents") != std::string::npos) continue;
    const nlohmann::json list = nlohmann::json::parse(r.out);
    for (const auto& obj : list["items"]) {
      if (obj["kind"] != "Pod") continue;
      bool claim = false, ours = false;
      for (const auto& v : obj["spec"].value("volumes", nlohmann::json::array())) {
        claim = claim || v.contains("persistentVolumeClaim");
      }
      for (const auto& c : obj["spec"]["containers"]) {
        const std::string image = c.value("image", "");
        ours = ours || image.rfind("ddp-worker:", 0) == 0 || image.rfind("ddp-worker-cpu:", 0) == 0;
      }
      if (!claim || !ours) continue;
      EXPECT_EQ(obj["spec"]["securityContext"].value("fsGroup", -1), 65532)
          << entry.path() << " " << obj["metadata"]["name"];
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);  // gpt2-shards, torchscript-model, mingpt-inplace, mingpt-kind, ...
}

TEST(RenderCommand, InvalidManifestAndBadFlags) {
  Result r = RunOperator("render -f -", "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n"
                                "spec: {replicas: 1}\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("at least one container is required"), std::string::npos) << r.out;
  r = RunOperator("render -f - -o xml", kTwoJobs);
  EXPECT_EQ(r.code, 2);
  r = RunOperator("render -f - --round -1", kTwoJobs);
  EXPECT_EQ(r.code, 2);
}

// The report's hostile manifests: validate names every field, render refuses with exit 1 (it
// aborted with 134), and the YAML reader refuses an alias bomb instead of growing to gigabytes.
TEST(HostileManifests, ValidateNamesTheFieldsAndRenderRefuses) {
  const char kBad[] = R"(apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {name: bad}
spec:
  template:
    spec:
      containers:
        - name: worker
          image: w
          ports: [{containerPort: "9000"}, {name: 7, containerPort: 9001}]
          env: [{name: 5}]
)";
  const std::string c0 = "document 1 (bad): spec.template.spec.containers[0].";
  for (const char* cmd : {"validate -f -", "render -f -", "render -f - -o json"}) {
    Result r = RunOperator(cmd, kBad);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    for (const std::string& line :
         {c0 + "ports[0].containerPort: want an integer, got a string \"9000\"\n",
          c0 + "ports[1].name: want a string, got an integer 7\n",
          c0 + "env[0].name: want a string, got an integer 5\n"}) {
      EXPECT_NE(r.out.find(line), std::string::npos) << cmd << ": " << line << "\n" << r.out;
    }
  }
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const std::string p = std::string("*") + static_cast<char>(c - 1);
    laughs += std::string(1, c) + ": &" + c + " [" + p;
    for (int k = 1; k < 10; ++k) laughs += ", " + p;
    laughs += "]\n";
  }
  Result r = RunOperator("validate -f -", laughs);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("expands to more than"), std::string::npos) << r.out;
}

}  // namespace
