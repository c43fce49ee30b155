// Hostile pages beside a good job, against the real `ddp-operator run` (a child process) and the
// test API server (in this process): eight jobs whose rank-0 page is hostile and one good job
// whose step advances every second. Reports how often the good job was read and how its
// status.progress.step moved, what happened to the hostile jobs (refused reads, MetricsRefused
// Events) and the operator's peak RSS.
//   hostile_bench [--mode names|bytes|slow] [--seconds 75] [--interval 2s] [--operator PATH]
// names: 80,000 distinct names (about 700 KB); bytes: a 100 MB body without Content-Length
// (only the bytes tell); slow: a page dripped one line every 100 ms until the client gives up.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "tests/kube/fake_apiserver.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

long StatusKb(pid_t pid, const std::string& field) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  return std::regex_search(s, m, std::regex(field + ":\\s+([0-9]+) kB")) ? std::stol(m[1]) : -1;
}

// A raw server streaming a hostile page to every connection, each on a thread of its own, until
// the page is sent or the client closes.
class HostileServer {
 public:
  explicit HostileServer(std::string mode) : mode_(std::move(mode)) {
    if (mode_ == "names") {
      for (int i = 0; i < 80000; ++i) names_page_ += "m" + std::to_string(i) + " 1\n";
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 64);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::thread([this, c] { Serve(c); }).detach();
      }
    });
  }
  int port() const { return port_; }
  long served() const { return served_.load(); }

 private:
  bool SendAll(int c, const std::string& s) {
    return ::send(c, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  void Serve(int c) {
    served_++;
    char buf[4096];
    (void)!::recv(c, buf, sizeof(buf), 0);  // the request head; its content does not matter
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
    if (!SendAll(c, head)) return (void)::close(c);
    if (mode_ == "names") {
      SendAll(c, names_page_);
    } else if (mode_ == "bytes") {
      std::string chunk;
      while (chunk.size() < (64 << 10)) chunk += "hostile_filler_metric 1\n";
      for (size_t sent = 0; sent < (100u << 20) && SendAll(c, chunk); sent += chunk.size()) {}
    } else {  // slow
      for (int i = 0; i < 600 && SendAll(c, "m" + std::to_string(i) + " 1\n"); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the drip itself
      }
    }
    ::close(c);
  }
  std::string mode_, names_page_;
  int fd_ = -1, port_ = 0;
  std::atomic<long> served_{0};
  std::thread thread_;
};

json Job(const std::string& name, int metrics_port) {
  return {{"apiVersion", "ddp.dev/v1alpha1"},
          {"kind", "DDPJob"},
          {"metadata", {{"name", name}, {"namespace", "bench"}}},
          {"spec",
           {{"replicas", 1},
            {"metrics", {{"port", metrics_port}}},
            {"template",
             {{"spec", {{"containers", json::array({{{"name", "worker"}, {"image", "w"}}})}}}}}}}};
}

double SampleValue(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + series.size() + 2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "names", interval = "2s", operator_bin = DDP_OPERATOR_BIN;
  int seconds = 75;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--mode") mode = argv[i + 1];
    else if (a == "--seconds") seconds = std::atoi(argv[i + 1]);
    else if (a == "--interval") interval = argv[i + 1];
    else if (a == "--operator") operator_bin = argv[i + 1];
  }
  const auto start = Clock::now();
  std::atomic<long> good_reads{0};
  ddp::HttpServer good;
  good.Handle("/metrics", [&] {
    good_reads++;
    const long step = static_cast<long>(Secs(Clock::now() - start));
    return ddp::HttpResponse{200, ddp::kPrometheusContentType,
                             "ddp_worker_steps_total " + std::to_string(step) +
                                 "\nddp_worker_total_steps 1000000\n"};
  });
  if (!good.Start("127.0.0.1:0").ok()) return 1;
  HostileServer hostile(mode);

  ddp::fake::FakeApiServer server;
  std::string err;
  if (!server.Start(0, &err)) { std::fprintf(stderr, "fake apiserver: %s\n", err.c_str()); return 1; }
  char dir_tmpl[] = "/tmp/ddp-hostile-XXXXXX";
  const std::string dir = mkdtemp(dir_tmpl);
  const std::string kubeconfig = dir + "/kubeconfig", log = dir + "/operator.log";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n"
                            << "    server: " << server.url() << "\nusers:\n- name: u\n  user: {}\n"
                            << "contexts:\n- name: b\n  context: {cluster: b, user: u}\n"
                            << "current-context: b\n";
  std::vector<std::string> args = {operator_bin, "run", "--kubeconfig", kubeconfig,
                                   "--metrics-bind-address", "127.0.0.1:0",
                                   "--health-probe-bind-address", "0", "--progress-interval",
                                   interval};
  const pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    std::vector<char*> av;
    for (auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  int metrics_port = 0;
  for (int i = 0; i < 500 && !metrics_port; ++i) {
    std::smatch m;
    const std::string text = ReadFile(log);
    if (std::regex_search(text, m, std::regex("metrics endpoint on port ([0-9]+)"))) metrics_port = std::stoi(m[1]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the log
  }
  const std::string jobs = "/apis/ddp.dev/v1alpha1/namespaces/bench/ddpjobs";
  for (int j = 0; j < 8; ++j) server.CreateObject(jobs, Job("hostile-" + std::to_string(j), hostile.port()), &err);
  server.CreateObject(jobs, Job("good", good.port()), &err);
  // The kubelet: every pod Running at 127.0.0.1 once it exists.
  std::vector<std::string> names;
  for (int j = 0; j < 8; ++j) names.push_back("hostile-" + std::to_string(j));
  names.push_back("good");
  for (const std::string& n : names) {
    const std::string pod = n + "-worker-0";
    for (int i = 0; i < 500 && !server.SetPodPhase("bench", pod, "Running"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // waiting for the create
    }
    server.Mutate("/api/v1/namespaces/bench/pods/" + pod, [](json& p) { p["status"]["podIP"] = "127.0.0.1"; });
  }
  std::printf("mode %s, --progress-interval %s, %d s window, 8 hostile jobs + 1 good job\n",
              mode.c_str(), interval.c_str(), seconds);
  const auto w0 = Clock::now();
  const long reads0 = good_reads.load();
  long peak_rss = 0, last_step = -1;
  std::vector<std::pair<double, long>> advances;  // (seconds into the window, status step)
  while (Clock::now() - w0 < std::chrono::seconds(seconds)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the sampling period
    peak_rss = std::max(peak_rss, StatusKb(pid, "VmRSS"));
    auto job = server.GetObject(jobs + "/good");
    if (!job) continue;
    const long step = (*job)["status"].value("progress", json::object()).value("step", -1L);
    if (step != last_step) advances.emplace_back(Secs(Clock::now() - w0), step);
    last_step = step;
  }
  const double wall = Secs(Clock::now() - w0);
  std::string page;
  if (auto m = ddp::HttpGet("127.0.0.1", metrics_port, "/metrics"); m.ok()) page = *m;
  int refused_events = 0;
  for (const json& e : server.Objects("/api/v1/namespaces/bench/events")) {
    refused_events += e.value("reason", "") == "MetricsRefused" ? 1 : 0;
  }
  std::printf("  good job read                %ld times in %.0f s (%.2f per interval)\n",
              good_reads.load() - reads0, wall,
              (good_reads.load() - reads0) * std::atof(interval.c_str()) / wall);
  std::printf("  good job status.progress.step changes (s into window -> step):");
  for (const auto& [at, step] : advances) std::printf(" %.0f->%ld", at, step);
  std::printf("\n  hostile pages served         %ld\n", hostile.served());
  std::printf("  operator scrapes ok/error/refused  %.0f / %.0f / %.0f\n",
              SampleValue(page, "ddp_operator_progress_scrapes_total{result=\"ok\"}"),
              SampleValue(page, "ddp_operator_progress_scrapes_total{result=\"error\"}"),
              SampleValue(page, "ddp_operator_progress_scrapes_total{result=\"refused\"}"));
  std::printf("  MetricsRefused events        %d\n", refused_events);
  std::printf("  operator RSS                 peak sampled %.1f MiB, VmHWM %.1f MiB (target < 150)\n",
              peak_rss / 1024.0, StatusKb(pid, "VmHWM") / 1024.0);
  ::kill(pid, SIGTERM);
  int st = 0;
  ::waitpid(pid, &st, 0);
  std::fflush(stdout);
  std::_Exit(0);  // the hostile server's threads may still be dripping
}
