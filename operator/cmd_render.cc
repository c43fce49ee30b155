// `ddp-operator render -f FILE|- [--round N] [--gang-scheduler-name NAME] [--network-policy=B]
// [--operator-namespace NS] [--metrics-namespace NS] [-o yaml|json]`: the dry run. Prints what
// the operator creates for each DDPJob document when it first sees it (plan/render.h: the
// planner's own first pass), as YAML documents or a JSON List.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/manifest_file.h"
#include "operator/api/yaml_json.h"
#include "operator/command.h"
#include "operator/plan/gang.h"
#include "operator/plan/render.h"

namespace ddp::controller {
namespace {

const char kUsage[] =
    "usage: ddp-operator render -f FILE|- [--round N] [--gang-scheduler-name NAME]\n"
    "                           [--network-policy[=true|false]] [--operator-namespace NS]\n"
    "                           [--metrics-namespace NS] [-o yaml|json]\n"
    "Prints every object the operator creates for each DDPJob in FILE when it first sees it,\n"
    "in order: the PodGroup (with a gang scheduler), the NetworkPolicy, the headless Service,\n"
    "and the pods (under recovery InPlace the rendezvous pod and the spares too).\n"
    "Left out: what comes later (status writes, Events, replacements, later rounds).\n"
    "  -f, --filename FILE     the manifest; - reads standard input. A v1 List (kubectl get\n"
    "                          -o yaml) is read item by item; other kinds are skipped\n"
    "  --round N               the rendezvous round to render (default 0)\n"
    "  --gang-scheduler-name NAME  as the operator's flag: also the PodGroup and its pod keys\n"
    "  --network-policy[=true|false]  as the operator's flag: a NetworkPolicy per job\n"
    "                          (default true; spec.runPolicy.networkPolicy overrides it)\n"
    "  --operator-namespace NS the operator's namespace, admitted to the metrics port\n"
    "                          (default ddp-system)\n"
    "  --metrics-namespace NS  Prometheus' namespace, admitted to the metrics port\n"
    "  -o, --output FORMAT     yaml (default: one document per object) or json (a v1 List)\n"
    "Pods of a job labelled kueue.x-k8s.io/queue-name carry Kueue's pod-group keys.\n"
    "Exit status: 0 rendered (or no DDPJob in FILE), 1 invalid manifest, 2 usage error.\n";

bool ParseRound(const std::string& s, int* out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::atoi(s.c_str());
  return true;
}

// An RFC 1123 label, as the operator's --operator-namespace and --metrics-namespace take.
bool IsNamespaceName(const std::string& v) {
  if (v.empty() || v.size() > 63 || v.front() == '-' || v.back() == '-') return false;
  return v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

int RenderMain(int argc, char** argv) {
  std::string file, format = "yaml";
  int round = 0;
  plan::PlanOptions options;
  options.network_policy.enabled = true;  // as `ddp-operator run` and the chart
  options.network_policy.operator_namespace = "ddp-system";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool inline_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    auto next = [&]() {
      if (inline_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((arg == "-f" || arg == "--filename") && next()) {
      file = value;
    } else if ((arg == "-o" || arg == "--output") && next()) {
      format = value;
    } else if (arg == "--gang-scheduler-name" && next()) {
      if (!plan::ParseGangSchedulerName(value, &options.gang)) {
        std::fprintf(stderr, "render: --gang-scheduler-name (\"%s\") must be a scheduler name\n",
                     value.c_str());
        return 2;
      }
    } else if (arg == "--round" && next()) {
      if (!ParseRound(value, &round)) {
        std::fprintf(stderr, "render: --round (\"%s\") must be a non-negative integer\n",
                     value.c_str());
        return 2;
      }
    } else if (arg == "--network-policy") {
      if (!inline_value || value == "true") {
        options.network_policy.enabled = true;
      } else if (value == "false") {
        options.network_policy.enabled = false;
      } else {
        std::fprintf(stderr, "render: --network-policy: expected true or false, got \"%s\"\n",
                     value.c_str());
        return 2;
      }
    } else if ((arg == "--operator-namespace" || arg == "--metrics-namespace") && next()) {
      if (!IsNamespaceName(value)) {
        std::fprintf(stderr, "render: %s (\"%s\") must be a namespace name\n", arg.c_str(),
                     value.c_str());
        return 2;
      }
      (arg == "--operator-namespace" ? options.network_policy.operator_namespace
                                     : options.network_policy.metrics_namespace) = value;
    } else {
      std::fprintf(stderr, "render: unexpected argument \"%s\"\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (file.empty() || (format != "yaml" && format != "json")) {
    std::fprintf(stderr, "render: %s\n%s",
                 file.empty() ? "-f FILE is required" : "-o must be yaml or json", kUsage);
    return 2;
  }
  StatusOr<std::vector<api::ManifestDocument>> docs = api::LoadManifest("render", file);
  if (!docs.ok()) {
    std::fprintf(stderr, "%s\n", docs.status().message().c_str());
    return 1;
  }
  if (docs->empty()) {
    std::fprintf(stderr, "%s: no documents\n", file.c_str());
    return 1;
  }
  nlohmann::json objects = nlohmann::json::array();
  int problems = 0, jobs = 0;
  const auto now = std::chrono::system_clock::now();
  for (const auto& doc : *docs) {
    if (!doc.other_kind.empty()) continue;  // render shows what the operator creates, nothing else
    ++jobs;
    const std::vector<std::string> errs = api::DocumentProblems(doc);
    for (const auto& e : errs) std::fprintf(stderr, "%s: %s\n", doc.label.c_str(), e.c_str());
    problems += static_cast<int>(errs.size());
    if (!errs.empty()) continue;
    for (auto& obj : plan::RenderNewJob(doc.job, round, options, now)) {
      objects.push_back(std::move(obj));
    }
  }
  if (problems > 0) return 1;
  if (jobs == 0) {
    std::fprintf(stderr, "%s: no DDPJob documents: nothing to render\n", file.c_str());
    return 0;
  }
  if (format == "json") {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
    std::printf("%s\n", list.dump(2).c_str());
    return 0;
  }
  for (const auto& obj : objects) std::printf("---\n%s", api::JsonToYaml(obj).c_str());
  return 0;
}

const bool kRegistered = RegisterCommand(
    {"render", "print every object the operator creates for a DDPJob (-f FILE|- [-o yaml|json])",
     &RenderMain});

}  // namespace
}  // namespace ddp::controller
