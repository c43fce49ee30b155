// Every role of ddp-worker raises its soft open-file limit to the hard one at start (common/
// fd_limit.h): a container under containerd 2.x starts at 1024, below what a rendezvous pod
// holds for 53 pods of 8 GPUs. Each role is started here at a soft limit of 256 and its limit
// read from /proc while it runs (each waits for a peer that never comes).
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

// The soft and hard "Max open files" of a running process; {"", ""} when unreadable.
std::pair<std::string, std::string> OpenFileLimits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    std::string soft, hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {"", ""};
}

TEST(FileLimitE2E, EveryRoleRaisesItsSoftOpenFileLimitToTheHardOne) {
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max <= 256) GTEST_SKIP() << "hard limit unlimited or too low";
  const std::string hard = std::to_string(lim.rlim_max);
  const rlimit saved = lim;
  lim.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);

  const std::string dir = MakeTempDir("ddp-e2e-nofile");
  const std::string port = std::to_string(FreePort());
  const std::map<std::string, std::string> base = {
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}, {"DDP_RENDEZVOUS_TIMEOUT", "60"}};
  auto with = [&](std::map<std::string, std::string> more) {
    for (const auto& [k, v] : base) more.emplace(k, v);
    return more;
  };
  const auto args = TinyArgs(10);
  struct Role {
    std::string name;
    Proc proc;
  };
  std::vector<Role> roles;
  // The rendezvous pod of an InPlace job of 2 pods; a pod of it (its supervisor), whose
  // other pod never comes; a trainer of a Restart group (rank 1: rank 0 never comes); a
  // launcher of 2 local ranks of node 1 (node 0 never comes).
  roles.push_back({"rendezvous", StartProc(kWorkerBin, {"rendezvous"},
                                           with({{"DDP_STORE_ADDR", "127.0.0.1"}, {"NNODES", "2"},
                                                 {"WORLD_SIZE", "2"}, {"NPROC_PER_NODE", "1"},
                                                 {"DDP_RECOVERY", "InPlace"},
                                                 {"DDP_POD_NAME", "rendezvous"},
                                                 {"DDP_POD_ROLE", "rendezvous"}}),
                                           dir, "rendezvous")});
  roles.push_back({"supervisor", StartProc(kWorkerBin, args,
                                           with({{"DDP_STORE_ADDR", "127.0.0.1"}, {"NNODES", "2"},
                                                 {"WORLD_SIZE", "2"}, {"NPROC_PER_NODE", "1"},
                                                 {"DDP_RECOVERY", "InPlace"}, {"DDP_POD_NAME", "pod0"},
                                                 {"DDP_POD_ROLE", "worker"}, {"RANK", "0"},
                                                 {"NODE_RANK", "0"},
                                                 {"DDP_TERMINATION_LOG", dir + "/pod0.end"}}),
                                           dir, "supervisor")});
  const std::string other_port = std::to_string(FreePort());
  roles.push_back({"trainer", StartProc(kWorkerBin, args,
                                        {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", other_port},
                                         {"DDP_RENDEZVOUS_TIMEOUT", "60"}, {"WORLD_SIZE", "2"},
                                         {"RANK", "1"}},
                                        dir, "trainer")});
  roles.push_back({"launch", StartProc(kWorkerBin, [&] {
                                         std::vector<std::string> a = {"launch"};
                                         a.insert(a.end(), args.begin(), args.end());
                                         return a;
                                       }(),
                                       {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", other_port},
                                        {"DDP_RENDEZVOUS_TIMEOUT", "60"}, {"NNODES", "2"},
                                        {"NODE_RANK", "1"}, {"NPROC_PER_NODE", "2"},
                                        {"WORLD_SIZE", "4"}},
                                       dir, "launch")});
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);

  for (const Role& r : roles) {
    std::pair<std::string, std::string> seen;
    EXPECT_TRUE(PollUntil([&] {
      seen = OpenFileLimits(r.proc.pid);
      return seen.first == hard;
    }, std::chrono::seconds(20)))
        << r.name << ": soft " << seen.first << ", hard " << seen.second << "\n"
        << ReadAll(r.proc.err_path);
    EXPECT_EQ(seen.second, hard) << r.name;
    EXPECT_NE(ReadAll(r.proc.err_path).find(r.name + ": open files: soft limit 256 -> " + hard),
              std::string::npos) << ReadAll(r.proc.err_path);
  }
  for (const Role& r : roles) {
    kill(-r.proc.pid, SIGKILL);
    WaitProc(r.proc, std::chrono::seconds(10));
  }
  std::filesystem::remove_all(dir);
}

// The rendezvous pod of 1,000 pods x 8 under a hard limit of 512: its store takes twice the
// connections the group and its 64 spares hold (1,064 x (2 + 2 x 8) = 19,152 -> 38,304), and it
// says at start that it needs (1,064 x (3 + 2 x 8) + 256 = 20,472) more open files than it has.
TEST(FileLimitE2E, TheRendezvousPodSizesItsStoreByTheGroupAndWarnsBelowItsNeed) {
  const std::string dir = MakeTempDir("ddp-e2e-nofile-rdzv");
  const int pods = 1000 + 64, nproc = 8;
  const int bound = 2 * pods * (2 + 2 * nproc), need = pods * (3 + 2 * nproc) + 256;
  const Proc p = StartProc("/bin/sh", {"-c", "ulimit -n 512 && exec \"$0\" rendezvous", kWorkerBin},
                           {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(FreePort())},
                            {"DDP_STORE_ADDR", "127.0.0.1"}, {"NNODES", "1000"},
                            {"WORLD_SIZE", "8000"}, {"NPROC_PER_NODE", "8"},
                            {"DDP_RECOVERY", "InPlace"}, {"DDP_POD_NAME", "rendezvous"},
                            {"DDP_POD_ROLE", "rendezvous"}, {"DDP_RENDEZVOUS_TIMEOUT", "60"}},
                           dir, "rendezvous");
  const std::string said = "at most " + std::to_string(bound) + " store connections";
  const std::string warned = "need about " + std::to_string(need) + " open files, the limit is 512";
  EXPECT_TRUE(PollUntil([&] { return ReadAll(p.err_path).find(said) != std::string::npos; },
                        std::chrono::seconds(20)))
      << ReadAll(p.err_path);
  EXPECT_NE(ReadAll(p.err_path).find(warned), std::string::npos) << ReadAll(p.err_path);
  kill(-p.pid, SIGKILL);
  WaitProc(p, std::chrono::seconds(10));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
