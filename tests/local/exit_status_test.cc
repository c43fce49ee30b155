// Wait status -> kubelet-style facts. Wait statuses are produced by real children so the test
// does not depend on the encoding of the W* macros.
#include "operator/local/exit_status.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace ddp::controller::local {
namespace {

int WaitStatusOfExit(int code) {
  pid_t pid = fork();
  if (pid == 0) _exit(code);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

int WaitStatusOfSignal(int sig) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(99);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

TEST(ClassifyExit, Table) {
  struct Row {
    int status;
    bool by_us;
    int code;
    const char* phase;
    const char* reason;
    bool disruption;
  } rows[] = {
      {WaitStatusOfExit(0), false, 0, "Succeeded", "Completed", false},
      {WaitStatusOfExit(75), false, 75, "Failed", "Error", false},
      {WaitStatusOfExit(2), false, 2, "Failed", "Error", false},
      // Someone else's kill: a disruption, as a pod deleted from outside the operator.
      {WaitStatusOfSignal(SIGKILL), false, 128 + SIGKILL, "Failed", "Killed", true},
      {WaitStatusOfSignal(SIGTERM), false, 128 + SIGTERM, "Failed", "Killed", true},
      // Our own delete: not a disruption (the planner asked for it).
      {WaitStatusOfSignal(SIGTERM), true, 128 + SIGTERM, "Failed", "Error", false},
      // A crash is a failure of the program, even though a signal ended it.
      {WaitStatusOfSignal(SIGSEGV), false, 128 + SIGSEGV, "Failed", "Error", false},
      {WaitStatusOfSignal(SIGABRT), false, 128 + SIGABRT, "Failed", "Error", false},
  };
  for (const Row& r : rows) {
    PodExit e = ClassifyExit(r.status, r.by_us);
    SCOPED_TRACE(e.message);
    EXPECT_EQ(e.exit_code, r.code);
    EXPECT_EQ(e.phase, r.phase);
    EXPECT_EQ(e.reason, r.reason);
    EXPECT_EQ(e.disruption, r.disruption);
  }
}

TEST(ClassifyExit, MessageNamesTheCodeOrSignal) {
  EXPECT_EQ(ClassifyExit(WaitStatusOfExit(75), false).message, "exited 75");
  EXPECT_NE(ClassifyExit(WaitStatusOfSignal(SIGKILL), false).message.find("signal 9"),
            std::string::npos);
}

}  // namespace
}  // namespace ddp::controller::local
