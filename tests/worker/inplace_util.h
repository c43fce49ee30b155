// Helpers of the in-place recovery e2e tests: one-trainer "pods" (real ddp-worker processes with
// DDP_RECOVERY=InPlace, each its own supervisor; pod 0's hosts the store), started and awaited.
#ifndef DDP_TESTS_WORKER_INPLACE_UTIL_H_
#define DDP_TESTS_WORKER_INPLACE_UTIL_H_

#include <gtest/gtest.h>
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
};

// The environment of pod `rank` of an `n`-pod InPlace group (MASTER_PORT from `env`).
inline std::map<std::string, std::string> PodEnv(int n, int rank, std::map<std::string, std::string> env) {
  env["MASTER_ADDR"] = "127.0.0.1";
  env["WORLD_SIZE"] = env["NNODES"] = std::to_string(n);
  env["NPROC_PER_NODE"] = "1";
  env["DDP_RECOVERY"] = "InPlace";
  env["RANK"] = env["NODE_RANK"] = std::to_string(rank);
  if (!env.count("DDP_RENDEZVOUS_TIMEOUT")) env["DDP_RENDEZVOUS_TIMEOUT"] = "60";
  return env;
}

inline Proc StartPod(int n, int rank, const std::vector<std::string>& args, const std::string& dir,
              const std::map<std::string, std::string>& env) {
  static int started = 0;
  return StartProc(kWorkerBin, args, PodEnv(n, rank, env), dir,
                   "inplace-pod" + std::to_string(rank) + "-" + std::to_string(++started));
}

// Starts `n` one-trainer pods of one InPlace group; `faults` by rank (DDP_FAULT).
inline std::vector<Proc> StartInPlacePods(int n, const std::vector<std::string>& args,
                                   const std::string& dir, const std::map<int, std::string>& faults,
                                   std::map<std::string, std::string> env = {}) {
  if (!env.count("MASTER_PORT")) env["MASTER_PORT"] = std::to_string(FreePort());
  std::vector<Proc> procs;
  for (int r = 0; r < n; ++r) {
    auto e = env;
    if (auto it = faults.find(r); it != faults.end()) e["DDP_FAULT"] = it->second;
    procs.push_back(StartPod(n, r, args, dir, e));
  }
  return procs;
}

inline PodsResult WaitPods(const std::vector<Proc>& procs) {
  PodsResult g;
  for (const auto& p : procs) {
    g.codes.push_back(WaitProc(p, std::chrono::seconds(150)));
    g.out.push_back(ReadAll(p.out_path));
    g.err.push_back(ReadAll(p.err_path));
  }
  return g;
}

inline PodsResult RunInPlacePods(int n, const std::vector<std::string>& args, const std::string& dir,
                          const std::map<int, std::string>& faults,
                          std::map<std::string, std::string> env = {}) {
  return WaitPods(StartInPlacePods(n, args, dir, faults, std::move(env)));
}

inline std::string Reference(int n, const std::vector<std::string>& args, const std::string& dir) {
  GroupResult ref = RunGroup(n, args, {}, dir);
  for (size_t r = 0; r < ref.codes.size(); ++r) EXPECT_EQ(ref.codes[r], 0) << ref.err[r];
  return Field(ref.out[0], "param_checksum");
}

inline void ExpectAllEqual(const PodsResult& g, const std::string& want) {
  ASSERT_FALSE(want.empty());
  for (size_t r = 0; r < g.codes.size(); ++r) {
    EXPECT_EQ(g.codes[r], 0) << g.err[r];
    EXPECT_EQ(Field(g.out[r], "param_checksum"), want) << "rank " << r << "\n" << g.err[r];
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

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_INPLACE_UTIL_H_
