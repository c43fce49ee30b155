// Helpers for tests that run real ddp-worker processes: start with extra env, capture output to
// files, wait with a deadline (killing on timeout), poll a condition, pick free ports.
#ifndef DDP_TESTS_WORKER_PROCESS_UTIL_H_
#define DDP_TESTS_WORKER_PROCESS_UTIL_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/common/free_port.h"  // FreePort()

namespace ddp::testing {

struct Proc {
  pid_t pid = -1;
  std::string out_path, err_path;
};

// Starts `bin args...` with the current env plus `env`, stdout/stderr to <dir>/<name>.out/.err,
// in a process group of its own (its pid), as a pod is.
Proc StartProc(const std::string& bin, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env, const std::string& dir,
               const std::string& name);

// Exit code (128 + n for signal n), or nullopt after `timeout` (the process is then SIGKILLed
// and reaped, so no test leaves a process behind). Waiting again for a process returns its code.
std::optional<int> WaitProc(const Proc& p, std::chrono::milliseconds timeout);

// Polls `cond` every 20 ms until true or the deadline; returns its last value.
bool PollUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

std::string ReadAll(const std::string& path);
// A fresh directory under the system temp dir.
std::string MakeTempDir(const std::string& prefix);
// The value of `key=` in the first line of `text` that contains it ("" if none).
std::string Field(const std::string& text, const std::string& key);

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_PROCESS_UTIL_H_
