// Plans applied to local processes. See executor.h for the contract.
#include "operator/local/executor.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/group_contract.h"
#include "common/listen_port.h"
#include "common/logging.h"
#include "operator/local/pod_process.h"
#include "operator/local/process.h"
#include "operator/plan/names.h"
#include "operator/plan/observe.h"

namespace ddp::controller::local {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

int LabelInt(const Json& pod, const char* key) {
  const Json& labels = pod.value("metadata", Json::object()).value("labels", Json::object());
  if (!labels.contains(key) || !labels[key].is_string()) return -1;
  try {
    size_t used = 0;
    const std::string s = labels[key].get<std::string>();
    int v = std::stoi(s, &used);
    return used == s.size() ? v : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

LocalExecutor::~LocalExecutor() { StopAll(std::chrono::seconds(5)); }

StatusOr<int> LocalExecutor::FreshPort() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    StatusOr<int> port = PickListenPort();  // common/listen_port.h
    if (!port.ok()) return port;
    if (used_ports_.insert(port.value()).second) return port;
  }
  return Status::Unavailable("no free port found in 20 attempts");
}

std::vector<std::string> LocalExecutor::Apply(const plan::Plan& plan, plan::TimePoint now) {
  std::vector<std::string> messages;
  for (const Json& object : plan.creates) {
    const std::string kind = object.value("kind", "");
    const std::string name = object.value("metadata", Json::object()).value("name", "");
    if (kind == "Service") {
      service_exists_ = true;  // nothing to run: rank 0 is 127.0.0.1
      continue;
    }
    if (kind == plan::kNetworkPolicyKind) {
      // Nothing to enforce: the "pods" are this host's processes, on its loopback.
      network_policy_exists_ = true;
      continue;
    }
    if (kind != "Pod" || pods_.count(name)) continue;  // AlreadyExists is success
    LocalPod pod;
    pod.object = object;
    pod.name = name;
    pod.uid = "local-" + std::to_string(next_uid_++);
    pod.object["metadata"]["uid"] = pod.uid;  // the downward API's metadata.uid
    const Json& labels = object.value("metadata", Json::object()).value("labels", Json::object());
    if (labels.contains(api::kRoleLabel) && labels[api::kRoleLabel].is_string()) {
      pod.role = labels[api::kRoleLabel].get<std::string>();
    }
    pod.index = pod.role == group::kRoleSpare        ? LabelInt(object, api::kSpareIndexLabel)
                : pod.role == group::kRoleRendezvous ? 0
                                                     : LabelInt(object, api::kReplicaIndexLabel);
    pod.round = LabelInt(object, api::kRoundLabel);
    pod.created = now;
    const std::string base = name + ".round" + std::to_string(pod.round);
    const int earlier = starts_[base]++;
    pod.log_path = options_.log_dir + "/" + base +
                   (earlier > 0 ? "." + std::to_string(earlier) : std::string()) + ".log";
    if (options_.pod_start_delay.count() > 0) {
      pod.start_at = SteadyClock::now() + options_.pod_start_delay;
      pods_.emplace(name, std::move(pod));
      continue;
    }
    Status s = Start(&pod, &messages);
    if (!s.ok()) {
      // The kubelet's answer to a container that cannot start: a failed pod, exit 128 in
      // containerd; 127 here, the shell's "command not found".
      pod.exit = PodExit{127, "Failed", "StartError", s.message(), false};
      messages.push_back(name + ": " + s.message());
    }
    pods_.emplace(name, std::move(pod));
  }
  for (const plan::Patch& patch : plan.patches) {
    // The rendezvous pod's group-size annotation: merged into the object, projected to its file.
    auto it = pods_.find(patch.name);
    if (patch.kind != "Pod" || it == pods_.end() || !patch.merge_patch.contains("metadata")) continue;
    it->second.object["metadata"].merge_patch(patch.merge_patch["metadata"]);
    WriteGroupSize(it->second);
  }
  const auto steady_now = SteadyClock::now();
  for (const plan::Delete& d : plan.deletes) {
    if (d.kind == "Service") {
      service_exists_ = false;
      continue;
    }
    if (d.kind == plan::kNetworkPolicyKind) {
      network_policy_exists_ = false;
      continue;
    }
    if (d.kind != "Pod") continue;
    auto it = pods_.find(d.name);
    if (it == pods_.end() || (!d.uid.empty() && d.uid != it->second.uid)) continue;  // NotFound
    if (!it->second.alive) {  // finished, or still waiting for its start: nothing to stop
      pods_.erase(it);  // a finished pod's record goes at once
    } else {
      StartDelete(&it->second, steady_now, d.grace_period_seconds);
    }
  }
  return messages;
}

Status LocalExecutor::Start(LocalPod* pod, std::vector<std::string>* messages) {
  if (!master_ports_.count(pod->round)) {
    // One rendezvous port per round: the old round's rank 0 may leave its port in TIME_WAIT.
    StatusOr<int> port = FreshPort();
    if (!port.ok()) return port.status();
    master_ports_[pod->round] = port.value();
  }
  StatusOr<int> metrics_port = FreshPort();
  if (!metrics_port.ok()) return metrics_port.status();
  pod->metrics_port = metrics_port.value();
  HostOverrides host;
  host.master_port = master_ports_[pod->round];
  host.metrics_port = pod->metrics_port;
  StatusOr<ProcessSpec> spec = ProcessSpecFromPod(pod->object, host);
  if (!spec.ok()) return spec.status();
  for (const std::string& w : spec.value().warnings) messages->push_back(pod->name + ": " + w);
  pod->grace_seconds = options_.grace_seconds.value_or(spec.value().grace_seconds);
  StatusOr<std::string> path = ResolveCommand(spec.value().argv[0], options_.command_dirs);
  if (!path.ok()) return path.status();
  SpawnRequest req{path.value(), spec.value().argv, spec.value().env, pod->log_path};
  pod->termination_log = pod->log_path + ".termination";
  std::error_code ignored;
  std::filesystem::remove(pod->termination_log, ignored);
  // As a kubelet mounts a file at the container's terminationMessagePath (which the builders
  // name in DDP_TERMINATION_LOG), local mode points it at a file of this run's, read back in
  // Reap(): whatever path the template chose, the message is found.
  bool has_log = false;
  for (auto& [name, value] : req.env) {
    if (name != group::kEnvTerminationLog) continue;
    value = pod->termination_log;
    has_log = true;
  }
  if (!has_log) req.env.emplace_back(group::kEnvTerminationLog, pod->termination_log);
  for (auto& [name, value] : req.env) {
    // The projected annotation: a file of this run's, written now and at every patch.
    if (name != group::kEnvGroupSizeFile) continue;
    pod->group_size_file = pod->log_path + ".group-size";
    value = pod->group_size_file;
    WriteGroupSize(*pod);
  }
  // A wrapper script in the template (sh -c '... exec ddp-worker') finds the same binaries the
  // command lookup does: the command dirs go in front of the inherited PATH.
  bool sets_path = false;
  for (const auto& [name, value] : req.env) sets_path = sets_path || name == "PATH";
  if (!sets_path && !options_.command_dirs.empty()) {
    std::string path_env;
    for (const std::string& d : options_.command_dirs) path_env += d + ":";
    const char* inherited = std::getenv("PATH");
    req.env.emplace_back("PATH", path_env + (inherited ? inherited : "/usr/bin:/bin"));
  }
  StatusOr<pid_t> pid = SpawnProcessGroup(req);
  if (!pid.ok()) return pid.status();
  pod->pid = pid.value();
  pod->alive = true;
  DDP_LOG(DEBUG) << pod->name << ": started pid " << pod->pid << " (" << path.value() << ")";
  return Status::OK();
}

void LocalExecutor::StartDelete(LocalPod* pod, SteadyClock::time_point now,
                                std::optional<int64_t> grace_seconds) {
  const auto grace = std::chrono::seconds(grace_seconds.value_or(pod->grace_seconds));
  if (pod->deleting) {
    // A second delete may only shorten the grace, as in Kubernetes; 0 is a force delete. A
    // kill_at of max() means the SIGKILL is already sent.
    if (pod->kill_at == SteadyClock::time_point::max() || now + grace >= pod->kill_at) return;
    pod->kill_at = now + grace;
    if (grace.count() == 0) {
      SignalGroup(pod->pid, SIGKILL);
      pod->kill_at = SteadyClock::time_point::max();  // Reap() finishes it
    }
    return;
  }
  pod->deleting = true;
  pod->signalled = true;
  pod->kill_at = now + grace;
  // SIGKILL also ends a stopped (SIGSTOP) process; a SIGTERM would wait for its SIGCONT, and
  // EnforceGracePeriods sends the SIGKILL when the grace is over.
  SignalGroup(pod->pid, grace.count() > 0 ? SIGTERM : SIGKILL);
  if (grace.count() == 0) pod->kill_at = SteadyClock::time_point::max();
}

std::vector<std::string> LocalExecutor::Reap() {
  std::vector<std::string> changed;
  for (auto it = pods_.begin(); it != pods_.end();) {
    LocalPod& pod = it->second;
    int status = 0;
    if (!pod.alive || waitpid(pod.pid, &status, WNOHANG) != pod.pid) {
      ++it;
      continue;
    }
    pod.alive = false;
    // The container is gone when its main process is: whatever it left in its group goes too,
    // as the kubelet tears down a container's cgroup.
    SignalGroup(pod.pid, SIGKILL);
    changed.push_back(pod.name);
    if (pod.deleting) {
      it = pods_.erase(it);  // deleted and reaped: the pod is gone, its name free again
      continue;
    }
    pod.exit = ClassifyExit(status, pod.signalled);
    pod.finished_at = std::chrono::system_clock::now();
    // A supervisor's reason, as Kubernetes reports a container's termination message.
    std::ifstream term(pod.termination_log);
    std::string reason;
    if (term && std::getline(term, reason) && !reason.empty()) pod.exit->message = reason;
    ++it;
  }
  return changed;
}

void LocalExecutor::EnforceGracePeriods(SteadyClock::time_point now) {
  for (auto& [name, pod] : pods_) {
    if (pod.alive && pod.deleting && now >= pod.kill_at) {
      SignalGroup(pod.pid, SIGKILL);
      pod.kill_at = SteadyClock::time_point::max();  // once is enough; Reap() finishes it
    }
  }
}

std::vector<std::string> LocalExecutor::StartDue(SteadyClock::time_point now) {
  std::vector<std::string> messages;
  for (auto& [name, pod] : pods_) {
    if (!pod.start_at || *pod.start_at > now) continue;
    pod.start_at.reset();
    if (Status s = Start(&pod, &messages); !s.ok()) {
      pod.exit = PodExit{127, "Failed", "StartError", s.message(), false};
      pod.finished_at = std::chrono::system_clock::now();
      messages.push_back(name + ": " + s.message());
    }
  }
  return messages;
}

std::optional<SteadyClock::time_point> LocalExecutor::NextKillDeadline() const {
  std::optional<SteadyClock::time_point> next;
  for (const auto& [name, pod] : pods_) {
    if (pod.start_at && (!next || *pod.start_at < *next)) next = pod.start_at;
    if (pod.alive && pod.deleting && pod.kill_at != SteadyClock::time_point::max() &&
        (!next || pod.kill_at < *next)) {
      next = pod.kill_at;
    }
  }
  return next;
}

void LocalExecutor::WriteGroupSize(const LocalPod& pod) {
  if (pod.group_size_file.empty()) return;
  const Json& annotations =
      pod.object.value("metadata", Json::object()).value("annotations", Json::object());
  const std::string size = annotations.value(group::kGroupSizeAnnotation, std::string());
  // Whole or not at all, as the kubelet swaps a projected volume's files.
  const std::string tmp = pod.group_size_file + ".tmp";
  { std::ofstream(tmp) << size; }
  std::error_code ignored;
  std::filesystem::rename(tmp, pod.group_size_file, ignored);
}

plan::Observed LocalExecutor::Observe() const {
  plan::Observed seen;
  seen.service_exists = service_exists_;
  seen.network_policy_exists = network_policy_exists_;
  for (const auto& [name, pod] : pods_) {
    plan::ObservedPod o;
    o.name = name;
    o.role = pod.role;
    o.index = pod.index;
    o.round = pod.round;
    o.uid = pod.uid;
    o.owner_uid = plan::ControllerUid(pod.object);
    o.created = pod.created;
    o.deleting = pod.deleting;
    if (pod.role == group::kRoleRendezvous) o.group_size = plan::ObservePod(pod.object).group_size;
    if (pod.alive) {
      o.phase = "Running";
      o.ready = true;  // no readiness probes locally: a running process is ready
    } else if (pod.start_at) {
      o.phase = "Pending";  // scheduled, its image pulling (ExecutorOptions::pod_start_delay)
    } else if (pod.exit) {
      o.phase = pod.exit->phase;
      o.exit_code = pod.exit->exit_code;
      o.finished_at = pod.finished_at;
      o.reason = pod.exit->reason;
      o.message = pod.exit->message;
      o.disruption_condition = pod.exit->disruption;
    }
    seen.pods.push_back(std::move(o));
  }
  return seen;
}

int LocalExecutor::AliveCount(int round) const {
  int n = 0;
  for (const auto& [name, pod] : pods_) {
    n += pod.alive && pod.round == round && pod.role == group::kRoleWorker ? 1 : 0;
  }
  return n;
}

const LocalPod* LocalExecutor::AliveRank0(int round) const {
  for (const auto& [name, pod] : pods_) {
    if (pod.alive && pod.round == round && pod.index == 0 && pod.role == group::kRoleWorker) {
      return &pod;
    }
  }
  return nullptr;
}

const LocalPod* LocalExecutor::AliveRendezvous(int round) const {
  for (const auto& [name, pod] : pods_) {
    if (pod.alive && pod.round == round && pod.role == group::kRoleRendezvous) return &pod;
  }
  return nullptr;
}

int LocalExecutor::MasterPort(int round) const {
  auto it = master_ports_.find(round);
  return it == master_ports_.end() ? 0 : it->second;
}

void LocalExecutor::StopAll(std::chrono::milliseconds grace) {
  const auto now = SteadyClock::now();
  for (auto& [name, pod] : pods_) {
    if (!pod.alive) continue;
    pod.deleting = true;
    pod.signalled = true;
    pod.kill_at = now + grace;
    SignalGroup(pod.pid, grace.count() > 0 ? SIGTERM : SIGKILL);
  }
  bool killed = false;
  while (true) {
    Reap();
    bool any = false;
    for (const auto& [name, pod] : pods_) any = any || pod.alive;
    if (!any) break;
    if (!killed && SteadyClock::now() >= now + grace) {
      for (auto& [name, pod] : pods_) {
        if (pod.alive) SignalGroup(pod.pid, SIGKILL);
      }
      killed = true;
    }
    // Shutdown path only: a short poll keeps this free of signal plumbing.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ddp::controller::local
