// Helpers of the in-place recovery e2e tests: an InPlace group as the operator runs it, from real
// ddp-worker processes: the rendezvous pod (`ddp-worker rendezvous`: the store and the group's
// authority) and one-trainer "pods" (each its own supervisor, in its own process group), spare
// pods included. Started, frozen, killed and awaited by the tests.
#ifndef DDP_TESTS_WORKER_INPLACE_UTIL_H_
#define DDP_TESTS_WORKER_INPLACE_UTIL_H_

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {

struct PodsResult {
  std::vector<std::optional<int>> codes;
  std::vector<std::string> out, err;
  std::vector<std::string> ends;  // each pod's termination message ("" when it wrote none)
  std::optional<int> rendezvous_code;
  std::string rendezvous_err;
};

// One InPlace group of `n` one-trainer pods (rank i = pod i) on one host.
struct InPlaceGroup {
  int n = 0;
  std::vector<std::string> args;
  std::string dir;
  std::map<std::string, std::string> env;  // common to every pod (MASTER_PORT, ...)
  Proc rendezvous;
  std::vector<Proc> pods;  // what Wait() waits for, in the order started
  std::vector<std::string> end_paths;
};

// The environment of pod `name` (`node` its rank, -1 for a spare).
inline std::map<std::string, std::string> PodEnv(const InPlaceGroup& g, const std::string& name,
                                                 int node) {
  auto env = g.env;
  env["MASTER_ADDR"] = env["DDP_STORE_ADDR"] = "127.0.0.1";
  env["WORLD_SIZE"] = env["NNODES"] = std::to_string(g.n);
  env["NPROC_PER_NODE"] = "1";
  env["DDP_RECOVERY"] = "InPlace";
  env["DDP_POD_NAME"] = name;
  env["DDP_POD_ROLE"] = node >= 0 ? "worker" : "spare";
  if (node >= 0) env["RANK"] = env["NODE_RANK"] = std::to_string(node);
  return env;
}

// Starts (another incarnation of) pod `name`; its termination message goes to a file of its own.
inline Proc StartPod(InPlaceGroup* g, const std::string& name, int node,
                     std::map<std::string, std::string> extra = {}) {
  static int started = 0;
  const std::string tag = name + "-" + std::to_string(++started);
  auto env = PodEnv(*g, name, node);
  env["DDP_TERMINATION_LOG"] = g->dir + "/" + tag + ".end";
  for (const auto& [k, v] : extra) env[k] = v;
  Proc p = StartProc(kWorkerBin, g->args, env, g->dir, tag);
  g->pods.push_back(p);
  g->end_paths.push_back(env["DDP_TERMINATION_LOG"]);
  return p;
}

// The rendezvous pod, `n` worker pods ("pod<i>", faults by rank as DDP_FAULT) and `spares` spare
// pods ("spare<k>"), `rank_env` more environment by rank. Defaults: rendezvous timeout 60 s,
// liveness 5 s, budget 3.
inline InPlaceGroup StartInPlace(int n, const std::vector<std::string>& args, const std::string& dir,
                                 const std::map<int, std::string>& faults,
                                 std::map<std::string, std::string> env = {}, int spares = 0,
                                 const std::map<int, std::map<std::string, std::string>>& rank_env = {}) {
  InPlaceGroup g;
  g.n = n;
  g.args = args;
  g.dir = dir;
  if (!env.count("MASTER_PORT")) env["MASTER_PORT"] = std::to_string(FreePort());
  if (!env.count("DDP_RENDEZVOUS_TIMEOUT")) env["DDP_RENDEZVOUS_TIMEOUT"] = "60";
  if (!env.count("DDP_LIVENESS_TIMEOUT")) env["DDP_LIVENESS_TIMEOUT"] = "5";
  g.env = env;
  static int groups = 0;
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir,
                           "rendezvous-" + std::to_string(++groups));
  for (int r = 0; r < n; ++r) {
    std::map<std::string, std::string> extra;
    if (auto it = faults.find(r); it != faults.end()) extra["DDP_FAULT"] = it->second;
    if (auto it = rank_env.find(r); it != rank_env.end()) {
      for (const auto& [k, v] : it->second) extra[k] = v;
    }
    StartPod(&g, "pod" + std::to_string(r), r, extra);
  }
  for (int k = 0; k < spares; ++k) StartPod(&g, "spare" + std::to_string(k), -1);
  return g;
}

