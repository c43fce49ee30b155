#include "tests/controller/e2e_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "operator/kube/config.h"
#include "operator/kube/kubeconfig.h"
#include "tests/kube/test_certs.h"
#include "tests/common/poll.h"

namespace ddp::e2e {

bool WaitFor(const std::function<bool()>& cond, milliseconds timeout) {
  return ddp::testing::PollUntil(cond, timeout, milliseconds(20));
}

std::vector<std::string> PodsAddedWhileOlderRoundLive(const std::vector<PodEvent>& events,
                                                      int prev, int next, bool* saw_next) {
  std::set<std::string> live_prev;  // uids of round `prev` not yet DELETED
  std::vector<std::string> overlapping;
  *saw_next = false;
  for (const auto& e : events) {
    if (e.round == prev && e.type == "ADDED") live_prev.insert(e.uid);
    if (e.round == prev && e.type == "DELETED") live_prev.erase(e.uid);
    if (e.round == next && e.type == "ADDED") {
      *saw_next = true;
      if (!live_prev.empty()) overlapping.push_back(e.name);
    }
  }
  return overlapping;
}

OperatorProcess::OperatorProcess(const std::string& kubeconfig, const std::string& log_path,
                                 std::vector<std::string> extra)
    : log_path_(log_path) {
  std::vector<std::string> args = {DDP_OPERATOR_BIN, "run", "--kubeconfig", kubeconfig,
                                   "--metrics-bind-address", "127.0.0.1:0",
                                   "--health-probe-bind-address", "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

OperatorProcess::~OperatorProcess() {
  if (pid_ > 0 && !ExitCode()) Signal(SIGKILL, milliseconds(5000));
}

std::optional<int> OperatorProcess::ExitCode() {
  if (exit_code_ || pid_ <= 0) return exit_code_;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) == pid_) {
    exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return exit_code_;
}

std::optional<int> OperatorProcess::Signal(int sig, milliseconds timeout) {
  if (!ExitCode()) kill(pid_, sig);
  WaitFor([&] { return ExitCode().has_value(); }, timeout);
  return ExitCode();
}

std::string OperatorProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int OperatorProcess::MetricsPort() const {
  std::smatch m;
  std::string log = Log();
  static const std::regex re("metrics endpoint on port ([0-9]+)");
  return std::regex_search(log, m, re) ? std::stoi(m[1]) : 0;
}

int RoundOf(const json& pod) {
  try {
    return std::stoi(pod["metadata"]["labels"].value("ddp.dev/round", "-1"));
  } catch (...) {
    return -1;
  }
}

PodRecorder::PodRecorder(controller::KubeClient* client, const std::string& ns) : client_(client) {
  // After a failed list or watch: a short pause that ends at once when the recorder stops.
  auto pause_unless_cancelled = [this] {
    ddp::testing::PollUntil([this] { return cancel_->cancelled(); }, milliseconds(20),
                            milliseconds(5));
  };
  thread_ = std::thread([this, ns, pause_unless_cancelled] {
    std::string rv;
    while (!cancel_->cancelled()) {
      if (rv.empty()) {
        auto list = client_->List(controller::kPods, ns, {});
        if (!list.ok()) {
          pause_unless_cancelled();
          continue;
        }
        rv = (*list)["metadata"].value("resourceVersion", "");
      }
      controller::WatchOptions w;
      w.resource_version = rv;
      w.cancel = cancel_;
      w.timeout_seconds = 60;
      Status s = client_->Watch(controller::kPods, ns, w, [&](const controller::WatchEvent& ev) {
        std::string r = ev.object["metadata"].value("resourceVersion", "");
        if (!r.empty()) rv = r;
        if (ev.type == controller::WatchEventType::kBookmark) return true;
        std::lock_guard<std::mutex> l(mu_);
        events_.push_back({controller::WatchEventTypeName(ev.type),
                           ev.object["metadata"].value("name", ""),
                           ev.object["metadata"].value("uid", ""), RoundOf(ev.object)});
        return true;
      });
      // A restart of the fake server loses history: the recorder then only misses events, which
      // the tests that restart the server do not rely on.
      if (s.code() == StatusCode::kGone) rv.clear();
      if (!s.ok()) pause_unless_cancelled();
    }
  });
}

PodRecorder::~PodRecorder() {
  cancel_->Cancel();
  thread_.join();
}

std::vector<PodEvent> PodRecorder::Events() const {
  std::lock_guard<std::mutex> l(mu_);
  return events_;
}

World::World(bool tls, milliseconds pod_grace) {
  char tmpl[] = "/tmp/ddp-e2e-XXXXXX";
  dir_ = mkdtemp(tmpl);
  fake::FakeApiServerOptions options;
  options.pod_grace = pod_grace;
  std::string ca_line;
  if (tls) {
    fake::TestPki pki = fake::MakeTestPki();
    options.tls_cert_pem = pki.server_cert;
    options.tls_key_pem = pki.server_key;
    ca_line = "    certificate-authority-data: " + fake::Base64Encode(pki.ca_cert) + "\n";
  }
  server_ = std::make_unique<fake::FakeApiServer>(options);
  std::string err;
  if (!server_->Start(0, &err)) throw std::runtime_error("fake apiserver: " + err);
  kubeconfig_ = dir_ + "/kubeconfig";
  std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n"
                             << "clusters:\n- name: fake\n  cluster:\n    server: " << server_->url()
                             << "\n" << ca_line << "users:\n- name: op\n  user: {}\n"
                             << "contexts:\n- name: fake\n  context: {cluster: fake, user: op, namespace: "
                             << kNs << "}\ncurrent-context: fake\n";
  auto cfg = controller::LoadKubeconfigFile(kubeconfig_);
  if (!cfg.ok()) throw std::runtime_error("kubeconfig: " + cfg.status().ToString());
  cfg->qps = 0;
  auto c = controller::NewRestClient(*cfg);
  if (!c.ok()) throw std::runtime_error("client: " + c.status().ToString());
  client_ = std::move(*c);
}

World::~World() {
  client_->Stop();
  server_->Stop();
  std::string cmd = "rm -rf '" + dir_ + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir_.c_str());
}

std::unique_ptr<OperatorProcess> World::StartOperator(const std::string& name,
                                                      std::vector<std::string> extra) {
  // Fast timers keep the tests short; every value is still a real flag of the binary.
  std::vector<std::string> args = {"--namespace", kNs, "--qps", "0", "--log-level", "debug"};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<OperatorProcess>(kubeconfig_, TempPath(name + ".log"), args);
}

json World::Job(const std::string& name, int replicas, const json& spec_overlay) {
  json job = {
      {"apiVersion", "ddp.dev/v1alpha1"},
      {"kind", "DDPJob"},
      {"metadata", {{"name", name}, {"namespace", kNs}, {"annotations", {{"team", "vision"}}}}},
      {"spec",
       {{"replicas", replicas},
        {"userNote", "kept verbatim"},  // an unknown field: must survive status writes
        {"template",
         {{"spec", {{"containers", json::array({{{"name", "worker"}, {"image", "ddp-worker:test"}}})}}}}}}}};
  job["spec"].merge_patch(spec_overlay);
  return job;
}

void World::CreateJob(const json& job) {
  auto r = client_->Create(controller::kDDPJobs, kNs, job);
  if (!r.ok()) throw std::runtime_error("create job: " + r.status().ToString());
}

std::optional<json> World::GetJob(const std::string& name) {
  auto r = client_->Get(controller::kDDPJobs, kNs, name);
  if (!r.ok()) return std::nullopt;
  return *r;
}

json World::JobStatus(const std::string& name) {
  auto j = GetJob(name);
  return j ? j->value("status", json::object()) : json::object();
}

std::optional<json> World::GetPod(const std::string& name) {
  auto r = client_->Get(controller::kPods, kNs, name);
  if (!r.ok()) return std::nullopt;
  return *r;
}

std::vector<json> World::Pods() {
  auto r = client_->List(controller::kPods, kNs, {});
  std::vector<json> out;
  if (r.ok()) for (auto& p : (*r)["items"]) out.push_back(p);
  return out;
}

std::vector<json> World::PodsOfRound(const std::string& job, int round) {
  std::vector<json> out;
  for (auto& p : Pods()) {
    if (p["metadata"]["labels"].value("ddp.dev/job-name", "") == job && RoundOf(p) == round &&
        !p["metadata"].contains("deletionTimestamp")) {
      out.push_back(p);
    }
  }
  return out;
}

bool World::RunRound(const std::string& job, int round, int n, milliseconds timeout) {
  if (!WaitFor([&] { return static_cast<int>(PodsOfRound(job, round).size()) == n; }, timeout)) {
    return false;
  }
  for (auto& p : PodsOfRound(job, round)) {
    server_->SetPodPhase(kNs, p["metadata"]["name"].get<std::string>(), "Running");
  }
  return true;
}

}  // namespace ddp::e2e
