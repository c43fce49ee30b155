// The CRD must install on the oldest Kubernetes the chart and docs/install.md claim: kubectl
// validates strictly by default, so a field the API server does not know yet fails the install
// ("strict decoding error: unknown field"). Fields newer than the oldest supported release are
// listed here with the release that added them; a CRD using one fails this test until the
// claimed version is raised consistently (Chart.yaml kubeVersion and docs/install.md).
#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/delivery/repo_files.h"

namespace ddp::delivery {
namespace {

using nlohmann::json;
using Version = std::pair<int, int>;  // (major, minor)

// Where a field sits: "validation" = a key of an x-kubernetes-validations item; "schema" = a key
// of a schema node; "version" = a key of spec.versions[].
struct NewField {
  const char* where;
  const char* key;
  Version since;
};

// The apiextensions.k8s.io/v1 fields added after 1.24, from the Kubernetes release notes.
const NewField kNewFields[] = {
    {"schema", "x-kubernetes-validations", {1, 25}},  // CEL rules: beta, on by default, in 1.25
    {"validation", "messageExpression", {1, 26}},
    {"validation", "reason", {1, 28}},
    {"validation", "fieldPath", {1, 28}},
    {"validation", "optionalOldSelf", {1, 29}},
    {"version", "selectableFields", {1, 30}},
};

std::string Name(Version v) { return std::to_string(v.first) + "." + std::to_string(v.second); }

// Every (where, key) the CRD uses, with a path for the failure message.
std::vector<std::pair<std::string, std::string>> UsedKeys(const json& crd,
                                                          std::vector<std::string>* paths) {
  std::vector<std::pair<std::string, std::string>> used;
  auto note = [&](const char* where, const std::string& key, const std::string& path) {
    used.emplace_back(where, key);
    paths->push_back(path + "." + key);
  };
  std::function<void(const json&, const std::string&)> schema = [&](const json& node,
                                                                    const std::string& path) {
    if (!node.is_object()) return;
    for (const auto& [key, child] : node.items()) {
      note("schema", key, path);
      if (key == "x-kubernetes-validations" && child.is_array()) {
        for (const auto& rule : child) {
          for (const auto& [rk, rv] : rule.items()) note("validation", rk, path + "." + key + "[]");
        }
      } else if (key == "properties" && child.is_object()) {
        for (const auto& [name, sub] : child.items()) schema(sub, path + "." + name);
      } else if (key == "items" || key == "additionalProperties") {
        schema(child, path + "." + key);
      }
    }
  };
  for (const auto& v : crd["spec"]["versions"]) {
    const std::string path = "spec.versions[" + v.value("name", "") + "]";
    for (const auto& [key, child] : v.items()) note("version", key, path);
    schema(v["schema"]["openAPIV3Schema"], path + ".schema.openAPIV3Schema");
  }
  return used;
}

Version ClaimedInChart() {
  std::smatch m;
  const std::string chart = ReadSource("charts/ddp-operator/Chart.yaml");
  EXPECT_TRUE(std::regex_search(chart, m, std::regex(R"(kubeVersion:\s*"?>=\s*(\d+)\.(\d+))")))
      << "Chart.yaml has no kubeVersion \">=X.Y\"";
  return m.empty() ? Version{0, 0} : Version{std::stoi(m[1]), std::stoi(m[2])};
}

Version ClaimedInDocs() {
  std::smatch m;
  const std::string doc = ReadSource("docs/install.md");
  EXPECT_TRUE(std::regex_search(doc, m, std::regex(R"(Kubernetes (\d+)\.(\d+) or newer)")))
      << "docs/install.md does not say \"Kubernetes X.Y or newer\"";
  return m.empty() ? Version{0, 0} : Version{std::stoi(m[1]), std::stoi(m[2])};
}

TEST(CrdVersions, ChartAndDocsClaimTheSameOldestKubernetes) {
  EXPECT_EQ(Name(ClaimedInChart()), Name(ClaimedInDocs()));
}

TEST(CrdVersions, NoFieldNewerThanTheOldestClaimedKubernetes) {
  const Version oldest = ClaimedInChart();
  for (const char* file : {"crds/ddpjob.yaml", "charts/ddp-operator/crds/ddpjob.yaml"}) {
    auto docs = ReadYamlDocs(file);
    ASSERT_EQ(docs.size(), 1u) << file;
    std::vector<std::string> paths;
    const auto used = UsedKeys(docs[0], &paths);
    ASSERT_GT(used.size(), 20u) << file << ": the walk found too little to be the CRD";
    for (size_t i = 0; i < used.size(); ++i) {
      for (const NewField& f : kNewFields) {
        if (used[i].first == f.where && used[i].second == f.key) {
          EXPECT_LE(f.since, oldest) << file << ": " << paths[i] << " needs Kubernetes "
                                     << Name(f.since) << ", but the chart claims "
                                     << Name(oldest);
        }
      }
    }
  }
}

// The check itself: a rule with fieldPath is caught at 1.25 and accepted at 1.28.
TEST(CrdVersions, TheCheckCatchesFieldPathOnOlderReleases) {
  json crd = {{"spec", {{"versions", json::array({{{"name", "v1"}, {"schema", {{"openAPIV3Schema",
      {{"type", "object"}, {"x-kubernetes-validations",
        json::array({{{"rule", "self.a > 0"}, {"message", "m"}, {"fieldPath", ".a"}}})}}}}}}})}}}};
  std::vector<std::string> paths;
  Version newest_needed{0, 0};
  for (const auto& [where, key] : UsedKeys(crd, &paths)) {
    for (const NewField& f : kNewFields) {
      if (where == f.where && key == f.key) newest_needed = std::max(newest_needed, f.since);
    }
  }
  EXPECT_EQ(Name(newest_needed), "1.28");
}

}  // namespace
}  // namespace ddp::delivery
