// The CRD schema (crds/ddpjob.yaml) and the C++ API (operator/api) must describe the same
// object: same fields both ways, compatible types, the same defaults and enum values. The chart
// ships a byte-identical copy of the CRD.
#include <functional>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/api/serialize.h"
#include "operator/api/time_format.h"
#include "operator/api/types.h"
#include "tests/delivery/repo_files.h"

namespace ddp::delivery {
namespace {

using nlohmann::json;

const json& Crd() {
  static const json crd = [] {
    auto docs = ReadYamlDocs("crds/ddpjob.yaml");
    return docs.size() == 1 ? docs[0] : json::object();
  }();
  return crd;
}

const json& Schema() {
  static const json schema = Crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  return schema;
}

bool IsOpaque(const json& node) {
  return node.value("x-kubernetes-preserve-unknown-fields", false);
}

// A map (additionalProperties, e.g. a ResourceList): its keys are the user's, not fields.
bool IsMap(const json& node) { return node.contains("additionalProperties"); }

// Field paths of a schema ("spec.elastic.minReplicas", "status.conditions[].type"). Below an
// object that preserves unknown fields, or a map, nothing is listed: that subtree is the user's.
// spec.template is Kubernetes' PodTemplateSpec (scripts/gen_crd_pod_template.py and
// crd_template_schema_test.py check it); the C++ API keeps it as JSON, so it is one leaf here.
constexpr char kTemplatePath[] = "spec.template";

void SchemaPaths(const json& node, const std::string& prefix, std::set<std::string>* out,
                 std::set<std::string>* maps = nullptr) {
  if (IsOpaque(node) || prefix == kTemplatePath) return;
  if (IsMap(node)) {
    if (maps) maps->insert(prefix);
    return;
  }
  if (node.contains("properties")) {
    for (const auto& [key, child] : node["properties"].items()) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      out->insert(path);
      SchemaPaths(child, path, out, maps);
    }
  }
  if (node.value("type", "") == "array" && node.contains("items")) {
    SchemaPaths(node["items"], prefix + "[]", out, maps);
  }
}

// The same paths for a value, not descending into `opaque` paths.
void ValuePaths(const json& v, const std::string& prefix, const std::set<std::string>& opaque,
                std::set<std::string>* out) {
  if (opaque.count(prefix)) return;
  if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      out->insert(path);
      ValuePaths(child, path, opaque, out);
    }
  } else if (v.is_array()) {
    for (const auto& e : v) ValuePaths(e, prefix + "[]", opaque, out);
  }
}

std::set<std::string> CrdPaths() {
  std::set<std::string> paths;
  for (const char* top : {"spec", "status"}) {
    paths.insert(top);
    SchemaPaths(Schema()["properties"][top], top, &paths);
  }
  return paths;
}

// Paths below which a value's keys are not fields: the template and the schema's maps.
std::set<std::string> OpaquePaths() {
  std::set<std::string> ignored, maps = {"spec.template"};
  for (const char* top : {"spec", "status"}) {
    SchemaPaths(Schema()["properties"][top], top, &ignored, &maps);
  }
  return maps;
}

std::set<std::string> ApiPaths(const api::DDPJob& job) {
  json obj = api::ToJson(job);
  std::set<std::string> paths;
  for (const char* top : {"spec", "status"}) {
    paths.insert(top);
    ValuePaths(obj[top], top, OpaquePaths(), &paths);
  }
  return paths;
}

std::string Diff(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const auto& p : a) {
    if (!b.count(p)) out += "  " + p + "\n";
  }
  return out;
}

