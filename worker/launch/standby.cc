// Warm standby trainers (see standby.h).
#include "worker/launch/standby.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "worker/launch/spawn.h"
#include "worker/launch/supervise.h"
#include "worker/train/exit_codes.h"

namespace ddp::worker {

Status Standby::Start(const std::string& self, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Status::Unavailable(std::string("standby socket: ") + std::strerror(errno));
  }
  std::map<std::string, std::string> standby_env = env;
  standby_env[kEnvStandbyFd] = std::to_string(fds[1]);
  const pid_t pid = SpawnProcess(self, args, standby_env, fds[1]);
  const int fork_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return Status::Unavailable(std::string("standby fork: ") + std::strerror(fork_errno));
  }
  pid_ = pid;
  fd_ = fds[0];
  return Status::OK();
}

pid_t Standby::Activate(int incarnation) {
  if (!running()) return -1;
  const std::string msg = std::to_string(incarnation) + "\n";
  // MSG_NOSIGNAL: a standby that died must not take the supervisor with it (SIGPIPE).
  const ssize_t n = send(fd_, msg.data(), msg.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(msg.size())) {
    Discard();
    return -1;
  }
  const pid_t pid = pid_;
  close(fd_);  // the activated trainer reads its message, then owns nothing of ours
  fd_ = -1;
  pid_ = -1;
  return pid;
}

bool Standby::Reaped(pid_t pid) {
  if (!running() || pid != pid_) return false;
  close(fd_);
  fd_ = -1;
  pid_ = -1;
  return true;
}

void Standby::Discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

Status AwaitActivation() {
  const char* v = std::getenv(kEnvStandbyFd);
  if (v == nullptr) return Status::OK();
  const int fd = std::atoi(v);
  // Named apart while waiting (ps, /proc/<pid>/comm), so nobody mistakes it for a trainer.
  char name[17] = {};
  prctl(PR_GET_NAME, name);
  prctl(PR_SET_NAME, kStandbyProcessName);
  std::string msg;
  char c = 0;
  while (true) {
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(kExitOk);  // discarded, or the supervisor ended: never a trainer
    if (c == '\n') break;
    msg.push_back(c);
    if (msg.size() > 16) break;
  }
  close(fd);
  prctl(PR_SET_NAME, name);
  unsetenv(kEnvStandbyFd);
  char* end = nullptr;
  const long incarnation = std::strtol(msg.c_str(), &end, 10);
  if (msg.empty() || *end != '\0' || incarnation < 0) {
    return Status::FailedPrecondition("standby: the supervisor's activation \"" + msg +
                                      "\" is not an incarnation number");
  }
  setenv(kEnvIncarnation, msg.c_str(), 1);
  return Status::OK();
}

}  // namespace ddp::worker
