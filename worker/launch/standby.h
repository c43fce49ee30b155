// Warm standby trainers for in-place recovery (DESIGN.md "In-place recovery"; docs
// failures-and-elasticity.md "Inside the pods").
//
// Most of a restarted trainer's start is loading LibTorch (about half a second on a CPU). Under
// DDP_RECOVERY=InPlace the supervisor keeps, per local rank, one standby: a trainer process
// started with the rank's own arguments and environment that waits on a socket before doing
// anything (no config read, no device touched, no port bound). When the rank's trainer dies, the
// supervisor activates the standby instead of starting a process; the standby then runs exactly
// as a freshly started trainer would (same incarnation numbering, same heal). A new standby is
// started a little later, so its start does not compete with the recovery for the CPU.
//
// Supervisor side: Standby. Trainer side: AwaitActivation (main.cc calls it first).
#ifndef DDP_WORKER_LAUNCH_STANDBY_H_
#define DDP_WORKER_LAUNCH_STANDBY_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::worker {

// Written by the supervisor for a standby: the descriptor it waits on.
inline constexpr char kEnvStandbyFd[] = "DDP_STANDBY_FD";
// A standby's process name (/proc/<pid>/comm) until it is activated.
inline constexpr char kStandbyProcessName[] = "ddp-standby";

// One standby process of a local rank, owned by the supervisor. Thread-compatible.
class Standby {
 public:
  Standby() = default;
  Standby(const Standby&) = delete;
  Standby& operator=(const Standby&) = delete;
  ~Standby() { Discard(); }

  // Forks and executes `self args...` with `env` (the rank's trainer environment) plus
  // kEnvStandbyFd. Fails (Unavailable) when the socket or the fork fails. REQUIRES: !running().
  Status Start(const std::string& self, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env);

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Tells the standby to train as incarnation `incarnation`, with `env` set on top of the one it
  // was started with (a spare's standbys learn their rank only now), and gives its pid up to the
  // caller (the supervisor's trainer from now on). -1 when no standby runs or it cannot be
  // reached (it died); the caller then starts a trainer the usual way.
  pid_t Activate(int incarnation, const std::map<std::string, std::string>& env = {});

  // The standby exited on its own (waitpid reported `pid`): forget it. True if it was ours.
  bool Reaped(pid_t pid);

  // Kills the standby (SIGKILL) and reaps it. A standby holds no state, so nothing is lost.
  void Discard();

 private:
  pid_t pid_ = -1;
  int fd_ = -1;  // the supervisor's end of the socket
};

// Trainer side. Without kEnvStandbyFd in the environment: returns at once. Otherwise calls
// `warm` (when given: a spare's standby creates its device context here), names the process
// kStandbyProcessName and blocks until the supervisor activates it; then restores the name, sets
// DDP_INCARNATION to the incarnation it was given and the activation's variables, removes
// kEnvStandbyFd and returns. Leaves the process with exit code 0 when the supervisor closes the
// socket without activating it (the supervisor ended or discarded it). A malformed message is
// FailedPrecondition.
Status AwaitActivation(const std::function<void()>& warm = nullptr);

// Written by the supervisor for a spare's standbys: "1" = create the device context while
// waiting (a spare's GPU is idle; a member pod's standby must not take GPU memory).
inline constexpr char kEnvStandbyWarmDevice[] = "DDP_STANDBY_WARM_DEVICE";

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_STANDBY_H_
