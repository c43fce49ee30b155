// `ddp-operator local -f job.yaml`: run a DDPJob on this machine, pods as local processes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/logging.h"
#include "operator/command.h"
#include "operator/local/runner.h"
#include "operator/local/scale_at.h"

namespace ddp::controller {
namespace {

constexpr char kUsage[] =
    "usage: ddp-operator local -f|--filename job.yaml [--run-dir DIR] [--grace-period SECONDS]\n"
    "                          [--plain] [--pod-start-delay SECONDS] [--scale-at STEP=N,...]\n"
    "                          [--straggler-factor F] [--straggler-reads N]\n"
    "                          [--log-level debug|info|warning|error]\n"
    "\n"
    "Runs one DDPJob on this machine with the operator's planner: each pod is a process group\n"
    "running the worker container's command and args with the env a cluster would give it\n"
    "(MASTER_ADDR=127.0.0.1; a free MASTER_PORT per round and DDP_METRICS_PORT per pod, below the\n"
    "ephemeral port range, since all ranks share this host; the image is ignored). A relative\n"
    "command is looked up next to ddp-operator, in ../worker of it, then on PATH.\n"
    "\n"
    "  -f, --filename FILE    the manifest (one DDPJob). Saving a new version applies it:\n"
    "                         spec.replicas resizes, runPolicy.suspend stops/resumes.\n"
    "  --run-dir DIR          pod logs (<pod>.round<N>.log), status.json and, unless the\n"
    "                         manifest sets spec.checkpoint.path, checkpoints/\n"
    "                         (default ./runs/<job>-<timestamp>)\n"
    "  --grace-period S       seconds between SIGTERM and SIGKILL when a pod is deleted\n"
    "                         (default: the template's terminationGracePeriodSeconds, else 30)\n"
    "  --plain                line-by-line output even on a terminal\n"
    "  --pod-start-delay S    start each pod's process S seconds after its create (default 0):\n"
    "                         a cluster's scheduling, image pull and container start, emulated\n"
    "  --scale-at STEP=N,...  scripted resizes: once rank 0 trained STEP steps, spec.replicas\n"
    "                         becomes N (e.g. 200=3,400=2,600=4; an elastic job under\n"
    "                         recovery InPlace resizes in place)\n"
    "  --straggler-factor F   report a rank whose busy time per step is F times the other\n"
    "                         ranks' median (default 1.5) ...\n"
    "  --straggler-reads N    ... in N consecutive reads, one every 5 s (default 3)\n"    "  --log-level LEVEL      the runner's own log: debug, info (default), warning, error\n"
    "\n"
    "Exit status: 0 the job succeeded, 1 it failed, 2 bad usage or invalid manifest,\n"
    "128+n stopped by signal n (Ctrl-C: 130). Every process it started is stopped on exit.\n";

bool ParseInt(const char* text, int* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < 0 || v > 86400) return false;
  *out = static_cast<int>(v);
  return true;
}

int LocalMain(int argc, char** argv) {
  local::RunOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&](std::string* out) {
      if (has_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "-f" || arg == "--filename" || arg == "--run-dir") {
      std::string* target = arg == "--run-dir" ? &options.run_dir : &options.manifest_path;
      if (!next(target) || target->empty()) {
        std::fprintf(stderr, "ddp-operator local: %s wants a path\n", arg.c_str());
        return local::kExitUsage;
      }
    } else if (arg == "--grace-period") {
      std::string s;
      int seconds = 0;
      if (!next(&s) || !ParseInt(s.c_str(), &seconds)) {
        std::fprintf(stderr, "ddp-operator local: --grace-period wants seconds (0..86400)\n");
        return local::kExitUsage;
      }
      options.grace_seconds = seconds;
    } else if (arg == "--pod-start-delay") {
      std::string s;
      char* end = nullptr;
      const double d = next(&s) ? std::strtod(s.c_str(), &end) : -1;
      if (s.empty() || *end || !(d >= 0) || d > 3600) {
        std::fprintf(stderr, "ddp-operator local: --pod-start-delay wants seconds (0..3600)\n");
        return local::kExitUsage;
      }
      options.pod_start_delay = std::chrono::milliseconds(static_cast<int64_t>(d * 1000));
    } else if (arg == "--scale-at") {
      std::string s;
      auto parsed = next(&s) ? local::ParseScaleAt(s) : local::ParseScaleAt("");
      if (!parsed.ok()) {
        std::fprintf(stderr, "ddp-operator local: %s\n", parsed.status().message().c_str());
        return local::kExitUsage;
      }
      options.scale_at = *parsed;
    } else if (arg == "--straggler-factor") {
      std::string s;
      char* end = nullptr;
      double f = next(&s) ? std::strtod(s.c_str(), &end) : 0;
      if (s.empty() || *end || !(f > 1.0) || f > 100) {
        std::fprintf(stderr, "ddp-operator local: --straggler-factor wants a number > 1\n");
        return local::kExitUsage;
      }
      options.straggler_factor = f;
    } else if (arg == "--straggler-reads") {
      std::string s;
      int n = 0;
      if (!next(&s) || !ParseInt(s.c_str(), &n) || n < 1) {
        std::fprintf(stderr, "ddp-operator local: --straggler-reads wants a count >= 1\n");
        return local::kExitUsage;
      }
      options.straggler_reads = n;
    } else if (arg == "--plain") {
      options.live = false;
    } else if (arg == "--log-level") {
      std::string s;
      LogLevel level;
      if (!next(&s) || !ParseLogLevel(s, &level)) {
        std::fprintf(stderr, "ddp-operator local: --log-level wants debug|info|warning|error\n");
        return local::kExitUsage;
      }
      SetLogLevel(level);
    } else {
      std::fprintf(stderr, "ddp-operator local: unknown flag \"%s\"\n\n%s", argv[i], kUsage);
      return local::kExitUsage;
    }
  }
  if (options.manifest_path.empty()) {
    std::fprintf(stderr, "ddp-operator local: -f job.yaml is required\n\n%s", kUsage);
    return local::kExitUsage;
  }
  return local::RunLocal(options, stdout, stderr);
}

const bool kRegistered =
    RegisterCommand({"local", "run a DDPJob on this machine (pods as local processes)", &LocalMain});

}  // namespace
}  // namespace ddp::controller
