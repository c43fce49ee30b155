// Shared pieces of the worker e2e tests: a tiny, fast training config and a runner for a group
// of real ddp-worker processes on 127.0.0.1.
#ifndef DDP_TESTS_WORKER_E2E_UTIL_H_
#define DDP_TESTS_WORKER_E2E_UTIL_H_

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/worker/process_util.h"

namespace ddp::testing {

inline const std::string kWorkerBin = DDP_WORKER_BIN;

// A model small enough that a step takes milliseconds on one core.
inline std::vector<std::string> TinyArgs(int steps, int batch = 4) {
  return {"--model", "mingpt", "--n-layer", "2", "--n-head", "2", "--n-embd", "32",
          "--block-size", "16", "--batch-size", std::to_string(batch), "--steps",
          std::to_string(steps), "--threads", "1", "--log-every", "1", "--device", "cpu",
          "--synthetic-tokens", "20000", "--warmup-steps", "3", "--collective-timeout", "20"};
}

// The loss of every "] step ... loss X" line a trainer logged, in order.
inline std::vector<double> LossTrajectory(const std::string& log) {
  std::vector<double> losses;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t p = line.find(" loss ");
    if (line.find("] step ") == std::string::npos || p == std::string::npos) continue;
    losses.push_back(std::stod(line.substr(p + 6)));
  }
  return losses;
}

struct GroupResult {
  std::vector<std::optional<int>> codes;  // nullopt: timed out (killed)
  std::vector<std::string> out, err;
};

// Runs ranks 0..n-1 of one group with `args`, common `env` and per-rank `rank_env`, and waits
// for all of them (each at most `timeout`).
inline GroupResult RunGroup(int n, const std::vector<std::string>& args,
                            std::map<std::string, std::string> env, const std::string& dir,
                            std::chrono::seconds timeout = std::chrono::seconds(150),
                            const std::map<int, std::map<std::string, std::string>>& rank_env = {}) {
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(FreePort());
  env["WORLD_SIZE"] = std::to_string(n);
  env["DDP_RENDEZVOUS_TIMEOUT"] = "60";
  std::vector<Proc> procs;
  static int run = 0;
  ++run;
  for (int r = 0; r < n; ++r) {
    auto e = env;
    e["RANK"] = std::to_string(r);
    if (auto it = rank_env.find(r); it != rank_env.end()) {
      for (const auto& [k, v] : it->second) e[k] = v;
    }
    procs.push_back(StartProc(kWorkerBin, args, e, dir, "run" + std::to_string(run) + "-rank" + std::to_string(r)));
  }
  GroupResult g;
  for (const auto& p : procs) {
    g.codes.push_back(WaitProc(p, timeout));
    g.out.push_back(ReadAll(p.out_path));
    g.err.push_back(ReadAll(p.err_path));
  }
  return g;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_E2E_UTIL_H_
