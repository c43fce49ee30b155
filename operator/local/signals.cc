// Self-pipe signal handling.
#include "operator/local/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

namespace ddp::controller::local {
namespace {

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_stop_count = 0;
constexpr int kSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[4];

void OnSignal(int sig) {
  int saved = errno;
  if (sig != SIGCHLD) {
    if (g_stop_signal == 0) g_stop_signal = sig;
    g_stop_count = g_stop_count + 1;
  }
  char byte = 1;
  (void)!write(g_pipe[1], &byte, 1);  // nonblocking: a full pipe already means "wake up"
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe() {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_pipe[0] = g_pipe[1] = -1;
  g_stop_signal = 0;
  g_stop_count = 0;
  struct sigaction sa = {};
  sa.sa_handler = &OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

SignalPipe::~SignalPipe() {
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  for (int& fd : g_pipe) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

bool SignalPipe::Wait(std::chrono::milliseconds timeout) {
  if (g_pipe[0] < 0) {  // no pipe: degrade to polling
    pollfd none{};
    poll(&none, 0, static_cast<int>(timeout.count()));
    return false;
  }
  pollfd p{g_pipe[0], POLLIN, 0};
  int n = poll(&p, 1, static_cast<int>(timeout.count() > 0 ? timeout.count() : 0));
  if (n <= 0) return false;
  char buf[64];
  while (read(g_pipe[0], buf, sizeof(buf)) > 0) {
  }
  return true;
}

int SignalPipe::stop_signal() const { return g_stop_signal; }
int SignalPipe::stop_count() const { return g_stop_count; }

}  // namespace ddp::controller::local
