// POSIX process groups for local pods.
#include "operator/local/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cstdlib>
#include <map>

extern char** environ;

namespace ddp::controller::local {

std::string SelfExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, n);
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::vector<std::string> DefaultCommandDirs() {
  std::string dir = SelfExeDir();
  if (dir.empty()) return {};
  return {dir, dir + "/../worker"};
}

StatusOr<std::string> ResolveCommand(const std::string& command,
                                     const std::vector<std::string>& dirs) {
  if (command.empty()) return Status::InvalidArgument("empty command");
  if (command.find('/') != std::string::npos) return command;
  std::vector<std::string> places = dirs;
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "";
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string d = path.substr(start, colon == std::string::npos ? std::string::npos
                                                                   : colon - start);
    places.push_back(d.empty() ? "." : d);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  for (const std::string& d : places) {
    std::string candidate = d + "/" + command;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  std::string searched;
  for (const std::string& d : dirs) searched += d + ", ";
  return Status::NotFound("command \"" + command + "\" not found in " + searched + "or $PATH");
}

StatusOr<pid_t> SpawnProcessGroup(const SpawnRequest& req) {
  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq) merged[std::string(*e, eq - *e)] = eq + 1;
  }
  for (const auto& [k, v] : req.env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = req.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int log_fd = open(req.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Status::Internal("open " + req.log_path + ": " + strerror(errno));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(log_fd);
    return Status::Unavailable(std::string("fork: ") + strerror(err));
  }
  if (pid == 0) {
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT}) signal(sig, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execve(req.path.c_str(), argv.data(), envp.data());
    const char* msg = "ddp-operator local: exec failed: ";
    (void)!write(2, msg, strlen(msg));
    const char* why = strerror(errno);
    (void)!write(2, why, strlen(why));
    (void)!write(2, "\n", 1);
    _exit(127);
  }
  // Also set it here: whichever of parent and child runs first, the group exists before the
  // parent can signal it.
  setpgid(pid, pid);
  close(log_fd);
  return pid;
}

Status SignalGroup(pid_t pgid, int sig) {
  if (pgid <= 1) return Status::InvalidArgument("bad process group " + std::to_string(pgid));
  if (kill(-pgid, sig) == 0 || errno == ESRCH) return Status::OK();
  return Status::Internal("kill -" + std::to_string(sig) + " -" + std::to_string(pgid) + ": " +
                          strerror(errno));
}

bool GroupExists(pid_t pgid) { return pgid > 1 && (kill(-pgid, 0) == 0 || errno == EPERM); }

}  // namespace ddp::controller::local
