// `ddp-operator render -f FILE|- [--round N] [--gang-scheduler-name NAME] [-o yaml|json]`: the
// dry run. Prints the PodGroup (with a gang scheduler), the Service and the Pods the operator
// would create for each DDPJob document, as YAML documents or a JSON List.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/manifest_file.h"
#include "operator/api/yaml_json.h"
#include "operator/command.h"
#include "operator/plan/builders.h"
#include "operator/plan/gang.h"

namespace ddp::controller {
namespace {

const char kUsage[] =
    "usage: ddp-operator render -f FILE|- [--round N] [--gang-scheduler-name NAME] [-o yaml|json]\n"
    "Prints the Service and worker Pods the operator would create for each DDPJob in FILE.\n"
    "  --round N   the rendezvous round to render (default 0)\n"
    "  --gang-scheduler-name NAME  as the operator's flag: also the PodGroup and its pod keys\n"
    "  -o FORMAT   yaml (default: one document per object) or json (a v1 List)\n"
    "Pods of a job labelled kueue.x-k8s.io/queue-name carry Kueue's pod-group keys.\n"
    "Exit status: 0 rendered, 1 invalid manifest, 2 usage error.\n";

bool ParseRound(const std::string& s, int* out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::atoi(s.c_str());
  return true;
}

int RenderMain(int argc, char** argv) {
  std::string file, format = "yaml";
  int round = 0;
  plan::GangConfig gang;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((arg == "-f" || arg == "--filename") && has_value) {
      file = argv[++i];
    } else if ((arg == "-o" || arg == "--output") && has_value) {
      format = argv[++i];
    } else if (arg == "--gang-scheduler-name" && has_value) {
      if (!plan::ParseGangSchedulerName(argv[++i], &gang)) {
        std::fprintf(stderr, "render: --gang-scheduler-name (\"%s\") must be a scheduler name\n",
                     argv[i]);
        return 2;
      }
    } else if (arg == "--round" && has_value) {
      if (!ParseRound(argv[++i], &round)) {
        std::fprintf(stderr, "render: --round (\"%s\") must be a non-negative integer\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "render: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage);
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
  nlohmann::json objects = nlohmann::json::array();
  int problems = 0;
  for (const auto& doc : *docs) {
    if (!doc.other_kind.empty()) continue;  // render shows what the operator creates, nothing else
    const std::vector<std::string> errs = api::DocumentProblems(doc);
    for (const auto& e : errs) std::fprintf(stderr, "%s: %s\n", doc.label.c_str(), e.c_str());
    problems += static_cast<int>(errs.size());
    if (!errs.empty()) continue;
    const int replicas = doc.job.spec.replicas;
    if (gang.scheduler != plan::GangScheduler::kNone) {
      objects.push_back(plan::BuildPodGroup(doc.job, gang, replicas));
    }
    objects.push_back(plan::BuildService(doc.job));
    for (int i = 0; i < replicas; ++i) {
      nlohmann::json pod = plan::BuildWorkerPod(doc.job, i, round, replicas);
      plan::AddGangKeys(doc.job, gang, round, replicas, &pod);
      objects.push_back(std::move(pod));
    }
  }
  if (problems > 0) return 1;
  if (objects.empty()) {
    std::fprintf(stderr, "%s: no DDPJob documents\n", file.c_str());
    return 1;
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
    {"render", "print the objects a DDPJob becomes (-f FILE|- [--round N] [-o yaml|json])",
     &RenderMain});

}  // namespace
}  // namespace ddp::controller
