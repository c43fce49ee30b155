// Wait status -> kubelet-style container termination facts.
#include "operator/local/exit_status.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

namespace ddp::controller::local {

bool IsStopSignal(int signal_number) {
  switch (signal_number) {
    case SIGKILL:
    case SIGTERM:
    case SIGINT:
    case SIGHUP:
    case SIGQUIT:
      return true;
    default:
      return false;
  }
}

PodExit ClassifyExit(int wait_status, bool stopped_by_us) {
  PodExit out;
  if (WIFEXITED(wait_status)) {
    out.exit_code = WEXITSTATUS(wait_status);
    out.phase = out.exit_code == 0 ? "Succeeded" : "Failed";
    // The kubelet's container reasons: Completed for 0, Error otherwise.
    out.reason = out.exit_code == 0 ? "Completed" : "Error";
    out.message = "exited " + std::to_string(out.exit_code);
    return out;
  }
  const int sig = WTERMSIG(wait_status);
  out.exit_code = 128 + sig;
  out.phase = "Failed";
  const char* name = strsignal(sig);
  out.message = "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  if (!stopped_by_us && IsStopSignal(sig)) {
    out.disruption = true;
    out.reason = "Killed";
    out.message += " not sent by ddp-operator";
  } else {
    out.reason = "Error";
  }
  return out;
}

}  // namespace ddp::controller::local
