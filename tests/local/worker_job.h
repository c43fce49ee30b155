// A real ddp-worker job in local mode, for the e2e tests that train: a tiny minGPT on synthetic
// tokens, one `ddp-operator local` run of it, and the checksum of a fault-free reference run.
// Needs ddp-worker (WorkerBin()); the callers skip without it.
#ifndef DDP_TESTS_LOCAL_WORKER_JOB_H_
#define DDP_TESTS_LOCAL_WORKER_JOB_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace ddp::testing_local {

struct JobOptions {
  std::string name;
  std::string recovery = "InPlace";
  int replicas = 2;
  int spares = 0;
  int max_restarts = 3;
  int steps = 1500;
  std::string fault;    // DDP_FAULT for every pod, "" for none
  std::string wrapper;  // shell run before exec'ing ddp-worker ($(VAR) expansion: write $ as $$)
  std::string elastic;  // spec.elastic as flow YAML ("{minReplicas: 1, maxReplicas: 4}"), "" none
  std::vector<std::string> operator_args;  // more `ddp-operator local` flags
  std::string termination_message_path;  // the worker container's, "" for Kubernetes' default
};

// The manifest: one thread per rank, a few hundred steps a second here. Each pod writes its main
// process id (its process group) to <dir>/pid-<pod name>.
std::string WorkerJob(const TempDir& dir, const JobOptions& o);

// One `ddp-operator local` run of `o` in <dir>/<name>.
class LocalJob {
 public:
  LocalJob(const TempDir& dir, const JobOptions& o);
  // When the test failed: what every pod of the run logged last, step lines left out (the
  // failure messages show the operator's output; a group that hangs shows itself in the pods').
  // DDP_TEST_KEEP_FAILED=1 in the environment also keeps the run directory (e2e_util.h TempDir).
  ~LocalJob();
  OperatorProcess& op() { return *op_; }
  nlohmann::json Status() const { return ReadStatus(run_dir_); }
  std::string Log(const std::string& file) const { return ReadFile(run_dir_ + "/" + file); }
  // The log of `pod` ("worker-0") in `round`, its `incarnation`-th process under that name.
  std::string PodLog(const std::string& pod, int incarnation = 0, int round = 0) const;
  // The process group of pod `pod` ("worker-0") as it last wrote it; -1 until it did.
  pid_t PodGroup(const std::string& pod) const;
  // The last step rank 0 logged in `pod_log` ("step N/T"), -1 before any.
  static int LastStep(const std::string& pod_log);

 private:
  const TempDir& dir_;
  std::string run_dir_, name_;
  std::unique_ptr<OperatorProcess> op_;
};

// The process groups of live processes whose environment has DDP_POD_NAME=`pod` and that lead
// their group (a pod's main process, or a process it started in a session of its own), in /proc
// order; {-1} when none. The rendezvous pod runs no shell that could write its pid.
std::vector<pid_t> ProcessGroupsOfPod(const std::string& pod);

// status[key] as an int; -1 when absent.
int Int(const nlohmann::json& status, const char* key);
// The reason of the Failed=True condition; "" when none.
std::string FailedReason(const nlohmann::json& status);

// The fault-free run every faulty run must end on: the same training of `replicas` pods under
// recovery Restart (run "clean" in `dir`); every rank's checksum, checked equal.
std::string ReferenceChecksum(const TempDir& dir, int steps, int replicas = 2);

}  // namespace ddp::testing_local

#endif  // DDP_TESTS_LOCAL_WORKER_JOB_H_
