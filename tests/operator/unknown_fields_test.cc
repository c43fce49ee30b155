// Strict field validation (operator/api/unknown_fields.h): a table of objects against a small
// hand-written schema, the review's misspellings against the compiled-in CRD, and every example
// free of unknown fields.
#include "operator/api/unknown_fields.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "operator/api/crd_schema.h"
#include "operator/api/manifest_file.h"
#include "operator/api/yaml_json.h"

namespace ddp::api {
namespace {

using nlohmann::json;

// A structural schema with each shape FindUnknownFields handles.
const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "replicas": {"type": "integer"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "containerPort": {"type": "integer"}}}},
    "meta": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
             "properties": {"name": {"type": "string"}}},
    "anything": {"type": "object"},
    "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "max": {"type": "integer"}}}}
  }
})");

struct Row {
  const char* name;
  const char* object;
  std::vector<UnknownField> want;
};

TEST(FindUnknownFields, Table) {
  const std::vector<Row> rows = {
      {"all known", R"({"replicas": 2, "labels": {"any/key": "v"}, "ports": [{"name": "m"}]})", {}},
      {"top-level misspelling", R"({"replica": 2})", {{"replica", "replicas", true}}},
      // 12 edits from replicas, more than a quarter of the name: named, but not "did you mean".
      {"far from every name", R"({"replicasqqqqqqqqqqqq": 1})",
       {{"replicasqqqqqqqqqqqq", "replicas", false}}},
      {"case differs", R"({"Replicas": 2})", {{"Replicas", "replicas", true}}},
      {"inside a list item, transposed", R"({"ports": [{}, {"contianerPort": 1}]})",
       {{"ports[1].contianerPort", "containerPort", true}}},
      {"map keys are free, their values are checked", R"({"limits": {"a": {"mxa": 1}}})",
       {{"limits.a.mxa", "max", true}}},
      {"preserved object: unknown keys pass, known ones are walked",
       R"({"meta": {"owner": "x", "name": "n"}})", {}},
      {"object without properties takes any key", R"({"anything": {"x": {"y": 1}}})", {}},
      {"wrong types are the parser's business", R"({"ports": "9000", "labels": 3})", {}},
      // "a" is 3 deletions from meta, 5 or more from the others: nearest, not close.
      {"several, in key order", R"({"replicas": 1, "ports": [{"nmae": "x"}], "a": 1})",
       {{"a", "meta", false}, {"ports[0].nmae", "name", true}}},
  };
  for (const Row& r : rows) {
    const std::vector<UnknownField> got = FindUnknownFields(json::parse(r.object), kSchema);
    EXPECT_EQ(got, r.want) << r.name;
  }
}

TEST(FindUnknownFields, PathPrefixIsKept) {
  const auto got = FindUnknownFields(json::parse(R"({"replica": 1})"), kSchema, "spec");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "spec.replica");
}

TEST(NearestName, SmallestEditDistanceFirstOnTies) {
  EXPECT_EQ(NearestName("prots", {"name", "ports", "protocol"}), "ports");
  EXPECT_EQ(NearestName("containerz", {"initContainers", "containers"}), "containers");
  EXPECT_EQ(NearestName("ab", {"xb", "ax"}), "xb");  // both one substitution away
  EXPECT_EQ(NearestName("x", {}), "");
}

TEST(DDPJobSchema, IsTheCrdsServedSchema) {
  const json& s = DDPJobSchema();
  ASSERT_TRUE(s.contains("properties")) << "the compiled-in CRD did not parse";
  // The spec's fields as DESIGN.md lists them.
  for (const char* f : {"replicas", "nprocPerNode", "elastic", "rendezvous", "failurePolicy",
                        "runPolicy", "checkpoint", "metrics", "template"}) {
    EXPECT_TRUE(s["properties"]["spec"]["properties"].contains(f)) << f;
  }
}

std::string Job(const std::string& spec_extra, const std::string& container_extra = "",
                const std::string& pod_extra = "") {
  return "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: j, labels: {a: b}}\n"
         "spec:\n  replicas: 2\n" + spec_extra +
         "  template:\n    spec:\n" + pod_extra +
         "      containers:\n      - name: worker\n        image: w\n" + container_extra;
}

