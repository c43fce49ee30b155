// The chaos command's cluster target (see target.h): every action is a kubectl call with the
// user's kubeconfig, so it can do exactly what the user's RBAC allows and no more; an action the
// RBAC forbids is refused up front (`kubectl auth can-i`), naming the verb and resource.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/worker_progress.h"
#include "operator/api/serialize.h"
#include "operator/chaos/target.h"

namespace ddp::chaos {
namespace {

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs argv (no shell) with `input` on its stdin, capturing its output; bounded by kubectl's
// own --request-timeout. REQUIRES: input is smaller than a pipe's buffer (64 KiB).
Ran Run(const std::vector<std::string>& argv, const std::string& input = "") {
  Ran r;
  int fds[2], in[2];
  if (::pipe(fds) != 0) return r;
  if (::pipe(in) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::close(in[0]);
    ::close(in[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(fds[1]);
  ::close(in[0]);
  if (pid > 0 && !input.empty()) (void)!::write(in[1], input.data(), input.size());
  ::close(in[1]);
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) {
    if (r.out.size() < (64u << 20)) r.out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  return r;
}

struct ClusterPod {
  std::string name, role, node, container;
  int index = -1;
  bool running = false;
};

class Cluster : public Target {
 public:
  Cluster(std::string kubeconfig, std::string ns, std::string job)
      : kubeconfig_(std::move(kubeconfig)), ns_(std::move(ns)), job_(std::move(job)) {}

  StatusOr<api::DDPJobStatus> ReadStatus() override {
    auto obj = GetJson({"get", "ddpjobs.ddp.dev", job_, "-o", "json"});
    if (!obj.ok()) return obj.status();
    metrics_port_ = (*obj)["spec"].value("metrics", nlohmann::json::object()).value("port", 9400);
    const nlohmann::json st = obj->contains("status") ? (*obj)["status"] : nlohmann::json();
    auto status = api::ParseStatusJson(st);
    if (status.ok() && status->replicas > 0) nproc_ = std::max(1, status->world_size / status->replicas);
    return status;
  }

  StatusOr<std::string> Inject(const Failure& f) override {
    DDP_RETURN_IF_ERROR(LoadPods());
    switch (f.kind) {
      case FailureKind::kKillRendezvous: {
        DDP_RETURN_IF_ERROR(CanI("delete", "pods"));
        const std::string pod = job_ + "-rendezvous";
        Ran r = Kubectl({"delete", "pod", pod, "--grace-period=0", "--force", "--wait=false"});
        if (r.code != 0) return Status::Unavailable("kubectl delete pod " + pod + ": " + r.out);
        return "force-deleted rendezvous pod " + pod + " (grace 0: its processes are killed)";
      }
      case FailureKind::kDeletePod: {
        DDP_RETURN_IF_ERROR(CanI("delete", "pods"));
        auto pod = PodOfNodeRank(f.rank);
        if (!pod.ok()) return pod.status();
        Ran r = Kubectl({"delete", "pod", pod->name, "--wait=false"});
        if (r.code != 0) return Status::Unavailable("kubectl delete pod " + pod->name + ": " + r.out);
        return "deleted pod " + pod->name + " (node " + pod->node + ")";
      }
      case FailureKind::kDrainNode: {
        // Not `kubectl drain`: its pod selector lists every namespace's pods, and it cordons any
        // node. Only a node that holds one of this job's pods; cordoned only if it was not
        // (Restore uncordons only what was cordoned here); the job's pods on it evicted by name
        // in the job's namespace (the Eviction API: disruption budgets hold, as for a drain).
        DDP_RETURN_IF_ERROR(CanI("get", "nodes", /*namespaced=*/false));
        DDP_RETURN_IF_ERROR(CanI("patch", "nodes", /*namespaced=*/false));
        DDP_RETURN_IF_ERROR(CanI("create", "pods/eviction"));
        std::vector<std::string> victims, nodes;
        for (const ClusterPod& p : pods_) {
          if (p.node == f.node) victims.push_back(p.name);
          if (!p.node.empty() && std::find(nodes.begin(), nodes.end(), p.node) == nodes.end()) {
            nodes.push_back(p.node);
          }
        }
        if (victims.empty()) {
          std::string on;
          for (const std::string& n : nodes) on += (on.empty() ? "" : ", ") + n;
          return Status::FailedPrecondition(
              "drain-node: node " + f.node + " holds none of job " + ns_ + "/" + job_ +
              "'s running pods (" + (on.empty() ? "none runs" : "they run on " + on) +
              "); chaos drains only a node of the job");
        }
        auto cordoned = Unschedulable(f.node);
        if (!cordoned.ok()) return cordoned.status();
        if (!*cordoned) {
          Ran r = Kubectl({"cordon", f.node});
          if (r.code != 0) return Status::Unavailable("kubectl cordon " + f.node + ": " + r.out);
          cordoned_ = f.node;
        }
        std::string names;
        for (const std::string& pod : victims) {
          Ran r = Evict(pod);
          if (r.code != 0) return Status::Unavailable("evict pod " + ns_ + "/" + pod + ": " + r.out);
          names += (names.empty() ? "" : ", ") + pod;
        }
        return "drained node " + f.node + (*cordoned ? " (already cordoned: left as it was)" : ": cordoned") +
               ", the job's pods on it evicted: " + names;
      }
      case FailureKind::kKillTrainer:
      case FailureKind::kFreezePod: {
        // A container's processes cannot signal its PID 1 (the kernel protects a namespace's
        // init): kill-trainer reaches a supervised trainer, freeze-pod every process but the
        // supervisor. A whole pod frozen is a frozen node (its kubelet too).
        DDP_RETURN_IF_ERROR(CanI("create", "pods/exec"));
        DDP_RETURN_IF_ERROR(CanI("get", "pods/log"));
        auto pod = f.kind == FailureKind::kKillTrainer ? PodOfRank(f.rank) : PodOfNodeRank(f.rank);
        if (!pod.ok()) return pod.status();
        if (f.kind == FailureKind::kFreezePod) {
          Ran r = Exec(*pod, "kill -STOP -1");
          if (r.code != 0) return Status::Unavailable("kubectl exec " + pod->name + ": " + r.out);
          frozen_ = *pod;
          return "froze every process of pod " + pod->name + " but its PID 1 (the supervisor, "
                 "which a container cannot stop from inside) with SIGSTOP, through kubectl exec";
        }
        const int pid = TrainerPid(*pod, f.rank);
        if (pid <= 1) {
          return Status::FailedPrecondition(
              "kill-trainer: pod " + pod->name + "'s log names no supervised trainer of rank " +
              std::to_string(f.rank) + " (recovery Restart runs the trainer as the container's "
              "PID 1, which nothing inside it may kill). HINT: delete-pod " +
              std::to_string(pod->index));
        }
        Ran r = Exec(*pod, "kill -KILL " + std::to_string(pid));
        if (r.code != 0) return Status::Unavailable("kubectl exec " + pod->name + ": " + r.out);
        return "killed rank " + std::to_string(f.rank) + "'s trainer, pid " + std::to_string(pid) +
               " in pod " + pod->name + " (node " + pod->node + "), through kubectl exec";
      }
    }
    return Status::Internal("unknown failure");
  }

  std::string Restore() override {
    std::string out;
    if (frozen_) {
      Exec(*frozen_, "kill -CONT -1");
      out = "thawed pod " + frozen_->name + " (SIGCONT)";
      frozen_.reset();
    }
    if (!cordoned_.empty()) {
      Ran r = Kubectl({"uncordon", cordoned_});
      out += (out.empty() ? "" : "; ") +
             (r.code == 0 ? "uncordoned node " + cordoned_
                          : "could not uncordon node " + cordoned_ + " (uncordon it yourself): " + r.out);
      cordoned_.clear();
    }
    return out;
  }

  std::optional<double> ReadStep() override {
    // Rank 0's step from the rendezvous pod's page through the API server's pod proxy (InPlace),
    // else the status's progress (written at most every 30 s).
    if (auto page = Proxy(job_ + "-rendezvous")) {
      if (auto s = metrics::ParseWorkerScrape(*page).steps) return s;
    }
    auto st = ReadStatus();
    if (st.ok() && st->progress) return static_cast<double>(st->progress->step);
    return std::nullopt;
  }

 private:
  std::vector<std::string> Base() const {
    std::vector<std::string> a = {"kubectl", "--request-timeout=30s"};
    if (!kubeconfig_.empty()) a.push_back("--kubeconfig=" + kubeconfig_);
    a.push_back("-n");
    a.push_back(ns_);
    return a;
  }
  Ran Kubectl(const std::vector<std::string>& args, const std::string& input = "") const {
    std::vector<std::string> a = Base();
    a.insert(a.end(), args.begin(), args.end());
    return Run(a, input);
  }
  StatusOr<nlohmann::json> GetJson(const std::vector<std::string>& args) const {
    Ran r = Kubectl(args);
    if (r.code != 0) return Status::Unavailable("kubectl " + args[0] + " " + args[1] + ": " + r.out);
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return Status::DataLoss("kubectl returned no JSON object");
    return doc;
  }
  Status CanI(const std::string& verb, const std::string& resource, bool namespaced = true) const {
    std::vector<std::string> a = {"auth", "can-i", verb, resource};
    if (!namespaced) a.push_back("--all-namespaces");
    Ran r = Kubectl(a);
    if (r.out.rfind("yes", 0) == 0) return Status::OK();
    return Status::Forbidden("your credentials may not " + verb + " " + resource +
                                    (namespaced ? " in namespace " + ns_ : "") +
                                    " (kubectl auth can-i says: " + r.out.substr(0, 200) + ")");
  }
  std::optional<std::string> Proxy(const std::string& pod) const {
    Ran r = Kubectl({"get", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/" + pod + ":" +
                                         std::to_string(metrics_port_) + "/proxy/metrics"});
    if (r.code != 0 || r.out.size() > (4u << 20)) return std::nullopt;
    return r.out;
  }
  // Whether `node` is cordoned (spec.unschedulable). NotFound/Unavailable from kubectl.
  StatusOr<bool> Unschedulable(const std::string& node) const {
    Ran r = Kubectl({"get", "node", node, "-o", "jsonpath={.spec.unschedulable}"});
    if (r.code != 0) return Status::Unavailable("kubectl get node " + node + ": " + r.out);
    return r.out.rfind("true", 0) == 0;
  }
  // One eviction through the API (what `kubectl drain` posts for each pod), by name.
  Ran Evict(const std::string& pod) const {
    const nlohmann::json body = {{"apiVersion", "policy/v1"},
                                 {"kind", "Eviction"},
                                 {"metadata", {{"name", pod}, {"namespace", ns_}}}};
    return Kubectl({"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/" + pod + "/eviction",
                    "-f", "-"},
                   body.dump());
  }
  Ran Exec(const ClusterPod& pod, const std::string& script) const {
    return Kubectl({"exec", pod.name, "-c", pod.container, "--", "sh", "-c", script});
  }
  Status LoadPods() {
    auto list = GetJson({"get", "pods", "-l", "ddp.dev/job-name=" + job_, "-o", "json"});
    if (!list.ok()) return list.status();
    pods_.clear();
    for (const auto& item : (*list)["items"]) {
      ClusterPod p;
      p.name = item["metadata"].value("name", "");
      const auto labels = item["metadata"].value("labels", nlohmann::json::object());
      p.role = labels.value("ddp.dev/role", "worker");
      const std::string index = labels.value("ddp.dev/replica-index", "");
      p.index = index.empty() ? -1 : std::atoi(index.c_str());
      p.node = item["spec"].value("nodeName", "");
      for (const auto& c : item["spec"].value("containers", nlohmann::json::array())) {
        if (p.container.empty() || c.value("name", "") == "worker") p.container = c.value("name", "");
      }
      p.running = item["status"].value("phase", "") == "Running" &&
                  !item["metadata"].contains("deletionTimestamp");
      if (p.running) pods_.push_back(p);
    }
    return Status::OK();
  }
  StatusOr<ClusterPod> Named(const std::string& name) const {
    for (const ClusterPod& p : pods_) {
      if (p.name == name) return p;
    }
    return Status::NotFound("pod " + name + " is not running");
  }
  std::optional<metrics::GroupScrape> Group() const {
    auto page = Proxy(job_ + "-rendezvous");
    if (!page) return std::nullopt;
    metrics::WorkerScrape s = metrics::ParseWorkerScrape(*page);
    return s.group.present ? std::optional<metrics::GroupScrape>(s.group) : std::nullopt;
  }
  StatusOr<ClusterPod> PodOfNodeRank(int node) const {
    if (auto g = Group()) {
      for (const auto& [pod, rank] : g->members) {
        if (rank == node) return Named(pod);
      }
    }
    for (const ClusterPod& p : pods_) {
      if (p.role == "worker" && p.index == node) return p;
    }
    return Status::NotFound("no running pod holds node rank " + std::to_string(node));
  }
  StatusOr<ClusterPod> PodOfRank(int rank) const {
    if (auto g = Group()) {
      if (auto it = g->trainers.find(rank); it != g->trainers.end()) return Named(it->second.first);
    }
    return PodOfNodeRank(rank / nproc_);
  }
  int TrainerPid(const ClusterPod& pod, int rank) const {
    Ran r = Kubectl({"logs", pod.name, "-c", pod.container});
    const std::regex started("supervisor: node rank [0-9]+: rank ([0-9]+) \\(local [0-9]+\\) pid ([0-9]+)");
    const std::regex restarted("supervisor: restarted rank ([0-9]+) in place \\(incarnation [0-9]+, pid ([0-9]+)");
    int pid = -1;
    std::smatch m;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if ((std::regex_search(line, m, started) || std::regex_search(line, m, restarted)) &&
          std::stoi(m[1]) == rank) {
        pid = std::stoi(m[2]);
      }
    }
    return pid;
  }

  std::string kubeconfig_, ns_, job_;
  int metrics_port_ = 9400;
  int nproc_ = 1;
  std::vector<ClusterPod> pods_;
  std::optional<ClusterPod> frozen_;
  std::string cordoned_;  // the node drain-node cordoned (not one it found cordoned)
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenCluster(const std::string& kubeconfig, const std::string& ns,
                                              const std::string& job) {
  auto t = std::make_unique<Cluster>(kubeconfig, ns, job);
  auto st = t->ReadStatus();
  if (!st.ok()) return st.status();
  return std::unique_ptr<Target>(std::move(t));
}

}  // namespace ddp::chaos