// Kills every pod of `g` and its rendezvous pod when it goes out of scope: a test that fails
// midway leaves no process behind.
struct KillOnExit {
  InPlaceGroup* g;
  ~KillOnExit() {
    for (const Proc& p : g->pods) {
      kill(-p.pid, SIGKILL);
      WaitProc(p, std::chrono::seconds(5));
    }
    kill(-g->rendezvous.pid, SIGKILL);
    WaitProc(g->rendezvous, std::chrono::seconds(5));
  }
};

// The resize math tests' training: TinyArgs with batches of `batch`, a ConstantGlobal global
// batch of `global` over `examples` synthetic examples, at a constant learning rate of 0.001 (at
// 0.01 the tiny model overfits chaotically and any two world sizes part by 1e-2 within 200 steps).
inline std::vector<std::string> ConstantGlobalArgs(int steps, int batch, int global, int examples) {
  auto args = TinyArgs(steps, batch);
  args.insert(args.end(), {"--synthetic-tokens", std::to_string(examples + 16), "--lr", "0.001",
                           "--min-lr", "0.001", "--warmup-steps", "0", "--batch-policy",
                           "ConstantGlobal", "--global-batch-size", std::to_string(global)});
  return args;
}

// One sample log per pod process started (DDP_SAMPLE_LOG), for ExpectEverySampleOnce.
struct SampleLogs {
  std::string dir;
  std::vector<std::string> paths;
  std::map<std::string, std::string> For(const std::string& pod) {
    paths.push_back(dir + "/samples-" + pod + "-" + std::to_string(paths.size()));
    return {{"DDP_SAMPLE_LOG", paths.back()}};
  }
};

// Waits for every pod started, then the rendezvous pod (which ends once training finished and
// the pods are gone; it is stopped if it has not ended 40 s after them).
inline PodsResult Wait(const InPlaceGroup& g) {
  PodsResult r;
  for (size_t i = 0; i < g.pods.size(); ++i) {
    r.codes.push_back(WaitProc(g.pods[i], std::chrono::seconds(150)));
    r.out.push_back(ReadAll(g.pods[i].out_path));
    r.err.push_back(ReadAll(g.pods[i].err_path));
    std::string end;
    std::getline(std::ifstream(g.end_paths[i]), end);
    r.ends.push_back(end);
  }
  r.rendezvous_code = WaitProc(g.rendezvous, std::chrono::seconds(40));
  r.rendezvous_err = ReadAll(g.rendezvous.err_path);
  return r;
}

inline PodsResult RunInPlace(int n, const std::vector<std::string>& args, const std::string& dir,
                             const std::map<int, std::string>& faults,
                             std::map<std::string, std::string> env = {}) {
  return Wait(StartInPlace(n, args, dir, faults, std::move(env)));
}

inline std::string Reference(int n, const std::vector<std::string>& args, const std::string& dir) {
  GroupResult ref = RunGroup(n, args, {}, dir);
  for (size_t r = 0; r < ref.codes.size(); ++r) EXPECT_EQ(ref.codes[r], 0) << ref.err[r];
  return Field(ref.out[0], "param_checksum");
}

// Every pod in `which` (default: all) ended 0 with the reference's parameters.
inline void ExpectAllEqual(const PodsResult& g, const std::string& want,
                           std::vector<size_t> which = {}) {
  ASSERT_FALSE(want.empty());
  if (which.empty()) {
    for (size_t r = 0; r < g.codes.size(); ++r) which.push_back(r);
  }
  for (size_t r : which) {
    EXPECT_EQ(g.codes[r], 0) << g.err[r];
    EXPECT_EQ(Field(g.out[r], "param_checksum"), want) << "pod " << r << "\n" << g.err[r];
  }
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Live children of `parent` whose process name (/proc/<pid>/comm) is `name`.
inline std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& name) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat, comm;
    std::getline(std::ifstream(e.path() / "stat"), stat);
    std::getline(std::ifstream(e.path() / "comm"), comm);
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || comm != name) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = -1;
    if (rest >> state >> ppid && ppid == parent && state != 'Z') out.push_back(std::stoi(pid));
  }
  return out;
}

// Rank 0's step lines ("step N/M ...") seen so far in `proc`'s log (0 before the first).
inline int64_t LastStep(const Proc& proc) {
  const std::string log = ReadAll(proc.err_path);
  const size_t at = log.rfind("] step ");
  return at == std::string::npos ? 0 : std::atoll(log.c_str() + at + 7);
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_INPLACE_UTIL_H_
