// `ddp-operator chaos` in a cluster touches only what it was asked to (issue 51, F3): a
// recording `kubectl` on PATH logs every call's arguments and answers from files; the tests
// read the log. The job `ml/mingpt` runs worker-0 on node-a, worker-1 and the rendezvous pod on
// node-b; what `get pods -n ml` answers is what the API server would for namespace ml.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/chaos/target.h"

namespace ddp::chaos {
namespace {

namespace fs = std::filesystem;
using Call = std::vector<std::string>;  // one kubectl call's arguments, global flags included

// Records "$@" tab-separated, one call a line, then answers by the first two words after the
// global flags (--request-timeout, --kubeconfig, -n NS).
constexpr char kFakeKubectl[] = R"SH(#!/bin/sh
line=""
for a in "$@"; do line="$line$a	"; done
printf '%s\n' "$line" >> "$FAKE_KUBECTL_DIR/calls"
while [ $# -gt 0 ]; do
  case "$1" in --request-timeout=*|--kubeconfig=*) shift ;; -n) shift 2 ;; *) break ;; esac
done
d="$FAKE_KUBECTL_DIR"
case "$1 $2" in
  "auth can-i") echo yes ;;
  "get ddpjobs.ddp.dev") cat "$d/job.json" ;;
  "get pods") cat "$d/pods.json" ;;
  "get node")
    if [ -f "$d/node-$3" ]; then cat "$d/node-$3"; else echo "Error from server (NotFound): nodes \"$3\" not found"; exit 1; fi ;;
  "get --raw") echo "Error from server (ServiceUnavailable): no endpoints"; exit 1 ;;
  "create --raw")
    if [ -f "$d/refuse-evictions" ]; then echo "Error from server (TooManyRequests): disruption budget"; exit 1; fi
    cat > "$d/eviction-$(echo "$3" | tr / _)" ;;
esac
exit 0
)SH";

nlohmann::json Pod(const std::string& name, const std::string& node, const std::string& role,
                   int index) {
  nlohmann::json labels = {{"ddp.dev/job-name", "mingpt"}, {"ddp.dev/role", role}};
  if (index >= 0) labels["ddp.dev/replica-index"] = std::to_string(index);
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", labels}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"name", "worker"}}}}}},
          {"status", {{"phase", "Running"}}}};
}

class ChaosKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ddp-chaos-kubectl-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    Write(dir_ / "bin" / "kubectl", kFakeKubectl);
    ::chmod((dir_ / "bin" / "kubectl").c_str(), 0755);
    const nlohmann::json job = {{"spec", {{"replicas", 2}}},
                                {"status", {{"phase", "Running"}, {"replicas", 2}, {"worldSize", 2}}}};
    Write(dir_ / "job.json", job.dump());
    const nlohmann::json pods = {{"items",
                                  {Pod("mingpt-worker-0", "node-a", "worker", 0),
                                   Pod("mingpt-worker-1", "node-b", "worker", 1),
                                   Pod("mingpt-rendezvous", "node-b", "rendezvous", -1)}}};
    Write(dir_ / "pods.json", pods.dump());
    Write(dir_ / "node-node-a", "");
    Write(dir_ / "node-node-b", "");
    Write(dir_ / "node-node-c", "");
    ::setenv("FAKE_KUBECTL_DIR", dir_.c_str(), 1);
    ::setenv("PATH", ((dir_ / "bin").string() + ":" + std::getenv("PATH")).c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::vector<Call> Calls() const {
    std::vector<Call> out;
    std::ifstream in(dir_ / "calls");
    for (std::string line; std::getline(in, line);) {
      Call c;
      std::istringstream fields(line);
      for (std::string f; std::getline(fields, f, '\t');) c.push_back(f);
      out.push_back(c);
    }
    return out;
  }
  // The calls whose first words after the global flags are `words`.
  std::vector<Call> CallsOf(const Call& words) const {
    std::vector<Call> out;
    for (const Call& c : Calls()) {
      size_t i = 0;
      while (i < c.size() && (c[i] == "kubectl" || c[i].rfind("--request-timeout=", 0) == 0 ||
                              c[i].rfind("--kubeconfig=", 0) == 0)) {
        ++i;
      }
      if (i + 1 < c.size() && c[i] == "-n") i += 2;
      if (c.size() - i >= words.size() && std::equal(words.begin(), words.end(), c.begin() + i)) {
        out.push_back(Call(c.begin() + i, c.end()));
      }
    }
    return out;
  }
  std::unique_ptr<Target> Open() {
    auto t = OpenCluster("", "ml", "mingpt");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  static Failure Drain(const std::string& node) {
    auto f = ParseFailure({"drain-node", node});
    return *f;
  }
  std::string Evicted(const std::string& pod) const {
    std::ifstream in(dir_ / ("eviction-_api_v1_namespaces_ml_pods_" + pod + "_eviction"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

TEST_F(ChaosKubectlTest, DrainEvictsOnlyTheJobsPodsOnTheNodeByNameInItsNamespace) {
  auto t = Open();
  ASSERT_TRUE(t);
  auto done = t->Inject(Drain("node-b"));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(CallsOf({"drain"}).empty()) << "kubectl drain lists every namespace's pods";
  EXPECT_EQ(CallsOf({"cordon", "node-b"}).size(), 1u);
  const auto evictions = CallsOf({"create", "--raw"});
  ASSERT_EQ(evictions.size(), 2u);
  EXPECT_EQ(evictions[0][2], "/api/v1/namespaces/ml/pods/mingpt-worker-1/eviction");
  EXPECT_EQ(evictions[1][2], "/api/v1/namespaces/ml/pods/mingpt-rendezvous/eviction");
  for (const std::string pod : {"mingpt-worker-1", "mingpt-rendezvous"}) {
    const auto body = nlohmann::json::parse(Evicted(pod), nullptr, false);
    ASSERT_TRUE(body.is_object()) << pod;
    EXPECT_EQ(body["kind"], "Eviction");
    EXPECT_EQ(body["metadata"]["name"], pod);
    EXPECT_EQ(body["metadata"]["namespace"], "ml");
  }
  const size_t can_i = CallsOf({"auth", "can-i"}).size();
  size_t cluster_wide = 0;
  for (const Call& c : Calls()) {
    EXPECT_NE(std::find(c.begin(), c.end(), "ml"), c.end()) << "a call outside namespace ml";
    for (const std::string& a : c) cluster_wide += a == "--all-namespaces" || a == "-A";
  }
  EXPECT_EQ(cluster_wide, 2u) << "only `auth can-i get|patch nodes` ask cluster-wide";
  EXPECT_GE(can_i, 3u);
  const std::string restored = t->Restore();
  EXPECT_EQ(CallsOf({"uncordon", "node-b"}).size(), 1u);
  EXPECT_NE(restored.find("uncordoned node node-b"), std::string::npos) << restored;
  EXPECT_EQ(t->Restore(), "");  // once
}

TEST_F(ChaosKubectlTest, ANodeFoundCordonedIsLeftCordoned) {
  Write(dir_ / "node-node-b", "true");  // someone else's maintenance
  auto t = Open();
  ASSERT_TRUE(t);
  auto done = t->Inject(Drain("node-b"));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(CallsOf({"cordon"}).empty());
  EXPECT_EQ(CallsOf({"create", "--raw"}).size(), 2u);
  t->Restore();
  EXPECT_TRUE(CallsOf({"uncordon"}).empty()) << "chaos did not cordon node-b";
}

TEST_F(ChaosKubectlTest, ANodeThatHoldsNoneOfTheJobsPodsIsRefusedUntouched) {
  auto t = Open();
  ASSERT_TRUE(t);
  auto done = t->Inject(Drain("node-c"));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.status().code(), StatusCode::kFailedPrecondition) << done.status().ToString();
  EXPECT_NE(done.status().message().find("node-a, node-b"), std::string::npos)
      << done.status().ToString();
  EXPECT_TRUE(CallsOf({"cordon"}).empty());
  EXPECT_TRUE(CallsOf({"create"}).empty());
  EXPECT_EQ(t->Restore(), "");
  EXPECT_TRUE(CallsOf({"uncordon"}).empty());
}

TEST_F(ChaosKubectlTest, AnEvictionRefusedAfterTheCordonIsUndoneByRestore) {
  Write(dir_ / "refuse-evictions", "");
  auto t = Open();
  ASSERT_TRUE(t);
  auto done = t->Inject(Drain("node-b"));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(CallsOf({"cordon", "node-b"}).size(), 1u);
  t->Restore();
  EXPECT_EQ(CallsOf({"uncordon", "node-b"}).size(), 1u);
}

// The command itself: stopped by a signal while it waits for the recovery, it restores what it
// changed first (a frozen pod thawed, a node it cordoned uncordoned) and exits 128 + the signal.
struct Stopped {
  int code = -1;
  std::string out;
};
Stopped RunAndSignal(const fs::path& dir, const std::vector<std::string>& args, int sig,
                     const std::function<bool()>& injected) {
  const std::string out_path = (dir / "chaos.out").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen(out_path.c_str(), "w", stdout);
    std::freopen(out_path.c_str(), "a", stderr);
    std::vector<char*> argv = {const_cast<char*>(DDP_OPERATOR_BIN), const_cast<char*>("chaos")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  Stopped s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!injected() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, sig);
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  if (WIFEXITED(status)) s.code = WEXITSTATUS(status);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  s.out = text.str();
  return s;
}

TEST_F(ChaosKubectlTest, CtrlCDuringAFreezeThawsThePod) {
  auto froze = [&] {
    for (const Call& c : CallsOf({"exec", "mingpt-worker-0"})) {
      if (c.back() == "kill -STOP -1") return true;
    }
    return false;
  };
  Stopped s = RunAndSignal(dir_, {"-n", "ml", "mingpt", "freeze-pod", "0", "120", "--timeout", "120"},
                           SIGINT, froze);
  ASSERT_TRUE(froze()) << s.out;
  EXPECT_EQ(s.code, 128 + SIGINT) << s.out;
  bool thawed = false;
  for (const Call& c : CallsOf({"exec", "mingpt-worker-0"})) thawed = thawed || c.back() == "kill -CONT -1";
  EXPECT_TRUE(thawed) << s.out;
}

TEST_F(ChaosKubectlTest, SigtermDuringADrainUncordonsTheNode) {
  auto evicted = [&] { return CallsOf({"create", "--raw"}).size() == 2; };
  Stopped s = RunAndSignal(dir_, {"-n", "ml", "mingpt", "drain-node", "node-b", "--timeout", "120"},
                           SIGTERM, evicted);
  ASSERT_TRUE(evicted()) << s.out;
  EXPECT_EQ(s.code, 128 + SIGTERM) << s.out;
  EXPECT_EQ(CallsOf({"uncordon", "node-b"}).size(), 1u) << s.out;
}

}  // namespace
}  // namespace ddp::chaos
