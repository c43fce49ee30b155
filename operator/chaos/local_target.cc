// The chaos command's local target (see target.h).
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/http_server.h"
#include "common/worker_progress.h"
#include "operator/api/serialize.h"
#include "operator/chaos/target.h"

namespace ddp::chaos {
namespace {

struct LocalPod {
  std::string name, role, log;
  int index = -1, round = -1, pid = -1, metrics_port = 0;
  bool alive = false, deleting = false;
};

StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("cannot read " + path + " (is a `ddp-operator local` running there?)");
  std::stringstream text;
  text << f.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::DataLoss(path + ": not a JSON object");
  return doc;
}

// The pid its supervisor last logged for `rank`'s trainer ("rank R (local L) pid P", "restarted
// rank R in place (incarnation I, pid P"); -1 when the log names none.
int TrainerPid(const std::string& log, int rank) {
  std::ifstream f(log);
  const std::regex started("supervisor: node rank [0-9]+: rank ([0-9]+) \\(local [0-9]+\\) pid ([0-9]+)");
  const std::regex restarted("supervisor: restarted rank ([0-9]+) in place \\(incarnation [0-9]+, pid ([0-9]+)");
  std::string line;
  int pid = -1;
  std::smatch m;
  while (std::getline(f, line)) {
    if ((std::regex_search(line, m, started) || std::regex_search(line, m, restarted)) &&
        std::stoi(m[1]) == rank) {
      pid = std::stoi(m[2]);
    }
  }
  return pid;
}

// Whether the pod's log is a supervisor's (recovery InPlace: its trainers are its children).
bool Supervised(const std::string& log) {
  std::ifstream f(log);
  for (std::string line; std::getline(f, line);) {
    if (line.find("] supervisor: ") != std::string::npos) return true;
  }
  return false;
}

class Local : public Target {
 public:
  explicit Local(std::string dir) : dir_(std::move(dir)) {}

  StatusOr<api::DDPJobStatus> ReadStatus() override {
    auto doc = ReadJson(dir_ + "/status.json");
    if (!doc.ok()) return doc.status();
    return api::ParseStatusJson((*doc)["status"]);
  }

  StatusOr<std::string> Inject(const Failure& f) override {
    DDP_RETURN_IF_ERROR(LoadPods());
    switch (f.kind) {
      case FailureKind::kDrainNode:
        return Status::FailedPrecondition(
            "drain-node: local mode runs every pod on one machine, one node; in a cluster it "
            "evicts the job's pods on NODE. HINT: delete-pod RANK sends one pod the SIGTERM a "
            "drain would");
      case FailureKind::kKillRendezvous: {
        const LocalPod* r = Find([](const LocalPod& p) { return p.role == "rendezvous"; });
        if (r == nullptr) return Status::NotFound("no live rendezvous pod (is the job recovery InPlace?)");
        return Signal(*r, SIGKILL, "killed rendezvous pod " + r->name + "'s processes (SIGKILL)");
      }
      case FailureKind::kDeletePod:
      case FailureKind::kFreezePod: {
        auto pod = PodOfNodeRank(f.rank);
        if (!pod.ok()) return pod.status();
        if (f.kind == FailureKind::kDeletePod) {
          return Signal(**pod, SIGTERM,
                        "local mode has no API server: sent pod " + (*pod)->name +
                            "'s processes SIGTERM, what a delete does (its supervisor departs)");
        }
        frozen_pgid_ = (*pod)->pid;
        return Signal(**pod, SIGSTOP, "froze pod " + (*pod)->name + " (SIGSTOP to its processes) for " +
                                          std::to_string(static_cast<int>(f.seconds)) + " s");
      }
      case FailureKind::kKillTrainer: {
        auto pod = PodOfRank(f.rank);
        if (!pod.ok()) return pod.status();
        const std::string rank = std::to_string(f.rank);
        const int pid = TrainerPid((*pod)->log, f.rank);
        if (pid < 0) {
          // Without a supervisor (recovery Restart, one process per pod) the pod is the trainer;
          // a supervised pod whose log names no trainer of the rank is refused, not its
          // supervisor killed in the trainer's stead.
          if (Supervised((*pod)->log) || (*pod)->role != "worker") {
            return Status::NotFound("pod " + (*pod)->name + "'s log names no trainer of rank " +
                                    rank + " (yet): nothing killed");
          }
          if (::kill((*pod)->pid, SIGKILL) != 0) return Status::Unavailable("kill " + std::to_string((*pod)->pid) + " failed");
          return "killed pod " + (*pod)->name + "'s process, pid " + std::to_string((*pod)->pid) +
                 ": rank " + rank + "'s trainer (no supervisor: the pod is the trainer) (SIGKILL)";
        }
        // The pid is read from a log: the trainer may have ended since and its pid gone to
        // another process. A pod's processes stay in its process group (the pod's pid).
        if (pid == (*pod)->pid || ::getpgid(pid) != (*pod)->pid) {
          return Status::FailedPrecondition("pid " + std::to_string(pid) + " that pod " + (*pod)->name +
                                            "'s log names for rank " + rank + "'s trainer is not a "
                                            "trainer of that pod now (it ended): nothing killed");
        }
        if (::kill(pid, SIGKILL) != 0) return Status::Unavailable("kill " + std::to_string(pid) + " failed");
        return "killed rank " + rank + "'s trainer, pid " + std::to_string(pid) + " in pod " +
               (*pod)->name + " (SIGKILL)";
      }
    }
    return Status::Internal("unknown failure");
  }