std::vector<std::string> ProblemsOf(const std::string& yaml) {
  StatusOr<std::vector<json>> docs = ParseYamlDocuments(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return docs.ok() ? UnknownFieldProblems((*docs)[0]) : std::vector<std::string>{"unparsed"};
}

// The review's misspellings (docs-2026-12-06 U4), each refused with its path and the name meant.
TEST(UnknownFieldProblems, TheCrdRefusesWhatTheApiServerRefuses) {
  struct Case {
    std::string yaml, want;
  };
  const std::vector<Case> cases = {
      {Job("  failurePolicy: {recovery: InPlace, livenessTimeoutSecond: 10}\n"),
       "unknown field \"spec.failurePolicy.livenessTimeoutSecond\" (did you mean "
       "livenessTimeoutSeconds?)"},
      {Job("", "        prots: [{containerPort: 9400}]\n"),
       "unknown field \"spec.template.spec.containers[0].prots\" (did you mean ports?)"},
      {Job("", "", "      containerz: []\n"),
       "unknown field \"spec.template.spec.containerz\" (did you mean containers?)"},
      {Job("  failurePolicy: {recovry: InPlace}\n"),
       "unknown field \"spec.failurePolicy.recovry\" (did you mean recovery?)"},
      {Job("  replica: 3\n"), "unknown field \"spec.replica\" (did you mean replicas?)"},
      {Job("") + "sepc: {}\n", "unknown field \"sepc\" (did you mean spec?)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ProblemsOf(c.yaml), std::vector<std::string>{c.want}) << c.yaml;
  }
}

TEST(UnknownFieldProblems, FarNamesSayWhereAndTheNearest) {
  const std::vector<std::string> got = ProblemsOf(Job("  qqqqqqqqqqqqqqqq: 1\n"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("unknown field \"spec.qqqqqqqqqqqqqqqq\" (not a field of spec; the "
                         "nearest is ", 0), 0u) << got[0];
}

TEST(UnknownFieldProblems, MetadataLabelsAnnotationsAndStatusAreFree) {
  std::string yaml = Job("", "", "      nodeSelector: {any/key: v}\n");
  yaml += "status: {someFieldOfANewerOperator: 1}\n";
  yaml.replace(yaml.find("metadata: {"), 11, "metadata: {anyMetaKey: 1, ");
  EXPECT_EQ(ProblemsOf(yaml), std::vector<std::string>{});
}

TEST(UnknownFieldProblems, ManyAreCapped) {
  std::string extra;
  for (int i = 0; i < 30; ++i) extra += "  unknown" + std::to_string(i) + ": 1\n";
  const std::vector<std::string> got = ProblemsOf(Job(extra));
  ASSERT_EQ(got.size(), 21u);
  EXPECT_EQ(got.back(), "... and 10 more unknown fields");
}

TEST(UnknownFieldProblems, DocumentProblemsListThemBeforeValidation) {
  StatusOr<std::vector<ManifestDocument>> docs =
      ParseManifestDocuments(Job("  replica: 3\n  nprocPerNode: 0\n"));
  ASSERT_TRUE(docs.ok());
  const std::vector<std::string> got = DocumentProblems((*docs)[0]);
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0], "unknown field \"spec.replica\" (did you mean replicas?)");
  EXPECT_NE(got[1].find("spec.nprocPerNode"), std::string::npos) << got[1];
}

TEST(UnknownFieldProblems, EveryExampleHasNone) {
  int jobs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DDP_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<std::vector<json>> docs = ParseYamlDocuments(text.str());
    ASSERT_TRUE(docs.ok()) << entry.path();
    for (const json& d : *docs) {
      if (!d.is_object() || d.value("kind", "") != "DDPJob") continue;
      ++jobs;
      EXPECT_EQ(UnknownFieldProblems(d), std::vector<std::string>{}) << entry.path();
    }
  }
  EXPECT_GT(jobs, 10);
}

}  // namespace
}  // namespace ddp::api
