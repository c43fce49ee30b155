// fake-apiserver: the test API server as a process, for benchmarks and manual runs.
//   fake-apiserver [--port N] [--pod-grace-ms N] [--latency-ms N]
// Prints "listening on http://127.0.0.1:PORT" on stdout once it serves; runs until SIGTERM/SIGINT,
// then prints the request counts by verb. GET /fake/stats returns them as JSON while it runs.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/kube/fake_apiserver.h"

int main(int argc, char** argv) {
  int port = 0;
  ddp::fake::FakeApiServerOptions options;
  int latency_ms = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "fake-apiserver: %s needs a value\n", a.c_str());
      return 2;
    }
    int v = std::atoi(argv[++i]);
    if (a == "--port") {
      port = v;
    } else if (a == "--pod-grace-ms") {
      options.pod_grace = std::chrono::milliseconds(v);
    } else if (a == "--latency-ms") {
      latency_ms = v;
    } else {
      std::fprintf(stderr, "fake-apiserver: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads inherit: only sigwait sees them
  ddp::fake::FakeApiServer server(options);
  std::string error;
  if (!server.Start(port, &error)) {
    std::fprintf(stderr, "fake-apiserver: %s\n", error.c_str());
    return 1;
  }
  server.SetLatency(std::chrono::milliseconds(latency_ms));
  std::printf("listening on %s\n", server.url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  std::fprintf(stderr, "fake-apiserver: stopping; requests:");
  for (const char* verb : {"get", "list", "watch", "create", "update", "patch", "delete"}) {
    std::fprintf(stderr, " %s=%lld", verb, static_cast<long long>(server.RequestCount(verb)));
  }
  std::fprintf(stderr, "\n");
  server.Stop();
  return 0;
}
