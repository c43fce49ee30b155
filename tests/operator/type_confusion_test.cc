// Generated type confusion: every JSON path of valid example manifests, each value replaced by
// every other JSON type, goes through parse, Validate, PlanReconcile and the builders. Each must
// end in an error or a plan, never an exception; every object the operator would send must
// serialize; and no object is built from a template that ParsePodTemplate refuses.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "operator/api/pod_template.h"
#include "operator/api/serialize.h"
#include "operator/api/validate.h"
#include "operator/api/yaml_json.h"
#include "operator/plan/builders.h"
#include "operator/plan/plan.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

json Example(const std::string& file) {
  std::ifstream in(std::string(DDP_EXAMPLES_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto docs = api::ParseYamlDocuments(text.str());
  if (!docs.ok() || docs->empty()) return json();
  for (const json& d : *docs) {
    if (d.is_object() && d.value("kind", json()) == "DDPJob") return d;
  }
  return json();
}

// Every value's JSON pointer, the root's included.
void Paths(const json& v, const json::json_pointer& at, std::vector<json::json_pointer>* out) {
  out->push_back(at);
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) Paths(child, at / k, out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) Paths(v[i], at / i, out);
  }
}

// One value of every JSON type, and the edges of the number types.
std::vector<json> Replacements() {
  return {json(nullptr),
          json(true),
          json(7),
          json(-1),
          json(std::numeric_limits<int64_t>::max()),
          json(std::numeric_limits<uint64_t>::max()),
          json(0.5),
          json(1e300),
          json("9000"),
          json("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC"),  // multi-byte UTF-8
          json(std::string(300, 'x')),
          json::array(),
          json::array({1, "a", nullptr}),
          json::object(),
          json{{"unknown", {{"deep", 1}}}}};
}

const char* Kind(const json& v) { return v.type_name(); }

