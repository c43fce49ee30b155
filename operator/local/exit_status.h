// How a local "pod" (a process group) ended, in the terms a kubelet would report it. Pure.
// The executor feeds the result to the planner as an ObservedPod, so restart policies see the
// same facts they would see in a cluster.
#ifndef DDP_OPERATOR_LOCAL_EXIT_STATUS_H_
#define DDP_OPERATOR_LOCAL_EXIT_STATUS_H_

#include <string>

namespace ddp::controller::local {

struct PodExit {
  int exit_code = 0;           // the exit status, or 128+n for signal n (as a container runtime)
  std::string phase;           // "Succeeded" | "Failed"
  std::string reason;          // "Completed" | "Error" | "Killed" (a disruption)
  std::string message;         // "exited 75", "killed by signal 9 (Killed)"
  bool disruption = false;     // stopped from outside: counts in status.disruptions
};

// Classifies a waitpid() status. `stopped_by_us` is true when the executor itself signalled the
// group (a delete). A process that a signal it did NOT send stopped (SIGKILL, SIGTERM, SIGINT,
// SIGHUP, SIGQUIT: a user's `kill`) is a disruption, as a pod deleted from outside the operator
// is in a cluster. Crash signals (SIGSEGV, SIGABRT, SIGBUS, ...) are failures with 128+n: the
// program broke, nobody stopped it. REQUIRES: WIFEXITED or WIFSIGNALED holds for wait_status.
PodExit ClassifyExit(int wait_status, bool stopped_by_us);

// True for the signals a person or a supervisor sends to stop a process.
bool IsStopSignal(int signal_number);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_EXIT_STATUS_H_
