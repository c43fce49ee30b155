// Forked ranks with a hard deadline (see multiprocess.h).
#include "tests/worker_comm/multiprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <thread>

namespace ddp::testing {

namespace {

// Rank 0's read end of a pipe whose write ends only the other ranks hold: it reads end-of-file
// once they have all exited (a rank's process that execs drops its end: close-on-exec).
int others_exited_fd = -1;

}  // namespace

bool OtherRanksExited(std::chrono::seconds timeout) {
  if (others_exited_fd < 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pf{others_exited_fd, POLLIN, 0};
    const int ready = ::poll(&pf, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char c;
    const ssize_t r = ::read(others_exited_fd, &c, 1);
    if (r == 0) return true;  // nothing is ever written: only end-of-file
    if (r < 0 && errno != EINTR) return false;
  }
}

std::vector<int> RunRanks(int n, const std::function<int(int)>& fn, RunOptions options) {
  std::fflush(stdout);
  std::fflush(stderr);
  int exits[2] = {-1, -1};
  if (::pipe2(exits, O_CLOEXEC) != 0) exits[0] = exits[1] = -1;
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      if (exits[0] >= 0) {
        if (r == 0) {
          ::close(exits[1]);
          others_exited_fd = exits[0];
        } else {
          ::close(exits[0]);  // the write end stays open until this process exits
        }
      }
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
  if (exits[0] >= 0) {
    ::close(exits[0]);
    ::close(exits[1]);
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