  std::string Restore() override {
    if (frozen_pgid_ <= 0) return "";
    ::kill(-frozen_pgid_, SIGCONT);
    const std::string line = "thawed process group " + std::to_string(frozen_pgid_) + " (SIGCONT)";
    frozen_pgid_ = -1;
    return line;
  }

  std::optional<double> ReadStep() override {
    if (!LoadPods().ok()) return std::nullopt;
    const LocalPod* page = Find([](const LocalPod& p) { return p.role == "rendezvous"; });
    if (page == nullptr) page = Find([](const LocalPod& p) { return p.role == "worker" && p.index == 0; });
    if (page == nullptr || page->metrics_port <= 0) return std::nullopt;
    auto text = HttpGet("127.0.0.1", page->metrics_port, "/metrics", 500);
    if (!text.ok()) return std::nullopt;
    return metrics::ParseWorkerScrape(*text).steps;
  }

 private:
  Status LoadPods() {
    auto doc = ReadJson(dir_ + "/pods.json");
    if (!doc.ok()) return doc.status();
    pods_.clear();
    const auto& list = (*doc)["pods"];
    if (!list.is_array()) return Status::DataLoss(dir_ + "/pods.json: no pods list");
    for (const auto& p : list) {
      LocalPod pod;
      pod.name = p.value("name", "");
      pod.role = p.value("role", "worker");
      pod.log = p.value("log", "");
      pod.index = p.value("index", -1);
      pod.round = p.value("round", -1);
      pod.pid = p.value("pid", -1);
      pod.metrics_port = p.value("metricsPort", 0);
      pod.alive = p.value("alive", false);
      pod.deleting = p.value("deleting", false);
      if (pod.alive && !pod.deleting && pod.pid > 1) pods_.push_back(pod);
    }
    return Status::OK();
  }

  template <typename Pred>
  const LocalPod* Find(Pred pred) const {
    for (const LocalPod& p : pods_) {
      if (pred(p)) return &p;
    }
    return nullptr;
  }

  // The group's report (the rendezvous pod's page): who holds which node rank and rank.
  std::optional<metrics::GroupScrape> Group() const {
    const LocalPod* r = Find([](const LocalPod& p) { return p.role == "rendezvous"; });
    if (r == nullptr || r->metrics_port <= 0) return std::nullopt;
    auto text = HttpGet("127.0.0.1", r->metrics_port, "/metrics", 1000);
    if (!text.ok()) return std::nullopt;
    metrics::WorkerScrape s = metrics::ParseWorkerScrape(*text);
    if (!s.group.present) return std::nullopt;
    return s.group;
  }

  StatusOr<const LocalPod*> Named(const std::string& name, const std::string& why) const {
    const LocalPod* p = Find([&](const LocalPod& q) { return q.name == name; });
    if (p == nullptr) return Status::NotFound(why + ": pod " + name + " is not running");
    return p;
  }

  StatusOr<const LocalPod*> PodOfNodeRank(int node) const {
    if (auto g = Group()) {
      for (const auto& [pod, rank] : g->members) {
        if (rank == node) return Named(pod, "node rank " + std::to_string(node));
      }
      return Status::NotFound("no pod holds node rank " + std::to_string(node) + " now");
    }
    const LocalPod* p = Find([&](const LocalPod& q) { return q.role == "worker" && q.index == node; });
    if (p == nullptr) return Status::NotFound("no running pod of node rank " + std::to_string(node));
    return p;
  }

  StatusOr<const LocalPod*> PodOfRank(int rank) const {
    if (auto g = Group()) {
      auto it = g->trainers.find(rank);
      if (it != g->trainers.end()) return Named(it->second.first, "rank " + std::to_string(rank));
      return Status::NotFound("no trainer registered on rank " + std::to_string(rank));
    }
    return PodOfNodeRank(rank);  // one process per pod without a group (recovery Restart)
  }

  // Signals the pod's process group (its pid is the group's id, as a container's processes).
  static StatusOr<std::string> Signal(const LocalPod& pod, int sig, const std::string& what) {
    if (::kill(-pod.pid, sig) != 0) return Status::Unavailable("signal to pod " + pod.name + " failed");
    return what;
  }

  std::string dir_;
  std::vector<LocalPod> pods_;
  int frozen_pgid_ = -1;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenLocal(const std::string& run_dir) {
  auto t = std::make_unique<Local>(run_dir);
  auto st = t->ReadStatus();
  if (!st.ok()) return st.status();
  return std::unique_ptr<Target>(std::move(t));
}

}  // namespace ddp::chaos