// Runs one manifest through everything; returns "" or what went wrong.
std::string Exercise(const json& manifest) {
  try {
    StatusOr<api::DDPJob> parsed = api::ParseDDPJobJson(manifest);
    if (!parsed.ok()) {
      if (parsed.status().message().empty()) return "parse error without a message";
      return "";
    }
    api::DDPJob job = *parsed;
    job.uid = "uid-1";
    api::ApplyDefaults(&job);
    const std::vector<std::string> problems = api::Validate(job);
    for (const std::string& p : problems) json(p).dump();  // messages must be valid UTF-8
    const Plan plan = PlanReconcile(job, Observed{}, api::TimePoint(std::chrono::seconds(1000000000)));
    if (plan.status) api::StatusToJson(*plan.status).dump();
    for (const json& c : plan.creates) c.dump();
    api::ToJson(job).dump();
    std::vector<std::string> template_errs;
    api::ParsePodTemplate(job.spec.pod_template, &template_errs);
    // (The planner clamps an out-of-range spec.replicas, as `kubectl scale` may write one, so
    // a job Validate flags may still be planned; never one whose template is ill-typed.)
    if (!template_errs.empty() && !plan.creates.empty()) {
      return "objects built from a template with: " + template_errs[0];
    }
    if (!problems.empty()) return "";
    // A valid job: its template is typed without a problem, and every builder runs.
    if (!template_errs.empty()) return "Validate passed a template with: " + template_errs[0];
    BuildWorkerPod(job, 0, 0, job.spec.replicas).dump();
    BuildSparePod(job, 0, 0, job.spec.replicas).dump();
    BuildRendezvousPod(job, 0, job.spec.replicas).dump();
    BuildService(job).dump();
    return "";
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

void ConfuseEveryPath(const std::string& file, size_t* cases) {
  const json manifest = Example(file);
  ASSERT_TRUE(manifest.is_object()) << file;
  ASSERT_EQ(Exercise(manifest), "") << file << " as written";
  std::vector<json::json_pointer> paths;
  Paths(manifest, json::json_pointer(), &paths);
  for (const json::json_pointer& at : paths) {
    if (at.empty()) continue;  // a manifest that is not an object: the readers' tests
    const json original = manifest.at(at);
    for (const json& r : Replacements()) {
      if (r == original) continue;
      json edited = manifest;
      edited.at(at) = r;
      ++*cases;
      const std::string err = Exercise(edited);
      EXPECT_EQ(err, "") << file << ": " << at.to_string() << " = " << r.dump() << " ("
                         << Kind(r) << ")";
    }
  }
}

TEST(TypeConfusion, EveryPathOfTheExamplesEndsInAnErrorOrAPlan) {
  size_t cases = 0;
  for (const char* file : {"mingpt-4x8-gpu.yaml", "mingpt-inplace.yaml", "gang-volcano.yaml"}) {
    ConfuseEveryPath(file, &cases);
  }
  // The examples have well over 100 paths; a silently empty walk must not pass.
  EXPECT_GT(cases, 1500u);
}

// The hostile templates of the report, each named by its field in the error.
TEST(TypeConfusion, HostileTemplatesNameTheField) {
  struct Row {
    std::function<void(json&)> edit;
    std::string want;
  };
  const std::string c0 = "spec.template.spec.containers[0]";
  const Row rows[] = {
      {[](json& c) { c["ports"] = {{{"containerPort", "9000"}}}; },
       c0 + ".ports[0].containerPort: want an integer, got a string \"9000\""},
      {[](json& c) { c["ports"] = {{{"containerPort", 9000}, {"name", 7}}}; },
       c0 + ".ports[0].name: want a string, got an integer 7"},
      {[](json& c) { c["env"] = {{{"name", 5}}}; },
       c0 + ".env[0].name: want a string, got an integer 5"},
      {[](json& c) { c["ports"] = {{{"containerPort", 70000}}}; },
       c0 + ".ports[0].containerPort (70000) must be in 1..65535"},
      {[](json& c) { c["resources"] = {{"limits", {{"memory", "lots"}}}}; },
       c0 + ".resources.limits[\"memory\"]: want a quantity such as \"8\", \"500m\" or "
            "\"64Gi\", got a string \"lots\""},
      {[](json& c) { c["command"] = {"python", 3}; },
       c0 + ".command[1]: want a string, got an integer 3"},
      {[](json& c) { c["name"] = json::array(); }, c0 + ".name: want a string, got a list []"},
  };
  for (const Row& row : rows) {
    json m = Example("mingpt-inplace.yaml");
    row.edit(m["spec"]["template"]["spec"]["containers"][0]);
    api::DDPJob job = *api::ParseDDPJobJson(m);
    api::ApplyDefaults(&job);
    const std::vector<std::string> problems = api::Validate(job);
    EXPECT_NE(std::find(problems.begin(), problems.end(), row.want), problems.end())
        << "want: " << row.want << "\ngot: " << (problems.empty() ? "" : problems[0]);
    const Plan plan = PlanReconcile(job, Observed{}, api::TimePoint(std::chrono::seconds(1000000000)));
    ASSERT_TRUE(plan.status.has_value());
    EXPECT_EQ(plan.status->phase, api::kPhaseFailed);
    const api::Condition* failed = plan.status->FindCondition(api::kCondFailed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->reason, "InvalidSpec");
    EXPECT_NE(failed->message.find(row.want), std::string::npos) << failed->message;
    EXPECT_TRUE(plan.creates.empty());
  }
}

// A template with thousands of bad fields: the messages are capped, the plan stays small.
TEST(TypeConfusion, ProblemsAreCapped) {
  json m = Example("mingpt-inplace.yaml");
  json env = json::array();
  for (int i = 0; i < 5000; ++i) env.push_back({{"name", i}});
  m["spec"]["template"]["spec"]["containers"][0]["env"] = env;
  api::DDPJob job = *api::ParseDDPJobJson(m);
  const std::vector<std::string> problems = api::Validate(job);
  ASSERT_EQ(problems.size(), api::kMaxTemplateProblems + 1);
  EXPECT_EQ(problems.back(), "spec.template: " + std::to_string(5000 - api::kMaxTemplateProblems) +
                                 " more problems not shown");
}

}  // namespace
}  // namespace ddp::plan
