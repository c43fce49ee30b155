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
#include <string>
#include <vector>

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

pid_t Standby::Activate(int incarnation, const std::map<std::string, std::string>& env) {
  if (!running()) return -1;
  // "<incarnation>\n" then "NAME=value\n" per variable, then an empty line.
  std::string msg = std::to_string(incarnation) + "\n";
  for (const auto& [k, v] : env) msg += k + "=" + v + "\n";
  msg += "\n";
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

Status AwaitActivation(const std::function<void()>& warm) {
  const char* v = std::getenv(kEnvStandbyFd);
  if (v == nullptr) return Status::OK();
  const int fd = std::atoi(v);
  if (warm) warm();
  // Named apart while waiting (ps, /proc/<pid>/comm), so nobody mistakes it for a trainer.
  char name[17] = {};
  prctl(PR_GET_NAME, name);
  prctl(PR_SET_NAME, kStandbyProcessName);
  std::vector<std::string> lines{""};
  constexpr size_t kMaxMessage = 1 << 16;
  size_t total = 0;
  char c = 0;
  while (true) {
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(kExitOk);  // discarded, or the supervisor ended: never a trainer
    if (++total > kMaxMessage) break;
    if (c != '\n') {
      lines.back().push_back(c);
      continue;
    }
    if (lines.back().empty()) break;  // the empty line ends the message
    lines.emplace_back();
  }
  close(fd);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  prctl(PR_SET_NAME, name);
  unsetenv(kEnvStandbyFd);
  unsetenv(kEnvStandbyWarmDevice);
  const std::string& first = lines.front();
  char* end = nullptr;
  const long incarnation = std::strtol(first.c_str(), &end, 10);
  if (first.empty() || *end != '\0' || incarnation < 0) {
    return Status::FailedPrecondition("standby: the supervisor's activation \"" + first +
                                      "\" is not an incarnation number");
  }
  setenv(kEnvIncarnation, first.c_str(), 1);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t eq = lines[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::FailedPrecondition("standby: malformed activation variable \"" + lines[i] + "\"");
    }
    setenv(lines[i].substr(0, eq).c_str(), lines[i].substr(eq + 1).c_str(), 1);
  }
  return Status::OK();
}

}  // namespace ddp::worker
