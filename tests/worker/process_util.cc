#include "tests/worker/process_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <thread>

#include "tests/common/poll.h"

namespace ddp::testing {

Proc StartProc(const std::string& bin, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env, const std::string& dir,
               const std::string& name) {
  Proc p;
  p.out_path = dir + "/" + name + ".out";
  p.err_path = dir + "/" + name + ".err";
  std::vector<std::string> argv_s{bin};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  p.pid = fork();
  if (p.pid == 0) {
    setpgid(0, 0);  // its own process group, as a pod is: a test can signal or freeze it whole
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    int out = open(p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(p.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return p;
}

std::optional<int> WaitProc(const Proc& p, std::chrono::milliseconds timeout) {
  // A process already waited for keeps its code: a test may wait for a pod twice.
  static std::map<pid_t, int> reaped;
  if (auto it = reaped.find(p.pid); it != reaped.end()) return it->second;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      reaped[p.pid] = code;
      return code;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(p.pid, SIGKILL);
  waitpid(p.pid, &status, 0);
  return std::nullopt;
}

bool PollUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  return ddp::testing::PollUntil(cond, timeout, std::chrono::milliseconds(20));
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string MakeTempDir(const std::string& prefix) {
  std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  return mkdtemp(t.data());
}

std::string Field(const std::string& text, const std::string& key) {
  const std::string k = key + "=";
  size_t pos = 0;
  // Whole keys only: "rank" must not match inside "local_rank=".
  while ((pos = text.find(k, pos)) != std::string::npos && pos > 0 && text[pos - 1] != ' ' &&
         text[pos - 1] != '\n') {
    ++pos;
  }
  if (pos == std::string::npos) return "";
  pos += k.size();
  size_t end = text.find_first_of(" \n", pos);
  return text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

}  // namespace ddp::testing
