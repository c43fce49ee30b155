// fork/exec of trainer processes (see spawn.h).
#include "worker/launch/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/train/exit_codes.h"

extern char** environ;

namespace ddp::worker {
namespace {

// Built before fork: after fork in a threaded process only async-signal-safe calls are allowed.
std::vector<std::string> ChildEnv(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (extra.count(kv.substr(0, kv.find('='))) == 0) env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

pid_t SpawnProcess(const std::string& self, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env_extra, int keep_fd) {
  std::vector<std::string> env = ChildEnv(env_extra);
  std::vector<std::string> argv_s{self};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kExitRetryable);  // the supervisor died before prctl
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (keep_fd >= 0) fcntl(keep_fd, F_SETFD, 0);
    execve(argv_s[0].c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

int ExitCodeOfStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitRetryable;
}

}  // namespace ddp::worker
