// `ddp-operator chaos`: injects one named failure into a running job, waits for the job to
// recover and prints the incident's report from the job's status (status.incidents); with
// --every/--for, a soak that ends with a table and the goodput; with --svg, a timeline picture.
// The figures are the operator's and the workers' (docs/metrics.md "Incidents and goodput"):
// this command only injects, waits and reads.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "operator/api/time_format.h"
#include "operator/chaos/report.h"
#include "operator/chaos/target.h"
#include "operator/chaos/timeline_svg.h"
#include "operator/command.h"
#include "operator/plan/goodput.h"

namespace ddp::controller {
namespace {

using Clock = std::chrono::system_clock;

// SIGINT or SIGTERM: the waits below restore what the failure changed and return 128 + it.
std::atomic<int> g_signal{0};
extern "C" void OnChaosSignal(int sig) { g_signal.store(sig); }

// SA_RESTART: a kubectl call in flight (its output read, its exit waited for) finishes; the
// waits check the flag between calls.
void CatchStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnChaosSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const char kUsage[] =
    "usage: ddp-operator chaos --run-dir DIR FAILURE [ARGS]        (a `ddp-operator local` run)\n"
    "       ddp-operator chaos [--kubeconfig FILE] -n|--namespace NAMESPACE JOB FAILURE [ARGS]\n"
    "                                                               (a cluster)\n"
    "         [--every SECONDS --for SECONDS] [--timeout SECONDS] [--svg FILE]\n"
    "Injects one failure into the running job, waits until the job recovered and prints the\n"
    "incident from its status (pod, node, rank, detection, stall, steps lost, outcome).\n"
    "FAILURE: kill-trainer RANK | delete-pod RANK | freeze-pod RANK SECONDS | drain-node NODE |\n"
    "         kill-rendezvous   (RANK of kill-trainer is a global rank, of the others a node rank)\n"
    "  --every S --for T  a soak: the failure every S seconds for T seconds, then a table of the\n"
    "                     incidents and the job's goodput\n"
    "  --timeout S        how long to wait for each recovery (default 300)\n"
    "  --svg FILE         write the step rate over time with each incident marked\n"
    "In a cluster every action is a kubectl call with your credentials: delete-pod and\n"
    "kill-rendezvous need `delete pods`, drain-node `get nodes`, `patch nodes` and\n"
    "`create pods/eviction`, kill-trainer and freeze-pod `create pods/exec` and `get pods/log`\n"
    "(a container cannot stop its own PID 1, the supervisor: freeze-pod stops every other\n"
    "process of the pod).\n"
    "drain-node acts only on a node that holds one of the job's pods: it cordons the node\n"
    "(unless it was cordoned already) and evicts the job's pods there, in its namespace only.\n"
    "What chaos changed (a frozen pod, a node it cordoned) is restored when the job recovered,\n"
    "when the wait ends, and on SIGINT (Ctrl-C) or SIGTERM.\n"
    "Exit status: 0 recovered, 1 not recovered in time or the job Failed, 2 usage error or\n"
    "failure refused, 128+N stopped by signal N (after restoring).\n";

double Unix(Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string Stamp(Clock::time_point t) {
  const double u = Unix(t);
  return api::FormatTime(t) + " (+" + std::to_string(static_cast<int>((u - static_cast<int64_t>(u)) * 1000)) + " ms)";
}

// The incidents opened since the count was `before`: the newest rows (the list keeps 20).
std::vector<api::Incident> Since(const api::DDPJobStatus& st, int64_t before) {
  const int64_t opened = std::max<int64_t>(0, st.incidents_total - before);
  const size_t n = std::min<size_t>(static_cast<size_t>(opened), st.incidents.size());
  return {st.incidents.end() - static_cast<std::ptrdiff_t>(n), st.incidents.end()};
}

struct Run {
  chaos::Target* target = nullptr;
  chaos::Failure failure;
  double timeout = 300;
  std::vector<chaos::StepSample> samples;
  Clock::time_point last_sample{};

  void Sample() {
    const auto now = Clock::now();
    if (now - last_sample < std::chrono::milliseconds(900)) return;
    last_sample = now;
    if (auto step = target->ReadStep()) samples.push_back({Unix(now), *step});
  }

  // Injects once and waits for every incident it opened to close. Returns 0, 1 (not in time),
  // 2 (refused); prints the reports.
  int Once(const api::DDPJobStatus& before_status) {
    const int64_t before = before_status.incidents_total;
    const auto at = Clock::now();
    auto done = target->Inject(failure);
    if (!done.ok()) {
      std::fprintf(stderr, "chaos: %s: %s\n", failure.ToString().c_str(), done.status().ToString().c_str());
      Restore();  // what it changed before it failed (a node cordoned, then an eviction refused)
      return 2;
    }
    std::printf("%s: %s\n", Stamp(at).c_str(), done->c_str());
    std::fflush(stdout);
    bool restored = false;
    const auto deadline = at + std::chrono::milliseconds(static_cast<int64_t>((timeout + failure.seconds) * 1000));
    std::vector<api::Incident> seen;
    while (Clock::now() < deadline) {
      if (const int sig = g_signal.load()) {
        if (!restored) Restore();
        std::printf("stopped by signal %d: not waiting for the recovery\n", sig);
        std::fflush(stdout);
        return 128 + sig;
      }
      Sample();
      if (!restored && Clock::now() >= at + std::chrono::milliseconds(static_cast<int64_t>(failure.seconds * 1000)) &&
          failure.kind == chaos::FailureKind::kFreezePod) {
        const std::string line = target->Restore();
        if (!line.empty()) std::printf("%s: %s\n", Stamp(Clock::now()).c_str(), line.c_str());
        restored = true;
      }
      auto st = target->ReadStatus();
      if (st.ok()) {
        seen = Since(*st, before);
        const bool all = !seen.empty() && std::all_of(seen.begin(), seen.end(),
                                                       [](const api::Incident& i) { return i.Closed(); });
        const bool ended = st->phase == api::kPhaseSucceeded || st->phase == api::kPhaseFailed;
        if (all || ended) {
          if (!restored) Restore();
          int64_t number = st->incidents_total - static_cast<int64_t>(seen.size()) + 1;
          for (const api::Incident& i : seen) std::printf("%s", chaos::FormatIncident(i, number++).c_str());
          if (seen.empty()) std::printf("the job ended (%s) before an incident was recorded\n", st->phase.c_str());
          // A failed job closes its open incidents too: that is not a recovery.
          const bool failed = st->phase == api::kPhaseFailed;
          if (failed) std::printf("the job Failed: not recovered\n");
          std::fflush(stdout);
          return all && !failed ? 0 : 1;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (!restored) Restore();
    std::printf("not recovered within %.0f s: %zu incident(s) recorded so far\n", timeout, seen.size());
    int64_t number = before + 1;
    for (const api::Incident& i : seen) std::printf("%s", chaos::FormatIncident(i, number++).c_str());
    return 1;
  }

  void Restore() {
    const std::string line = target->Restore();
    if (!line.empty()) std::printf("%s: %s\n", Stamp(Clock::now()).c_str(), line.c_str());
    std::fflush(stdout);
  }
};

int ChaosMain(int argc, char** argv) {
  std::string run_dir, kubeconfig, ns, svg;
  double every = 0, for_seconds = 0, timeout = 300;
  std::vector<std::string> words;
  auto number = [&](int* i, double* out) {
    if (*i + 1 >= argc) return false;
    char* end = nullptr;
    *out = std::strtod(argv[++*i], &end);
    return end != argv[*i] && *end == '\0' && std::isfinite(*out) && *out > 0 && *out <= 7 * 86400;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--run-dir" && i + 1 < argc) {
      run_dir = argv[++i];
    } else if (arg == "--kubeconfig" && i + 1 < argc) {
      kubeconfig = argv[++i];
    } else if ((arg == "-n" || arg == "--namespace") && i + 1 < argc) {
      ns = argv[++i];
    } else if (arg == "--svg" && i + 1 < argc) {
      svg = argv[++i];
    } else if (arg == "--every" || arg == "--for" || arg == "--timeout") {
      double v = 0;
      if (!number(&i, &v)) {
        std::fprintf(stderr, "chaos: %s takes a number of seconds, > 0 and at most a week\n%s", arg.c_str(), kUsage);
        return 2;
      }
      (arg == "--every" ? every : arg == "--for" ? for_seconds : timeout) = v;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "chaos: unknown flag \"%s\"\n%s", arg.c_str(), kUsage);
      return 2;
    } else {
      words.push_back(arg);
    }
  }
  if ((every > 0) != (for_seconds > 0)) {
    std::fprintf(stderr, "chaos: --every and --for go together\n%s", kUsage);
    return 2;
  }
  std::string job;
  if (run_dir.empty()) {
    if (ns.empty() || words.empty()) {
      std::fprintf(stderr, "chaos: give --run-dir DIR, or -n NAMESPACE and the job's name\n%s", kUsage);
      return 2;
    }
    job = words.front();
    words.erase(words.begin());
  }
  auto failure = chaos::ParseFailure(words);
  if (!failure.ok()) {
    std::fprintf(stderr, "chaos: %s\n", failure.status().message().c_str());
    return 2;
  }
  auto target = run_dir.empty() ? chaos::OpenCluster(kubeconfig, ns, job) : chaos::OpenLocal(run_dir);
  if (!target.ok()) {
    std::fprintf(stderr, "chaos: %s\n", target.status().ToString().c_str());
    return 2;
  }
  Run run;
  run.target = target->get();
  run.failure = *failure;
  run.timeout = timeout;
  auto first = run.target->ReadStatus();
  if (!first.ok()) {
    std::fprintf(stderr, "chaos: %s\n", first.status().ToString().c_str());
    return 2;
  }
  CatchStopSignals();
  const int64_t first_total = first->incidents_total;
  const auto started = Clock::now();
  int code = 0;
  if (every <= 0) {
    code = run.Once(*first);
  } else {
    const auto end = started + std::chrono::milliseconds(static_cast<int64_t>(for_seconds * 1000));
    for (auto next = started; next < end; next += std::chrono::milliseconds(static_cast<int64_t>(every * 1000))) {
      while (Clock::now() < next && g_signal.load() == 0) {
        run.Sample();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      if (const int sig = g_signal.load()) return 128 + sig;  // nothing injected is left changed
      auto st = run.target->ReadStatus();
      if (!st.ok() || st->phase == api::kPhaseSucceeded || st->phase == api::kPhaseFailed) break;
      const int c = run.Once(*st);
      if (c == 2 || c > 128) return c;
      code = std::max(code, c);
    }
    while (Clock::now() < end && g_signal.load() == 0) {
      run.Sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  auto last = run.target->ReadStatus();
  if (last.ok()) {
    const std::vector<api::Incident> all = Since(*last, first_total);
    if (every > 0) {
      std::printf("\n%s", chaos::FormatTable(all, last->incidents_total - static_cast<int64_t>(all.size()) + 1,
                                             plan::GoodputRatio(*last, Clock::now())).c_str());
    }
    if (!svg.empty()) {
      std::ofstream f(svg, std::ios::trunc);
      f << chaos::RenderTimeline(run.samples, all, Unix(started), Unix(Clock::now()),
                                 "ddp-operator chaos: " + run.failure.ToString() +
                                     (every > 0 ? " every " + std::to_string(static_cast<int>(every)) + " s" : ""));
      if (!f) std::fprintf(stderr, "chaos: cannot write %s\n", svg.c_str());
    }
  }
  return code;
}

const bool kRegistered =
    RegisterCommand({"chaos", "inject a failure into a running job and report its recovery", &ChaosMain});

}  // namespace
}  // namespace ddp::controller
