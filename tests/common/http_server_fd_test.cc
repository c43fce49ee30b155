// The endpoint server out of file descriptors: a client queued while accept4 fails with EMFILE
// must neither make the server spin nor be lost once descriptors are free again. A descriptor
// limit is per process, so the server runs in a child process whose limit is filled up.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "tests/common/poll.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long the child measures its CPU time while a client waits and no descriptor is free.
constexpr milliseconds kWindow(1000);

bool WriteLine(int fd, const std::string& line) {
  const std::string s = line + "\n";
  return ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
}

// One line from `fd` within `timeout`; "" on timeout or EOF.
std::string ReadLine(int fd, milliseconds timeout) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char c;
    if (::read(fd, &c, 1) != 1) return "";
    if (c == '\n') return out;
    out += c;
  }
  return "";
}

int64_t CpuMicros() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000LL + u.ru_utime.tv_usec +
         u.ru_stime.tv_usec;
}

// The child: serves /healthz with every descriptor taken, says its port, waits for the parent's
// queued client, measures its own CPU time over kWindow, frees the descriptors and says the CPU
// time; then serves until the parent says 'q'. Returns its exit code.
int ServeWithoutDescriptors(int in, int out) {
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (probe < 0) return 10;
  ::close(probe);
  const rlim_t limit = static_cast<rlim_t>(probe) + 16;
  rlimit lim{limit, limit};
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 11;
  HttpServer srv;
  srv.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  if (!srv.Start("127.0.0.1:0").ok()) return 12;
  std::vector<int> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  if (errno != EMFILE) return 13;
  if (!WriteLine(out, std::to_string(srv.port()))) return 14;
  if (ReadLine(in, milliseconds(20000)) != "queued") return 15;
  const int64_t before = CpuMicros();
  std::this_thread::sleep_for(kWindow);  // the measurement window, not a wait for a condition
  const int64_t cpu = CpuMicros() - before;
  for (int fd : filler) ::close(fd);
  if (!WriteLine(out, std::to_string(cpu))) return 16;
  ReadLine(in, milliseconds(20000));  // "q", or EOF when the parent gave up
  srv.Stop();
  return 0;
}

int ConnectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(HttpServerDescriptors, OutOfDescriptorsItNeitherSpinsNorStopsServing) {
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe2(to_child, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_child, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    ::_exit(ServeWithoutDescriptors(to_child[0], from_child[1]));
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  struct Reap {  // the child never outlives the test
    pid_t pid;
    ~Reap() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reap{pid};

  const std::string port = ReadLine(from_child[0], milliseconds(20000));
  ASSERT_FALSE(port.empty()) << "the child did not start its server";
  // The kernel completes the handshake and queues the client; the server cannot accept it.
  const int client = ConnectTo(std::stoi(port));
  ASSERT_GE(client, 0);
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(client, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  ASSERT_TRUE(WriteLine(to_child[1], "queued"));

  const std::string cpu = ReadLine(from_child[0], milliseconds(20000));
  ASSERT_FALSE(cpu.empty()) << "the child did not report its CPU time";
  // Spinning on the readable listening socket burns the whole window (at least a good share
  // of a core on a loaded machine); pausing costs a few wake-ups.
  EXPECT_LT(std::stoll(cpu), 100000) << "CPU microseconds over a " << kWindow.count()
                                     << " ms window without descriptors";

  // Descriptors are free again: the queued client is answered.
  std::string reply;
  const auto deadline = Clock::now() + milliseconds(5000);
  while (Clock::now() < deadline) {
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[512];
    const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(client);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;

  ASSERT_TRUE(WriteLine(to_child[1], "q"));
  int status = 0;
  ASSERT_TRUE(testing::PollUntil(
      [&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, milliseconds(10000)));
  reap.pid = 0;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ::close(to_child[1]);
  ::close(from_child[0]);
}

}  // namespace
}  // namespace ddp
