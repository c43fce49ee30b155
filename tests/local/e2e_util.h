// Helpers for local-mode end-to-end tests: temp dirs, running `ddp-operator local` as a child
// with a hard timeout, polling with deadlines.
#ifndef DDP_TESTS_LOCAL_E2E_UTIL_H_
#define DDP_TESTS_LOCAL_E2E_UTIL_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::testing_local {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  // Removes the directory, unless DDP_TEST_KEEP_FAILED is set and the test failed (then it
  // prints the path).
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
// Write-temp + rename, as editors save.
void WriteFileAtomic(const std::string& path, const std::string& text);

// Polls `cond` every 20 ms until it is true or `timeout` passes.
bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

// `ddp-operator local` running as a child in its own process group, output to a file.
class OperatorProcess {
 public:
  OperatorProcess(const std::vector<std::string>& args, const std::string& output_path);
  // Kills it (SIGKILL to its group) if still running.
  ~OperatorProcess();
  pid_t pid() const { return pid_; }
  // Its exit code (128+n for a signal), or -1 if it did not end within `timeout`.
  int Wait(std::chrono::milliseconds timeout);
  bool running();
  std::string Output() const { return ReadFile(output_path_); }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string output_path_;
};

// run_dir/status.json's "status" object, or null while it does not exist.
nlohmann::json ReadStatus(const std::string& run_dir);

// A DDPJob manifest whose worker runs `sh -c script`, with a short grace period.
// The script goes through Kubernetes' $(VAR) expansion, where $$ means a literal $: write the
// shell's $$ as $$$$.
std::string ShellJob(const std::string& name, int replicas, const std::string& script,
                     const std::string& extra_spec = "");

// The ddp-worker binary: $DDP_WORKER_BIN, else the one built in this tree; "" when neither.
std::string WorkerBin();

// The param_checksum=<hex> of the last line of `log` that has one; "" when none.
std::string LastChecksum(const std::string& log);

}  // namespace ddp::testing_local

#endif  // DDP_TESTS_LOCAL_E2E_UTIL_H_