// Every field of the C++ types set to a non-default value, every optional present.
api::DDPJob FullyPopulatedJob() {
  api::DDPJob job;
  job.name = "full";
  job.namespace_name = "ml";
  api::DDPJobSpec& s = job.spec;
  s.replicas = 4;
  s.nproc_per_node = 8;
  s.elastic = api::ElasticPolicy{2, 8, 60};
  s.elastic->batch_policy = api::BatchPolicy::kConstantPerRank;
  s.elastic->global_batch_size = 960;
  s.rendezvous = {29501, 300};
  s.failure_policy.restart_policy = api::RestartPolicy::kExitCode;
  s.failure_policy.max_restarts = 5;
  s.failure_policy.retryable_exit_codes = {75, 76};
  s.failure_policy.recovery = api::Recovery::kInPlace;
  s.failure_policy.hang_timeout_seconds = 1800;
  s.failure_policy.spares = 2;
  s.failure_policy.liveness_timeout_seconds = 5;
  s.run_policy = {3600, 600, true, api::CleanPodPolicy::kAll, api::SchedulingPolicy{}, false};
  s.run_policy.scheduling_policy =
      api::SchedulingPolicy{4, "research", "high", {{"cpu", "32"}}, 120};
  s.checkpoint.path = "/checkpoints";
  s.metrics.port = 9401;
  s.pod_template = {{"spec", {{"containers", {{{"name", "worker"}, {"image", "w"}}}}}}};
  const api::TimePoint t = api::TruncateToSeconds(std::chrono::system_clock::now());
  api::DDPJobStatus& st = job.status;
  st.phase = api::kPhaseRunning;
  st.conditions.push_back({api::kCondRunning, "True", "AllPodsRunning", "4/4 running", t, 3});
  st.observed_generation = 3;
  st.replicas = 4;
  st.ready_replicas = 4;
  st.world_size = 32;
  st.round = 2;
  st.restarts = 1;
  st.disruptions = 1;
  st.recoveries = 1;
  st.spares = 2;
  st.ready_spares = 1;
  st.silent_pods_held = 3;
  st.last_failure = api::LastFailure{"full-worker-1", 1, 75, "Error", "peer lost", t, "uid-1", 12.5};
  st.progress = api::Progress{120, 400, 2.5, 1500.5, 140, t, 2};
  st.suspect_nodes = {api::SuspectNode{"node-3", t}};
  st.counted_pods = {"full-worker-0/uid-0", "full-worker-1/uid-1"};
  st.rendezvous_uid = "uid-r";
  api::Incident inc;
  inc.kind = api::kIncidentTrainerExit;
  inc.pod = "full-worker-1";
  inc.pod_uid = "uid-1";
  inc.node = "node-3";
  inc.rank = 1;
  inc.round = 2;
  inc.incarnation = 1;
  inc.local_rank = 0;
  inc.time = t;
  inc.step = 110;
  inc.detection_seconds = 0.25;
  inc.stall_seconds = 1.5;
  inc.steps_lost = 0;
  inc.outcome = api::kOutcomeHealedInPlace;
  inc.source = api::kSourceWorkers;
  inc.message = "rank 1's trainer exited";
  st.incidents = {inc};
  st.incidents_total = 3;
  st.goodput = api::Goodput{12.5, 1.7e9, 1.7e9, 0.75, 0.125};
  st.selector = "ddp.dev/job-name=full";
  st.start_time = t;
  st.completion_time = t;
  return job;
}

// A value the schema accepts, with every declared property present.
const json& TemplateSchema() { return Schema()["properties"]["spec"]["properties"]["template"]; }

json ExampleFromSchema(const json& node) {
  if (&node == &TemplateSchema()) {
    return {{"spec", {{"containers", {{{"name", "worker"}, {"image", "w"}}}}}}};
  }
  if (node.contains("enum")) return node["enum"][0];
  if (node.value("x-kubernetes-int-or-string", false)) return "8";
  if (IsMap(node)) return {{"example", ExampleFromSchema(node["additionalProperties"])}};
  const std::string type = node.value("type", "");
  if (type == "object") {
    json out = json::object();
    if (node.contains("properties")) {
      for (const auto& [key, child] : node["properties"].items()) out[key] = ExampleFromSchema(child);
    }
    return out;
  }
  if (type == "array") return json::array({ExampleFromSchema(node["items"])});
  if (type == "integer") {
    int64_t v = node.contains("minimum") ? node["minimum"].get<int64_t>() + 1 : 7;
    if (node.contains("maximum")) v = std::min(v, node["maximum"].get<int64_t>());
    return v;
  }
  if (type == "boolean") return true;
  if (type == "number") return 7.5;
  if (type == "string") {
    if (node.value("format", "") == "date-time") return "2024-05-06T07:08:09Z";
    if (node.value("pattern", "") == "^/") return "/data";
    return "text";
  }
  ADD_FAILURE() << "schema node without a type the test knows: " << node.dump();
  return nullptr;
}

TEST(CrdApiSync, ChartCarriesTheSameCrd) {
  EXPECT_TRUE(ReadSource("crds/ddpjob.yaml") == ReadSource("charts/ddp-operator/crds/ddpjob.yaml"))
      << "the chart's CRD differs: copy crds/ddpjob.yaml to charts/ddp-operator/crds/ddpjob.yaml";
}

TEST(CrdApiSync, NamesMatchTheApi) {
  const json& spec = Crd()["spec"];
  EXPECT_EQ(spec["group"], api::kGroup);
  EXPECT_EQ(spec["names"]["kind"], api::kKind);
  EXPECT_EQ(spec["names"]["plural"], api::kPlural);
  EXPECT_EQ(Crd()["metadata"]["name"], std::string(api::kPlural) + "." + api::kGroup);
  EXPECT_EQ(spec["scope"], "Namespaced");
  EXPECT_EQ(spec["names"]["shortNames"], json::array({"ddpj"}));
  EXPECT_EQ(spec["names"]["categories"], json::array({"all"}));
  ASSERT_EQ(spec["versions"].size(), 1u);
  EXPECT_EQ(spec["versions"][0]["name"], api::kVersion);
  EXPECT_TRUE(spec["versions"][0]["storage"].get<bool>());
}

