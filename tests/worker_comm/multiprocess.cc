// Forked ranks with a hard deadline (see multiprocess.h).
#include "tests/worker_comm/multiprocess.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <thread>

namespace ddp::testing {

std::vector<int> RunRanks(int n, const std::function<int(int)>& fn, RunOptions options) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 100;
      try {
        code = fn(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: uncaught exception: %s\n", r, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);  // skip the parent's atexit handlers and static destructors
    }
    pids[r] = pid;
  }
  std::vector<int> codes(n, -9);
  std::vector<bool> done(n, false);
  int remaining = n;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        --remaining;
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
    }
    const bool stop = (options.stop_when_rank0_exits && done[0]) ||
                      std::chrono::steady_clock::now() >= deadline;
    if (stop && remaining > 0) {
      for (int r = 0; r < n; ++r) {
        if (done[r]) continue;
        kill(pids[r], SIGKILL);
        int status = 0;
        waitpid(pids[r], &status, 0);
        codes[r] = -SIGKILL;
        done[r] = true;
      }
      remaining = 0;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return codes;
}

std::string CodesToString(const std::vector<int>& codes) {
  std::string s = "[";
  for (size_t i = 0; i < codes.size(); ++i) s += (i ? ", " : "") + std::to_string(codes[i]);
  return s + "]";
}

}  // namespace ddp::testing
