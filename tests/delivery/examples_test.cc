// Every manifest in examples/ passes `ddp-operator validate` (the real binary), and the chart's
// Deployment passes only flags that `ddp-operator run` accepts.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <array>
#include <cstdio>
#include <dirent.h>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "operator/controller/controller_flags.h"
#include "tests/delivery/repo_files.h"

namespace ddp::delivery {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` through the shell, capturing stdout and stderr together.
RunResult RunCommand(const std::string& command) {
  RunResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<std::string> ExampleFiles() {
  std::vector<std::string> files;
  if (DIR* d = opendir(SourcePath("examples").c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (std::regex_match(name, std::regex(R"(.*\.ya?ml)"))) files.push_back("examples/" + name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Validate(const std::string& rel) { return std::string(DDP_OPERATOR_BIN) + " validate -f '" + SourcePath(rel) + "'"; }

TEST(Examples, EveryDDPJobExamplePassesValidate) {
  std::vector<std::string> files = ExampleFiles();
  ASSERT_GE(files.size(), 4u);
  int jobs = 0;
  for (const std::string& rel : files) {
    std::vector<nlohmann::json> docs = ReadYamlDocs(rel);
    ASSERT_FALSE(docs.empty()) << rel;
    bool is_job = docs[0].value("kind", "") == "DDPJob";
    if (!is_job) {
      // Supporting objects (the checkpoint PVC) live in files of their own.
      for (const auto& d : docs) EXPECT_NE(d.value("kind", ""), "DDPJob") << rel << ": mixes kinds";
      continue;
    }
    ++jobs;
    RunResult r = RunCommand(Validate(rel));
    EXPECT_EQ(r.exit_code, 0) << rel << ":\n" << r.output;
  }
  EXPECT_GE(jobs, 3);
}

// The validator really rejects: a copy of an example with a broken field must fail, naming it.
TEST(Examples, ValidateRejectsABrokenExample) {
  std::string text = ReadSource("examples/cpu-mlp.yaml");
  const std::string from = "replicas: 3";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "replicas: 0");
  char path[] = "/tmp/ddp-delivery-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  RunResult r = RunCommand(std::string(DDP_OPERATOR_BIN) + " validate -f " + path);
  unlink(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("spec.replicas"), std::string::npos) << r.output;
}

// The args block of the Deployment template, with template values filled in from values.yaml,
// parses with ddp-operator run's own flag parser.
TEST(Chart, DeploymentArgsAreFlagsOfRun) {
  const std::string tmpl = ReadSource("charts/ddp-operator/templates/deployment.yaml");
  const nlohmann::json values = ReadYamlDocs("charts/ddp-operator/values.yaml").at(0);
  std::vector<std::string> args = {"run"};
  static const std::regex kArg(R"(^\s+- (--[a-z-]+(?:=.*)?)$)");
  static const std::regex kValue(R"(\{\{\s*\.Values\.([A-Za-z.]+)\s*\}\})");
  std::smatch m;
  std::stringstream ss(tmpl);
  for (std::string line; std::getline(ss, line);) {
    if (!std::regex_match(line, m, kArg)) continue;
    std::string arg = m[1];
    std::smatch v;
    while (std::regex_search(arg, v, kValue)) {
      nlohmann::json node = values;
      std::stringstream path(v[1].str());
      for (std::string seg; std::getline(path, seg, '.');) node = node.at(seg);
      arg.replace(v.position(), v.length(), node.is_string() ? node.get<std::string>() : node.dump());
    }
    // `with .Values.watchNamespace` and the lease-namespace helper: a namespace name.
    arg = std::regex_replace(arg, std::regex(R"(\{\{.*?\}\})"), "ml");
    args.push_back(arg);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  controller::RunFlags flags;
  Status s = controller::ParseRunFlags(static_cast<int>(argv.size()), argv.data(), &flags);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(flags.leader_elect);
  EXPECT_EQ(flags.ns, "ml");
  EXPECT_EQ(flags.workers, values["workers"].get<int>());
  EXPECT_EQ(flags.metrics_addr, ":" + values["metrics"]["port"].dump());
  EXPECT_EQ(flags.health_addr, ":" + values["health"]["port"].dump());
  EXPECT_EQ(flags.burst, values["kubeApi"]["burst"].get<int>());
  EXPECT_DOUBLE_EQ(flags.qps, values["kubeApi"]["qps"].get<double>());
  std::chrono::milliseconds margin{}, unfenced{};
  ASSERT_TRUE(controller::ParseDuration(values["lostPods"]["margin"].get<std::string>(), &margin));
  ASSERT_TRUE(controller::ParseDuration(values["lostPods"]["unfencedMargin"].get<std::string>(),
                                        &unfenced));
  EXPECT_EQ(flags.lost_pod_margin, margin);
  EXPECT_EQ(flags.unfenced_lost_pod_margin, unfenced);
  for (const char* probe : {"path: /healthz", "path: /readyz", "port: health"}) {
    EXPECT_NE(tmpl.find(probe), std::string::npos) << probe;
  }
}

// Plain-YAML files of the chart parse; templates at least balance their actions.
TEST(Chart, FilesParseAndTemplatesBalance) {
  for (const char* f : {"charts/ddp-operator/Chart.yaml", "charts/ddp-operator/values.yaml",
                        "charts/ddp-operator/files/rbac-rules.yaml",
                        "charts/ddp-operator/files/leader-election-rules.yaml",
                        "charts/ddp-operator/files/node-rules.yaml",
                        "charts/ddp-operator/crds/ddpjob.yaml"}) {
    EXPECT_FALSE(ReadYamlDocs(f).empty()) << f;
  }
  nlohmann::json chart = ReadYamlDocs("charts/ddp-operator/Chart.yaml").at(0);
  EXPECT_EQ(chart["apiVersion"], "v2");
  EXPECT_EQ(chart["name"], "ddp-operator");
  EXPECT_NO_THROW(nlohmann::json::parse(ReadSource("charts/ddp-operator/values.schema.json")));
  static const std::regex kOpen(R"(\{\{-?\s*(if|with|range|define)\b)");
  static const std::regex kEnd(R"(\{\{-?\s*end\s*-?\}\})");
  static const std::regex kInclude(R"re(include "([^"]+)")re");
  static const std::regex kDefine(R"re(define "([^"]+)")re");
  static const std::regex kFile(R"re(\.Files\.Get "([^"]+)")re");
  const std::string helpers = ReadSource("charts/ddp-operator/templates/_helpers.tpl");
  std::set<std::string> defined;
  for (std::sregex_iterator it(helpers.begin(), helpers.end(), kDefine), e; it != e; ++it) defined.insert((*it)[1]);
  for (const char* t : {"_helpers.tpl", "deployment.yaml", "serviceaccount.yaml", "rbac.yaml",
                        "service.yaml", "servicemonitor.yaml", "podmonitor.yaml",
                        "grafana-dashboard.yaml", "NOTES.txt"}) {
    const std::string text = ReadSource(std::string("charts/ddp-operator/templates/") + t);
    auto count = [&](const std::regex& re) {
      return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
    };
    EXPECT_EQ(count(kOpen), count(kEnd)) << t << ": if/with/range/define and end do not balance";
    size_t opens = 0, closes = 0;
    for (size_t i = text.find("{{"); i != std::string::npos; i = text.find("{{", i + 2)) ++opens;
    for (size_t i = text.find("}}"); i != std::string::npos; i = text.find("}}", i + 2)) ++closes;
    EXPECT_EQ(opens, closes) << t;
    for (std::sregex_iterator it(text.begin(), text.end(), kInclude), e; it != e; ++it) {
      EXPECT_TRUE(defined.count((*it)[1])) << t << ": include of undefined " << (*it)[1];
    }
    for (std::sregex_iterator it(text.begin(), text.end(), kFile), e; it != e; ++it) {
      EXPECT_FALSE(ReadSource("charts/ddp-operator/" + (*it)[1].str()).empty()) << t << ": " << (*it)[1];
    }
  }
  const std::string cm = ReadSource("charts/ddp-operator/templates/grafana-dashboard.yaml");
  EXPECT_NE(cm.find("grafana_dashboard: \"1\""), std::string::npos);
}

}  // namespace
}  // namespace ddp::delivery