// Both directions at once: a fully populated C++ job serializes to exactly the schema's fields.
TEST(CrdApiSync, EveryFieldOfTheApiIsInTheSchemaAndBack) {
  const std::set<std::string> crd = CrdPaths();
  const std::set<std::string> cpp = ApiPaths(FullyPopulatedJob());
  EXPECT_EQ(Diff(cpp, crd), "") << "fields the C++ API writes but the CRD schema lacks "
                                   "(the API server would prune them)";
  EXPECT_EQ(Diff(crd, cpp), "") << "fields in the CRD schema that the C++ API never writes";
}

// A value built from the schema alone parses (types agree) and no field is lost on the way back.
TEST(CrdApiSync, SchemaExampleRoundTripsThroughTheApi) {
  json obj = {{"apiVersion", api::kApiVersion}, {"kind", api::kKind},
              {"metadata", {{"name", "example"}, {"namespace", "ml"}}}};
  obj["spec"] = ExampleFromSchema(Schema()["properties"]["spec"]);
  obj["status"] = ExampleFromSchema(Schema()["properties"]["status"]);
  auto job = api::ParseDDPJobJson(obj);
  ASSERT_TRUE(job.ok()) << job.status().ToString() << "\nfor " << obj.dump(1);
  job->raw = json::object();  // only what the C++ fields carry
  const std::set<std::string> crd = CrdPaths();
  const std::set<std::string> cpp = ApiPaths(*job);
  EXPECT_EQ(Diff(crd, cpp), "") << "schema fields the C++ parser drops";
  json back = api::ToJson(*job);
  EXPECT_EQ(back["spec"], obj["spec"]);
  EXPECT_EQ(back["status"], obj["status"]);
}

// Every `default` in the spec schema equals the C++ struct default at that path.
TEST(CrdApiSync, DefaultsAgreeWithTheCppDefaults) {
  api::DDPJobSpec spec;
  spec.elastic = api::ElasticPolicy{};
  const json cpp = api::SpecToJson(spec);
  int compared = 0;
  std::function<void(const json&, const json&, const std::string&)> walk =
      [&](const json& node, const json& value, const std::string& path) {
        if (node.contains("default") && !node["default"].is_object()) {
          EXPECT_EQ(node["default"], value) << path << ": CRD default vs C++ default";
          ++compared;
        }
        if (node.contains("properties") && !IsOpaque(node) && path != kTemplatePath) {
          for (const auto& [key, child] : node["properties"].items()) {
            json v = value.is_object() && value.contains(key) ? value[key] : json();
            walk(child, v, path + "." + key);
          }
        }
      };
  walk(Schema()["properties"]["spec"], cpp, "spec");
  EXPECT_GE(compared, 10) << "the schema lost its defaults";
}

TEST(CrdApiSync, EnumsAgreeWithTheCppNames) {
  const json& spec = Schema()["properties"]["spec"]["properties"];
  std::set<std::string> restart, clean;
  for (auto p : {api::RestartPolicy::kOnFailure, api::RestartPolicy::kExitCode,
                 api::RestartPolicy::kNever}) {
    restart.insert(api::RestartPolicyName(p));
  }
  for (auto p : {api::CleanPodPolicy::kNone, api::CleanPodPolicy::kRunning,
                 api::CleanPodPolicy::kAll}) {
    clean.insert(api::CleanPodPolicyName(p));
  }
  EXPECT_EQ(spec["failurePolicy"]["properties"]["restartPolicy"]["enum"].get<std::set<std::string>>(),
            restart);
  EXPECT_EQ(spec["runPolicy"]["properties"]["cleanPodPolicy"]["enum"].get<std::set<std::string>>(),
            clean);
  const std::set<std::string> phases = {api::kPhasePending, api::kPhaseRunning,
                                        api::kPhaseRestarting, api::kPhaseScaling,
                                        api::kPhaseSucceeded, api::kPhaseFailed,
                                        api::kPhaseSuspended};
  EXPECT_EQ(Schema()["properties"]["status"]["properties"]["phase"]["enum"]
                .get<std::set<std::string>>(),
            phases);
}

