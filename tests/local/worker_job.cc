// A real ddp-worker job in local mode (see worker_job.h).
#include "worker_job.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

namespace ddp::testing_local {

using std::chrono::seconds;

std::string WorkerJob(const TempDir& dir, const JobOptions& o) {
  // Under Restart a pod has no DDP_POD_NAME: its name from its node rank.
  const std::string pid_file =
      dir.path() + "/pid-${DDP_POD_NAME:-" + o.name + "-worker-$NODE_RANK}";
  return "apiVersion: ddp.dev/v1alpha1\n"
         "kind: DDPJob\n"
         "metadata: {name: " + o.name + "}\n"
         "spec:\n"
         "  replicas: " + std::to_string(o.replicas) + "\n" +
         (o.elastic.empty() ? std::string() : "  elastic: " + o.elastic + "\n") +
         "  rendezvous: {timeoutSeconds: 60}\n"
         "  failurePolicy: {recovery: " + o.recovery + ", maxRestarts: " +
         std::to_string(o.max_restarts) +
         (o.recovery == "InPlace" ? ", livenessTimeoutSeconds: 5, spares: " +
                                        std::to_string(o.spares)
                                  : std::string()) +
         "}\n"
         "  template:\n"
         "    spec:\n"
         "      terminationGracePeriodSeconds: 5\n"
         "      containers:\n"
         "      - name: worker\n"
         "        image: unused\n" +
         (o.termination_message_path.empty()
              ? std::string()
              : "        terminationMessagePath: " + o.termination_message_path + "\n") +
         "        command: [sh, -c]\n"
         "        args: ['echo $$$$ > " + pid_file + "; " + o.wrapper + " exec " + WorkerBin() +
         " \"$@\"', ddp-worker, --model=mingpt, --dataset=synthetic, --n-layer=1, --n-head=2,"
         " --n-embd=32, --block-size=16, --steps=" + std::to_string(o.steps) +
         ", --batch-size=4, --checkpoint-every=1000, --log-every=10, --seed=7, --threads=1]\n"
         "        env:\n"
         "        - {name: DDP_FAULT, value: \"" + o.fault + "\"}\n"
         "        - {name: OMP_NUM_THREADS, value: \"1\"}\n";
}

LocalJob::LocalJob(const TempDir& dir, const JobOptions& o)
    : dir_(dir), run_dir_(dir.path() + "/" + o.name), name_(o.name) {
  const std::string manifest = dir.path() + "/" + o.name + ".yaml";
  WriteFileAtomic(manifest, WorkerJob(dir, o));
  std::vector<std::string> argv{DDP_OPERATOR_BIN, "local", "-f", manifest, "--run-dir", run_dir_,
                                "--plain"};
  argv.insert(argv.end(), o.operator_args.begin(), o.operator_args.end());
  op_ = std::make_unique<OperatorProcess>(argv, dir.path() + "/" + o.name + ".out");
}

LocalJob::~LocalJob() {
  if (!::testing::Test::HasFailure()) return;
  std::error_code ec;
  std::vector<std::string> logs;
  for (const auto& e : std::filesystem::directory_iterator(run_dir_, ec)) {
    const std::string f = e.path().string();
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".log") == 0) logs.push_back(f);
  }
  std::sort(logs.begin(), logs.end());
  constexpr size_t kLines = 30;
  for (const auto& f : logs) {
    std::istringstream in(ReadFile(f));
    std::deque<std::string> last;
    for (std::string line; std::getline(in, line);) {
      if (line.find("] step ") != std::string::npos) continue;
      last.push_back(line.substr(0, 300));
      if (last.size() > kLines) last.pop_front();
    }
    std::cerr << "--- " << f << " (last " << last.size() << " lines, no step lines)\n";
    for (const auto& line : last) std::cerr << line << "\n";
  }
}

std::string LocalJob::PodLog(const std::string& pod, int incarnation, int round) const {
  return Log(name_ + "-" + pod + ".round" + std::to_string(round) +
             (incarnation > 0 ? "." + std::to_string(incarnation) : "") + ".log");
}

pid_t LocalJob::PodGroup(const std::string& pod) const {
  const std::string text = ReadFile(dir_.path() + "/pid-" + name_ + "-" + pod);
  return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
}

int LocalJob::LastStep(const std::string& pod_log) {
  static const std::regex kRe(R"(\] step (\d+)/)");
  int last = -1;
  for (std::sregex_iterator it(pod_log.begin(), pod_log.end(), kRe), end; it != end; ++it) {
    last = std::stoi((*it)[1]);
  }
  return last;
}

std::vector<pid_t> ProcessGroupsOfPod(const std::string& pod) {
  const std::string want = "DDP_POD_NAME=" + pod;
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return {-1};
  while (dirent* d = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || getpgid(static_cast<pid_t>(pid)) != pid) continue;
    const std::string env = ReadFile("/proc/" + std::string(d->d_name) + "/environ");
    for (size_t at = 0; at < env.size();) {
      const size_t nul = env.find('\0', at);
      if (env.compare(at, nul == std::string::npos ? std::string::npos : nul - at, want) == 0) {
        found.push_back(static_cast<pid_t>(pid));
        break;
      }
      if (nul == std::string::npos) break;
      at = nul + 1;
    }
  }
  closedir(proc);
  if (found.empty()) found.push_back(-1);
  return found;
}

int Int(const nlohmann::json& status, const char* key) {
  return status.is_object() ? status.value(key, -1) : -1;
}

std::string FailedReason(const nlohmann::json& status) {
  for (const auto& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "Failed" && c.value("status", "") == "True") return c["reason"];
  }
  return "";
}

std::string ReferenceChecksum(const TempDir& dir, int steps, int replicas) {
  JobOptions o;
  o.name = "clean";
  o.recovery = "Restart";
  o.steps = steps;
  o.replicas = replicas;
  LocalJob clean(dir, o);
  EXPECT_EQ(clean.op().Wait(seconds(300)), 0) << clean.op().Output();  // a bound, not a target
  const std::string sum = LastChecksum(clean.PodLog("worker-0"));
  EXPECT_FALSE(sum.empty()) << clean.PodLog("worker-0");
  for (int i = 1; i < replicas; ++i) {
    EXPECT_EQ(LastChecksum(clean.PodLog("worker-" + std::to_string(i))), sum) << i;
  }
  return sum;
}

}  // namespace ddp::testing_local
