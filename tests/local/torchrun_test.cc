// A user's own PyTorch program under torchrun, as a DDPJob in local mode: 2 pods, each running
// `python3 -m torch.distributed.run` on examples/torchrun/ddp_train.py with the PET_* variables
// the operator sets. One pod is killed mid-run; the next round resumes from the snapshot in
// spec.checkpoint.path and the job succeeds. Skipped when no python3 has torch.
#include <signal.h>

#include <cstdlib>
#include <regex>

#include <gtest/gtest.h>

#include "e2e_util.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

// The first of python3 on PATH and Debian's /usr/bin/python3 that imports torch, or "".
std::string PythonWithTorch() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

// torchrun as `python` runs it: plain, or, where torch was built without libuv (Debian 13's
// 2.6, whose torchrun then cannot start a TCPStore: docs/torchrun.md), through the example's
// examples/torchrun/torchrun_classic_store.py, as the docs tell users of that torch.
std::string Torchrun(const std::string& python) {
  const std::string probe = python +
      " -c 'import torch.distributed as d; d.TCPStore(\"127.0.0.1\", 0, 1, True)' >/dev/null 2>&1";
  if (std::system(probe.c_str()) == 0) return python + " -m torch.distributed.run";
  std::string shim = DDP_TORCHRUN_SCRIPT;
  shim = shim.substr(0, shim.rfind('/') + 1) + "torchrun_classic_store.py";
  return python + " " + shim;
}

// Debian's torch 1.13 torchrun crashes writing worker output without --redirects/--tee.
std::string TorchrunJob(const std::string& dir, const std::string& python) {
  return "apiVersion: ddp.dev/v1alpha1\n"
         "kind: DDPJob\n"
         "metadata: {name: tr}\n"
         "spec:\n"
         "  replicas: 2\n"
         "  rendezvous: {timeoutSeconds: 60}\n"
         "  failurePolicy: {restartPolicy: OnFailure, maxRestarts: 3}\n"
         "  checkpoint: {path: " + dir + "/snapshots}\n"
         "  template:\n"
         "    spec:\n"
         "      terminationGracePeriodSeconds: 5\n"
         "      containers:\n"
         "      - name: worker\n"
         "        image: unused\n"
         "        command: [sh, -c]\n"
         "        args: ['echo $$$$ > " + dir + "/pid-$DDP_ROUND-$NODE_RANK; exec " + Torchrun(python) +
         " --redirects 1 --tee 1 " DDP_TORCHRUN_SCRIPT
         " --steps 300 --save-every 20 --step-delay 0.02']\n"
         "        env:\n"
         "        - {name: OMP_NUM_THREADS, value: \"1\"}\n"
         "        - {name: GLOO_SOCKET_IFNAME, value: lo}\n"
         // torchrun 2.x tees its workers' lines into its own stdout, a file here: unbuffered,
         // the test sees the snapshots mid-run, not at the end.
         "        - {name: PYTHONUNBUFFERED, value: \"1\"}\n";
}

int LastSnapshotStep(const std::string& log) {
  static const std::regex kRe(R"(step (\d+) loss [0-9.]+ snapshot saved)");
  int last = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), kRe), end; it != end; ++it) {
    last = std::stoi((*it)[1]);
  }
  return last;
}

TEST(TorchrunLocal, KilledPodResumesFromTheSnapshotAndTheJobSucceeds) {
  const std::string python = PythonWithTorch();
  if (python.empty()) GTEST_SKIP() << "no python3 with torch (Debian: apt install python3-torch)";
  TempDir dir;
  const std::string manifest = dir.path() + "/tr.yaml";
  const std::string run_dir = dir.path() + "/run";
  WriteFileAtomic(manifest, TorchrunJob(dir.path(), python));
  OperatorProcess op({DDP_OPERATOR_BIN, "local", "-f", manifest, "--run-dir", run_dir, "--plain"},
                     dir.path() + "/out.txt");
  const std::string log0 = run_dir + "/tr-worker-0.round0.log";
  // Mid-run: at least two snapshots written, the 300 steps (>= 6 s) far from done.
  ASSERT_TRUE(WaitFor([&] { return LastSnapshotStep(ReadFile(log0)) >= 40; }, seconds(90)))
      << op.Output() << ReadFile(log0);
  const int before_kill = LastSnapshotStep(ReadFile(log0));
  ASSERT_LT(before_kill, 300) << ReadFile(log0);
  const pid_t pod1 = std::atoi(ReadFile(dir.path() + "/pid-0-1").c_str());
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-pod1, SIGKILL), 0) << "pod 1's process group (torchrun and its worker)";

  ASSERT_EQ(op.Wait(seconds(150)), 0) << op.Output();
  nlohmann::json s = ReadStatus(run_dir);
  EXPECT_EQ(s["phase"], "Succeeded") << s.dump();
  const int round = s["round"].get<int>();
  EXPECT_GE(round, 1) << s.dump();
  const std::string last = ReadFile(run_dir + "/tr-worker-0.round" + std::to_string(round) + ".log");
  static const std::regex kResumed(R"(rank 0: resumed from snapshot step (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(last, m, kResumed)) << last;
  EXPECT_GE(std::stoi(m[1]), before_kill) << "resumed from an older snapshot than the kill saw";
  EXPECT_NE(last.find("done step 300"), std::string::npos) << last;
}

}  // namespace
}  // namespace ddp::testing_local