// Unknown fields are refused everywhere but inside the template, where Kubernetes' own schema
// preserves them (the template's metadata, RawExtension); the template itself is strict.
TEST(CrdApiSync, UnknownFieldsArePreservedOnlyInsideTheTemplate) {
  std::vector<std::string> opaque;
  std::function<void(const json&, const std::string&)> walk = [&](const json& node,
                                                                  const std::string& path) {
    if (path.rfind(".spec.template.", 0) == 0) return;
    if (IsOpaque(node)) opaque.push_back(path);
    if (node.contains("properties")) {
      for (const auto& [key, child] : node["properties"].items()) walk(child, path + "." + key);
    }
    if (node.contains("items")) walk(node["items"], path + "[]");
  };
  walk(Schema(), "");
  EXPECT_EQ(opaque, std::vector<std::string>{});
  EXPECT_EQ(TemplateSchema()["type"], "object");
  EXPECT_EQ(TemplateSchema()["properties"]["spec"]["required"], json::array({"containers"}));
  EXPECT_TRUE(TemplateSchema()["properties"]["metadata"].value(
      "x-kubernetes-preserve-unknown-fields", false));
}

// Resolves ".status.replicas" against the schema; nullptr when a segment is missing.
const json* Resolve(const std::string& json_path) {
  const json* node = &Schema();
  std::stringstream ss(json_path.substr(1));
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    // "incidents[-1:]": an element of the list.
    const size_t bracket = seg.find('[');
    const bool element = bracket != std::string::npos;
    if (element) seg = seg.substr(0, bracket);
    if (!node->contains("properties") || !(*node)["properties"].contains(seg)) return nullptr;
    node = &(*node)["properties"][seg];
    if (element) {
      if (!node->contains("items")) return nullptr;
      node = &(*node)["items"];
    }
  }
  return node;
}

TEST(CrdApiSync, ScaleSubresourceAndColumnsPointAtSchemaFields) {
  const json& version = Crd()["spec"]["versions"][0];
  ASSERT_TRUE(version["subresources"].contains("status"));
  const json& scale = version["subresources"]["scale"];
  EXPECT_EQ(scale["specReplicasPath"], ".spec.replicas");
  EXPECT_EQ(scale["statusReplicasPath"], ".status.replicas");
  EXPECT_EQ(scale["labelSelectorPath"], ".status.selector");
  for (const char* key : {"specReplicasPath", "statusReplicasPath"}) {
    const json* n = Resolve(scale[key]);
    ASSERT_NE(n, nullptr) << key;
    EXPECT_EQ((*n)["type"], "integer") << key;
  }
  const json* sel = Resolve(scale["labelSelectorPath"]);
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ((*sel)["type"], "string");

  std::set<std::string> names;
  for (const auto& col : version["additionalPrinterColumns"]) {
    names.insert(col["name"]);
    const std::string path = col["jsonPath"];
    if (path == ".metadata.creationTimestamp") {
      EXPECT_EQ(col["type"], "date");
      continue;
    }
    const json* n = Resolve(path);
    ASSERT_NE(n, nullptr) << "printer column " << col["name"] << ": " << path << " not in schema";
    EXPECT_EQ((*n)["type"], col["type"]) << path;
  }
  // DESIGN.md's columns, and Recoveries and Spares (priority 1: `kubectl get -o wide`).
  EXPECT_EQ(names, (std::set<std::string>{"Phase", "Replicas", "World Size", "Round", "Restarts",
                                          "Recoveries", "Spares", "Step", "ETA", "Stall", "Age"}));
  for (const auto& col : version["additionalPrinterColumns"]) {
    if (col["name"] != "Spares") continue;
    EXPECT_EQ(col["jsonPath"], ".status.readySpares");
    EXPECT_EQ(col.value("priority", 0), 1);
  }
}

// CEL rules cannot run here, but every `self.a.b` they mention must exist where they are declared.
TEST(CrdApiSync, CelRulesReferenceExistingFields) {
  int rules = 0;
  std::function<void(const json&, const std::string&)> walk = [&](const json& node,
                                                                  const std::string& path) {
    if (node.contains("x-kubernetes-validations")) {
      for (const auto& v : node["x-kubernetes-validations"]) {
        ++rules;
        const std::string rule = v["rule"];
        EXPECT_TRUE(v.contains("message")) << path << ": " << rule;
        static const std::regex kRef(R"(self((?:\.[A-Za-z_]\w*)+))");
        for (std::sregex_iterator it(rule.begin(), rule.end(), kRef), end; it != end; ++it) {
          const json* n = &node;
          std::stringstream ss((*it)[1].str().substr(1));
          std::string seg;
          while (std::getline(ss, seg, '.')) {
            ASSERT_TRUE(n->contains("properties") && (*n)["properties"].contains(seg))
                << path << ": rule \"" << rule << "\" uses self" << (*it)[1] << ", unknown field "
                << seg;
            n = &(*n)["properties"][seg];
          }
        }
      }
    }
    if (node.contains("properties")) {
      for (const auto& [key, child] : node["properties"].items()) walk(child, path + "." + key);
    }
  };
  walk(Schema(), "");
  EXPECT_GE(rules, 3);
}

}  // namespace
}  // namespace ddp::delivery
