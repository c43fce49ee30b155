// Turns SIGCHLD, SIGINT, SIGTERM and SIGHUP into readable events for the run loop (self-pipe), so
// a process exit wakes the loop at once and Ctrl-C is handled in normal code, not in a handler.
// One instance per process; construct and use it on the loop's thread.
#ifndef DDP_OPERATOR_LOCAL_SIGNALS_H_
#define DDP_OPERATOR_LOCAL_SIGNALS_H_

#include <chrono>

namespace ddp::controller::local {

class SignalPipe {
 public:
  // Installs the handlers. REQUIRES: no other SignalPipe alive.
  SignalPipe();
  // Restores the previous handlers.
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Blocks until a signal arrives or `timeout` passes; drains the pipe. Returns true when woken by
  // a signal.
  bool Wait(std::chrono::milliseconds timeout);
  // The first stop signal received (SIGINT, SIGTERM, SIGHUP), 0 when none.
  int stop_signal() const;
  // How many stop signals arrived (a second Ctrl-C means "hurry").
  int stop_count() const;
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_SIGNALS_H_
