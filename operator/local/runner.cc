// The local run loop (see runner.h for the steps).
#include "operator/local/runner.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>

#include "common/group_contract.h"
#include "common/http_server.h"
#include "operator/api/serialize.h"
#include "operator/local/executor.h"
#include "operator/local/manifest.h"
#include "operator/local/pod_process.h"
#include "operator/local/pods_file.h"
#include "operator/local/process.h"
#include "operator/local/signals.h"
#include "operator/local/status_line.h"
#include "operator/local/straggler_watch.h"
#include "operator/local/terminal.h"
#include "operator/plan/builders.h"
#include "operator/plan/names.h"
#include "operator/plan/plan.h"

namespace ddp::controller::local {
namespace {

// Local mode has no scheduler and no Kueue: a schedulingPolicy is validated, reported once (the
// planner's GangSchedulingIgnored event) and creates nothing.
plan::GangConfig LocalGang() {
  plan::GangConfig g;
  g.kueue = false;
  g.none_reason = "local mode has no scheduler; in a cluster the operator's "
                  "--gang-scheduler-name and Kueue apply them";
  return g;
}

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Caps the wait for processes to stop after Ctrl-C: a user pressing it wants the prompt back.
constexpr std::chrono::seconds kInterruptGrace(5);

std::string Timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

bool IsTerminal(const std::string& phase) {
  return phase == api::kPhaseSucceeded || phase == api::kPhaseFailed;
}

std::vector<std::string> TailLines(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

// Writes status.json in the run dir by write-temp + rename, so a reader never sees half a file.
// `stragglers`: ranks reported as stragglers so far (stragglersReported, when any).
void WriteStatusFile(const std::string& run_dir, const api::DDPJob& job, int stragglers) {
  nlohmann::json doc = {{"name", job.name},
                        {"generation", job.generation},
                        {"status", api::StatusToJson(job.status)}};
  if (stragglers > 0) doc["stragglersReported"] = stragglers;
  const std::string tmp = run_dir + "/.status.json.tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << doc.dump(2) << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, run_dir + "/status.json", ec);
}

class LocalRun {
 public:
  LocalRun(const RunOptions& options, FILE* out, FILE* err)
      : options_(options),
        err_(err),
        terminal_(out, options.live && isatty(fileno(out))),
        watcher_(options.manifest_path),
        stragglers_({options.straggler_factor, options.straggler_reads},
                    options.straggler_interval) {}

  int Run();

 private:
  int Init();
  void Reconcile();
  void ApplyEdit(const std::string& text);
  void RefreshStatusLine();
  void TrackProgress(const LocalPod& rank0, const WorkerProgress& page);
  // While the rendezvous pod's page fails: probes the round's other pods (plan/silent_rendezvous.h
  // rule 3), at most kMaxProbes of them, each within kReadTimeoutMs.
  void ProbeNodeMates(plan::RendezvousReads* reads) const;
  static constexpr size_t kMaxProbes = 4;
  // Every read of a pod's page or /healthz, on one machine. A pod answers, or is silent, by any
  // HTTP answer of its own (progress_scraper.h's rule): a page may wait on another pod (the
  // rendezvous pod's fetches rank 0's, for up to a second), so when the rendezvous pod's page
  // gets none in time its own /healthz, which its server answers at once, is asked too. A frozen
  // rank 0 then costs the status line a read, never the healthy store its place.
  static constexpr int kReadTimeoutMs = 300;
  void ScaleOnSchedule(int64_t steps);
  void ReportGroupChanges(const plan::ObservedGroup& before, const metrics::GroupScrape& now,
                          int round);
  int Finish(int code);
  std::string Elapsed() const;
  std::string LogPath(const std::string& pod) const;

  RunOptions options_;
  FILE* err_;
  Terminal terminal_;
  ManifestWatcher watcher_;
  api::DDPJob job_;
  nlohmann::json user_spec_;  // the spec as the user wrote it, for diffs of edits
  std::string checkpoint_dir_;
  std::string run_dir_;
  std::unique_ptr<LocalExecutor> executor_;
  std::unique_ptr<PodsFile> pods_file_;  // pods.json, for `ddp-operator chaos --run-dir`
  SteadyClock::time_point started_ = SteadyClock::now();
  std::optional<SteadyClock::time_point> requeue_at_;
  SteadyClock::time_point next_scrape_{};
  SteadyClock::time_point next_watch_{};
  WorkerProgress progress_;
  EtaEstimator eta_;
  // status.progress as in the cluster: rank 0's pages while the job is Running, from a fresh
  // tracker for each rank 0 process (a new round starts from no progress).
  metrics::ProgressTracker tracker_;
  std::string tracked_uid_;
  int tracked_round_ = -1;
  plan::ObservedGroup group_;  // the rendezvous pod's last report (recovery InPlace)
  // Whether the rendezvous pod's page still answers (plan/silent_rendezvous.h): a frozen one
  // (SIGSTOP) is replaced after the liveness timeout, as in a cluster.
  std::optional<plan::RendezvousReads> rendezvous_reads_;
  size_t next_scale_ = 0;      // the first of options_.scale_at not applied yet
  StragglerWatch stragglers_;
  bool finished_ = false;
};

std::string LocalRun::Elapsed() const {
  return "[" + FormatDuration(std::chrono::duration<double>(SteadyClock::now() - started_).count()) +
         "]";
}

int LocalRun::Init() {
  StatusOr<std::string> text = watcher_.ReadInitial();
  if (!text.ok()) {
    std::fprintf(err_, "ddp-operator local: %s\n", text.status().message().c_str());
    return kExitUsage;
  }
  StatusOr<api::DDPJob> job = ParseLocalManifest(text.value(), options_.manifest_path);
  if (!job.ok()) {
    std::fprintf(err_, "ddp-operator local: %s\n", job.status().message().c_str());
    return kExitUsage;
  }
  job_ = std::move(job.value());
  user_spec_ = api::SpecToJson(job_.spec);
  run_dir_ = options_.run_dir.empty() ? "runs/" + job_.name + "-" + Timestamp() : options_.run_dir;
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  run_dir_ = fs::absolute(run_dir_).lexically_normal().string();
  // The manifest's checkpoint.path is used as written (validation makes it absolute); without
  // one, checkpoints live in the run directory so a run is self-contained.
  checkpoint_dir_ = job_.spec.checkpoint.path.value_or(run_dir_ + "/checkpoints");
  fs::create_directories(checkpoint_dir_, ec);
  if (ec || !fs::is_directory(checkpoint_dir_) || !fs::is_directory(run_dir_)) {
    std::fprintf(err_,
                 "ddp-operator local: cannot create %s or %s: %s\nHINT: pass --run-dir, or drop "
                 "spec.checkpoint.path (a container path) to keep checkpoints in the run dir\n",
                 run_dir_.c_str(), checkpoint_dir_.c_str(), ec.message().c_str());
    return kExitUsage;
  }
  job_.spec.checkpoint.path = checkpoint_dir_;
  // The job's own directory under it (plan/names.h CheckpointDir), made here for programs that
  // do not create it themselves (a torchrun script's snapshot).
  const std::string own_checkpoints = plan::CheckpointDir(job_);
  fs::create_directories(own_checkpoints, ec);
  job_.uid = "local-" + std::to_string(getpid());
  job_.generation = 1;
  // Fail early and clearly when the command cannot run at all, rather than as restarts.
  nlohmann::json pod0 = plan::BuildWorkerPod(job_, 0, 0, job_.spec.replicas);
  StatusOr<ProcessSpec> spec = ProcessSpecFromPod(pod0, {});
  StatusOr<std::string> path =
      spec.ok() ? ResolveCommand(spec.value().argv[0], options_.command_dirs) : spec.status();
  if (!path.ok()) {
    std::fprintf(err_, "ddp-operator local: %s: %s\n", options_.manifest_path.c_str(),
                 path.status().message().c_str());
    return kExitUsage;
  }
  pods_file_ = std::make_unique<PodsFile>(run_dir_);
  executor_ = std::make_unique<LocalExecutor>(
      ExecutorOptions{run_dir_, options_.command_dirs, options_.grace_seconds,
                      options_.pod_start_delay});
  terminal_.Line("ddp-operator local: job " + job_.name + ", " +
                 std::to_string(job_.spec.replicas) + " pod(s) x " +
                 std::to_string(job_.spec.nproc_per_node) + " process(es), command " +
                 path.value());
  terminal_.Line("  run dir " + run_dir_ + " (pod logs, status.json), checkpoints " +
                 own_checkpoints);
  terminal_.Line("  edit " + options_.manifest_path +
                 " to apply changes (replicas, suspend); Ctrl-C stops everything");
  return -1;
}

void LocalRun::ScaleOnSchedule(int64_t steps) {
  while (next_scale_ < options_.scale_at.size() && steps >= options_.scale_at[next_scale_].first) {
    const auto [at, replicas] = options_.scale_at[next_scale_++];
    if (job_.spec.replicas == replicas) continue;
    terminal_.Line(Elapsed() + " --scale-at " + std::to_string(at) + "=" +
                   std::to_string(replicas) + ": rank 0 at step " + std::to_string(steps) +
                   ", spec.replicas " + std::to_string(job_.spec.replicas) + " -> " +
                   std::to_string(replicas) + " (generation " +
                   std::to_string(job_.generation + 1) + ")");
    job_.spec.replicas = replicas;
    ++job_.generation;
  }
}

void LocalRun::ApplyEdit(const std::string& text) {
  StatusOr<api::DDPJob> edited = ParseLocalManifest(text, options_.manifest_path);
  if (!edited.ok()) {
    terminal_.Line(Elapsed() + " edit ignored, the job keeps its spec: " +
                   edited.status().message());
    return;
  }
  if (edited.value().name != job_.name) {
    terminal_.Line(Elapsed() + " edit ignored: metadata.name changed (" + job_.name + " -> " +
                   edited.value().name + "); local mode runs one job, restart it to run another");
    return;
  }
  nlohmann::json spec = api::SpecToJson(edited.value().spec);
  std::vector<std::string> diff = DiffJson(user_spec_, spec);
  if (diff.empty()) return;
  if (edited.value().spec.checkpoint.path.value_or(checkpoint_dir_) != checkpoint_dir_) {
    terminal_.Line(Elapsed() + " note: spec.checkpoint.path changes apply on the next run only");
  }
  user_spec_ = spec;
  job_.spec = edited.value().spec;
  job_.spec.checkpoint.path = checkpoint_dir_;
  job_.labels = edited.value().labels;
  ++job_.generation;
  std::string what;
  for (const std::string& d : diff) what += (what.empty() ? "" : ", ") + d;
  terminal_.Line(Elapsed() + " applied edit (generation " + std::to_string(job_.generation) +
                 "): " + what);
}

void LocalRun::Reconcile() {
  plan::Observed seen = executor_->Observe();
  if (tracker_.snapshot()) seen.progress = plan::ObservedProgress{tracked_round_, *tracker_.snapshot()};
  if (group_.report.present) seen.group = group_;
  seen.rendezvous_reads = rendezvous_reads_;
  plan::PlanOptions options;
  options.gang = LocalGang();
  plan::Plan plan = plan::PlanReconcile(job_, seen, std::chrono::system_clock::now(), options);
  if (plan.status) {
    job_.status = *plan.status;
    WriteStatusFile(run_dir_, job_, stragglers_.reported());
  }
  for (const std::string& m : executor_->Apply(plan, std::chrono::system_clock::now())) {
    terminal_.Line(Elapsed() + " " + m);
  }
  for (const plan::Event& e : plan.events) {
    terminal_.Line(Elapsed() + (e.type == "Warning" ? " ! " : " ") + e.message);
  }
  requeue_at_.reset();
  if (plan.requeue_after) requeue_at_ = SteadyClock::now() + *plan.requeue_after;
  if (plan.delete_job) {
    terminal_.Line(Elapsed() + " ttlSecondsAfterFinished elapsed: job deleted");
    finished_ = true;
    return;
  }
  if (IsTerminal(job_.status.phase) && !job_.spec.run_policy.ttl_seconds_after_finished &&
      plan.deletes.empty()) {
    bool deleting = false;
    for (const auto& [name, pod] : executor_->pods()) deleting = deleting || pod.deleting;
    finished_ = !deleting;
  }
}

// One line per node rank that changed hands within a round (a spare took a lost member's rank,
// or a replacement took its own back), and per pod the group newly fenced.
void LocalRun::ReportGroupChanges(const plan::ObservedGroup& before, const metrics::GroupScrape& now,
                                  int round) {
  if (!before.report.present || before.round != round) return;
  // The first assignment of every rank is the round's start, not news.
  for (const auto& [pod, node] : before.report.members.empty() ? decltype(now.members){} : now.members) {
    auto was = before.report.members.find(pod);
    if (was != before.report.members.end() && was->second == node) continue;
    terminal_.Line(Elapsed() + " group: " + pod + " took node rank " + std::to_string(node));
  }
  for (const auto& f : now.fenced) {
    const auto& old = before.report.fenced;
    if (std::find(old.begin(), old.end(), f) != old.end()) continue;
    terminal_.Line(Elapsed() + " group: " + f.first + " declared lost and fenced");
  }
}

void LocalRun::ProbeNodeMates(plan::RendezvousReads* reads) const {
  // One machine, one node: every pod of the round is on the silent rendezvous pod's node.
  size_t probed = 0;
  for (const auto& [name, pod] : executor_->pods()) {
    if (!pod.alive || pod.deleting || pod.round != job_.status.round ||
        pod.role == group::kRoleRendezvous || pod.metrics_port <= 0 || probed == kMaxProbes) {
      continue;
    }
    ++probed;
    auto& probes = reads->node_mates[pod.uid];
    probes.sent += 1;
    probes.answered = probes.answered ||
                      HttpFetch("127.0.0.1", pod.metrics_port, "/healthz", kReadTimeoutMs).ok();
  }
}

void LocalRun::TrackProgress(const LocalPod& rank0, const WorkerProgress& page) {
  if (job_.status.phase != api::kPhaseRunning || rank0.round != job_.status.round) return;
  if (rank0.uid != tracked_uid_) {
    tracker_ = metrics::ProgressTracker();
    tracked_uid_ = rank0.uid;
    tracked_round_ = rank0.round;
  }
  tracker_.Add(page, std::chrono::system_clock::now());
}

void LocalRun::RefreshStatusLine() {
  const auto now = SteadyClock::now();
  if (now >= next_scrape_) {
    next_scrape_ = now + options_.scrape_interval;
    // InPlace: the rendezvous pod's page (the group's series and rank 0's); else rank 0's.
    const LocalPod* rdzv = executor_->AliveRendezvous(job_.status.round);
    if (const LocalPod* rank0 = rdzv ? rdzv : executor_->AliveRank0(job_.status.round)) {
      StatusOr<HttpAnswer> answer =
          HttpFetch("127.0.0.1", rank0->metrics_port, "/metrics", kReadTimeoutMs);
      if (rdzv) {
        auto& r = rendezvous_reads_;
        if (!r || r->pod_uid != rdzv->uid) r = plan::RendezvousReads{rdzv->uid, {}, false, {}};
        const bool answered =
            answer.ok() ||
            (r->last_ok != plan::TimePoint{} &&
             HttpFetch("127.0.0.1", rdzv->metrics_port, "/healthz", kReadTimeoutMs).ok());
        if (answered) {
          r->last_ok = std::chrono::system_clock::now();
          r->failing = false;
          r->node_mates.clear();
        } else if (r->last_ok != plan::TimePoint{}) {
          if (!r->failing) r->node_mates.clear();
          r->failing = true;
          ProbeNodeMates(&*r);
        }
      }
      if (answer.ok() && answer->code == 200) {
        WorkerProgress p = ParseWorkerProgress(answer->body);
        if (p.group.present) {
          ReportGroupChanges(group_, p.group, rank0->round);
          group_ = plan::ObservedGroup{rank0->round, p.group, rank0->uid};
        }
        TrackProgress(*rank0, p);
        if (p.steps) {
          progress_ = p;
          eta_.Add(std::chrono::duration<double>(now - started_).count(), *p.steps);
          ScaleOnSchedule(static_cast<int64_t>(*p.steps));
        }
      }
    }
  }
  StatusLineInput in;
  in.phase = job_.status.phase;
  in.round = job_.status.round;
  in.running = executor_->AliveCount(job_.status.round);
  in.total = job_.status.replicas > 0 ? job_.status.replicas : job_.spec.replicas;
  in.restarts = job_.status.restarts;
  in.disruptions = job_.status.disruptions;
  in.recoveries = job_.status.recoveries;
  // Once the job has ended the last scrape is stale; the summary says how it ended.
  if (!IsTerminal(in.phase)) {
    in.progress = progress_;
    if (progress_.total_steps) in.eta_seconds = eta_.EtaSeconds(*progress_.total_steps);
  }
  std::string key = in.phase + "/" + std::to_string(in.round);
  terminal_.Status((terminal_.live() ? "" : Elapsed() + " ") +
                       FormatStatusLine(in, terminal_.live() ? terminal_.Width() - 1 : 0),
                   key);
}

// The newest log of `pod`: the latest round, and in it the latest replacement (see
// ExecutorOptions::log_dir).
std::string LocalRun::LogPath(const std::string& pod) const {
  for (int r = job_.status.round; r >= 0; --r) {
    const std::string base = run_dir_ + "/" + pod + ".round" + std::to_string(r);
    std::string p = base + ".log";
    if (!fs::exists(p)) continue;
    for (int k = 1; fs::exists(base + "." + std::to_string(k) + ".log"); ++k) {
      p = base + "." + std::to_string(k) + ".log";
    }
    return p;
  }
  return "";
}

int LocalRun::Finish(int code) {
  terminal_.ClearStatus();
  int grace = 0;
  for (const auto& [name, pod] : executor_->pods()) {
    if (pod.alive) grace = std::max(grace, pod.grace_seconds);
  }
  executor_->StopAll(std::min<std::chrono::seconds>(std::chrono::seconds(grace), kInterruptGrace));
  SummaryInput s;
  s.job = job_.Key();
  s.phase = code > kExitUsage ? "Interrupted (" + job_.status.phase + ")" : job_.status.phase;
  for (const char* type : {api::kCondFailed, api::kCondSucceeded}) {
    const api::Condition* c = job_.status.FindCondition(type);
    if (c && c->status == "True" && IsTerminal(job_.status.phase)) {
      s.reason = c->reason;
      s.message = c->message;
    }
  }
  s.rounds = job_.status.round + 1;
  s.restarts = job_.status.restarts;
  s.disruptions = job_.status.disruptions;
  s.recoveries = job_.status.recoveries;
  s.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - started_).count();
  s.run_dir = run_dir_;
  if (job_.status.phase == api::kPhaseFailed && job_.status.last_failure) {
    s.failed_pod = job_.status.last_failure->pod;
    std::string log = LogPath(s.failed_pod);
    if (!log.empty()) {
      s.failed_pod += " (" + log + ")";
      s.log_tail = TailLines(log, 10);
    }
  }
  terminal_.Line(FormatSummary(s));
  if (stragglers_.reported() > 0) {
    terminal_.Line("  stragglers reported: " + std::to_string(stragglers_.reported()));
  }
  return code;
}

int LocalRun::Run() {
  if (int code = Init(); code >= 0) return code;
  SignalPipe signals;
  while (true) {
    if (signals.stop_signal() != 0) {
      terminal_.ClearStatus();
      terminal_.Line(Elapsed() + " stopping: signal " + std::to_string(signals.stop_signal()) +
                     ", terminating every process of the job");
      return Finish(128 + signals.stop_signal());
    }
    executor_->Reap();
    executor_->EnforceGracePeriods(SteadyClock::now());
    for (const std::string& m : executor_->StartDue(SteadyClock::now())) {
      terminal_.Line(Elapsed() + " " + m);
    }
    const auto now = SteadyClock::now();
    if (now >= next_watch_) {
      next_watch_ = now + options_.watch_interval;
      if (std::optional<std::string> text = watcher_.Poll()) ApplyEdit(*text);
    }
    Reconcile();
    pods_file_->Update(executor_->pods());
    if (finished_) {
      return Finish(job_.status.phase == api::kPhaseSucceeded ? kExitSucceeded : kExitFailed);
    }
    RefreshStatusLine();
    if (job_.status.phase == api::kPhaseRunning) {
      std::vector<std::string> reports = stragglers_.Poll(
          *executor_, job_.status.round, job_.spec.nproc_per_node, SteadyClock::now());
      for (const std::string& m : reports) terminal_.Line(Elapsed() + " ! " + m);
      if (!reports.empty()) WriteStatusFile(run_dir_, job_, stragglers_.reported());
    }
    auto wake = std::min(next_watch_, next_scrape_);
    if (requeue_at_) wake = std::min(wake, *requeue_at_);
    if (auto kill_at = executor_->NextKillDeadline()) wake = std::min(wake, *kill_at);
    auto wait = std::chrono::duration_cast<milliseconds>(wake - SteadyClock::now());
    signals.Wait(std::max(wait, milliseconds(1)));
  }
}

}  // namespace

int RunLocal(const RunOptions& options, FILE* out, FILE* err) {
  RunOptions o = options;
  if (o.command_dirs.empty()) o.command_dirs = DefaultCommandDirs();
  LocalRun run(o, out, err);
  return run.Run();
}

}  // namespace ddp::controller::local
