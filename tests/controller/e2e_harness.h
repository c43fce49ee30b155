// End-to-end harness: a fake API server in the test process, the real `ddp-operator run` binary
// as a child process pointed at it through a kubeconfig, a pod-event recorder (a watch through
// the real client) and polling helpers with deadlines. The test plays the kubelet.
#ifndef DDP_TESTS_CONTROLLER_E2E_HARNESS_H_
#define DDP_TESTS_CONTROLLER_E2E_HARNESS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "tests/kube/fake_apiserver.h"

namespace ddp::e2e {

using nlohmann::json;
using std::chrono::milliseconds;

// Polls `cond` every 20 ms until it holds (true) or `timeout` passes (false).
bool WaitFor(const std::function<bool()>& cond, milliseconds timeout);

// A child `ddp-operator run` with stderr captured to a file.
class OperatorProcess {
 public:
  // extra: flags after `run --kubeconfig K --metrics-bind-address 127.0.0.1:0 ...`.
  OperatorProcess(const std::string& kubeconfig, const std::string& log_path,
                  std::vector<std::string> extra);
  ~OperatorProcess();  // SIGKILL if still running
  pid_t pid() const { return pid_; }
  // Sends `sig`; then waits up to `timeout` for exit. Returns the exit status (as waitpid's
  // WEXITSTATUS, or 128+signal), or nullopt if it did not exit.
  std::optional<int> Signal(int sig, milliseconds timeout);
  // Non-blocking: the exit code once exited.
  std::optional<int> ExitCode();
  std::string Log() const;
  // Port of /metrics, read from the log line; 0 until it appears.
  int MetricsPort() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> exit_code_;
};

struct PodEvent {
  std::string type;  // ADDED MODIFIED DELETED
  std::string name;
  std::string uid;
  int round = -1;
};

// Rule 3 read from a watch history: the names of pods of round `next` that were ADDED while a
// pod of round `prev` still existed (empty when the rounds never overlapped). `*saw_next` is set
// to whether any pod of round `next` was added at all, so an empty answer is not vacuous.
std::vector<std::string> PodsAddedWhileOlderRoundLive(const std::vector<PodEvent>& events,
                                                      int prev, int next, bool* saw_next);

// Records every pod event in one namespace via the real client's watch, in server order.
class PodRecorder {
 public:
  PodRecorder(controller::KubeClient* client, const std::string& ns);
  ~PodRecorder();
  std::vector<PodEvent> Events() const;

 private:
  controller::KubeClient* client_;
  std::shared_ptr<controller::Cancellation> cancel_ = std::make_shared<controller::Cancellation>();
  mutable std::mutex mu_;
  std::vector<PodEvent> events_;
  std::thread thread_;
};

// The test fixture's world: server, kubeconfig, a client, paths.
class World {
 public:
  // tls: the server speaks HTTPS with a throwaway CA that the kubeconfig carries. pod_grace:
  // FakeApiServerOptions::pod_grace (0: a deleted pod goes at once).
  explicit World(bool tls = false, milliseconds pod_grace = milliseconds(0));
  ~World();
  fake::FakeApiServer& server() { return *server_; }
  controller::KubeClient& client() { return *client_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  std::string TempPath(const std::string& name) const { return dir_ + "/" + name; }
  std::unique_ptr<OperatorProcess> StartOperator(const std::string& name,
                                                 std::vector<std::string> extra = {});

  static constexpr const char* kNs = "ml";
  // A DDPJob of `replicas` pods with an `worker` container; `spec` is merged over the defaults.
  static json Job(const std::string& name, int replicas, const json& spec_overlay = json::object());
  void CreateJob(const json& job);
  std::optional<json> GetJob(const std::string& name);
  json JobStatus(const std::string& name);
  std::optional<json> GetPod(const std::string& name);
  std::vector<json> Pods();  // in kNs
  std::vector<json> PodsOfRound(const std::string& job, int round);
  // Waits until the pods of `job` in `round` number `n`, then marks them all Running.
  bool RunRound(const std::string& job, int round, int n, milliseconds timeout);

 private:
  std::unique_ptr<fake::FakeApiServer> server_;
  std::unique_ptr<controller::KubeClient> client_;
  std::string dir_, kubeconfig_;
};

int RoundOf(const json& pod);

}  // namespace ddp::e2e

#endif  // DDP_TESTS_CONTROLLER_E2E_HARNESS_H_
