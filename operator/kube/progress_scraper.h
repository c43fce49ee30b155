// Reads rank 0's /metrics of running jobs for status.progress and hang detection, off the
// reconcile path: reconciles say which pod to read (Track) and read the latest snapshot (Get);
// a few threads of its own fetch pages, each job at most once per interval, each fetch with a
// short timeout, at most max_in_flight at a time. It decides nothing: the planner does (and the
// straggler detector, fed by the controller from TakeBusyReads).
//
// Bounded and fair, since a page is written by a tenant: a page is capped in bytes (reading
// stops there) and in series, parsed in linear time on the fetching thread with no lock held,
// and its values are checked before they are kept; a page past a cap or with a bad value is
// refused (RefusalToReport says so once per streak, for an Event). A job holds at most one
// thread at a time; a job whose last read was slow or refused is a suspect: its reads back off
// (up to kMaxBackoff intervals) and suspects together hold at most half the threads, so
// healthy jobs always have the other half, whatever other tenants' pods do. A group target's
// failed read is followed by probes of the pods set by SetProbes (at most kMaxProbes, each within
// the timeout), so the planner can tell a silent node from a silent pod.
// Thread-safe.
#ifndef DDP_OPERATOR_KUBE_PROGRESS_SCRAPER_H_
#define DDP_OPERATOR_KUBE_PROGRESS_SCRAPER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "common/status.h"
#include "common/worker_progress.h"

namespace ddp::controller {

struct ScrapeTarget {
  std::string pod_uid;  // another pod (a new round, a replaced pod) starts from no progress
  std::string host;     // the pod's IP
  int port = 0;         // spec.metrics.port
  int round = -1;       // the pod's round, handed back with the snapshot
  // An InPlace job's rendezvous pod: read every group_interval (its report says whom the group
  // fenced, which the operator replaces at once), and a change of its report wakes the job.
  bool group = false;
  bool operator==(const ScrapeTarget& o) const {
    return pod_uid == o.pod_uid && host == o.host && port == o.port && round == o.round &&
           group == o.group;
  }
};

struct ScrapedProgress {
  int round = -1;
  metrics::ProgressSnapshot snapshot;
  metrics::WorkerScrape last_page;  // generation and recovery series, for status.recoveries
};

struct ProgressScraperOptions {
  std::chrono::milliseconds interval{std::chrono::seconds(10)};
  std::chrono::milliseconds group_interval{std::chrono::seconds(2)};
  std::chrono::milliseconds timeout{std::chrono::seconds(2)};
  int max_in_flight = 8;
  // A page larger than this (bytes of body) or with more series (samples or families) than
  // this is refused. --scrape-max-bytes, --scrape-max-series.
  size_t max_page_bytes = 4 << 20;
  size_t max_page_series = 50000;
  // After the first step seen, an advance wakes the job's reconcile at most this often: the
  // planner writes progress-only changes at most every 30 s anyway, and arms its own timer for
  // the hang deadline.
  std::chrono::milliseconds min_wake_interval{std::chrono::seconds(30)};
  // Pages carrying every rank's busy time (rank 0's per-rank series) are kept for the
  // controller's straggler detector (TakeBusyReads); once this many wait, an advance wakes the
  // job's reconcile regardless of min_wake_interval, so detection keeps the read cadence.
  int busy_reads_wake = 3;
};

// The reason of the Warning Event on a job whose page was refused (once per refusal streak).
inline constexpr char kMetricsRefusedReason[] = "MetricsRefused";

// How one read ended: a page kept, no page (unreachable, timed out, not 200), or a page refused
// (past a cap, or a value out of range).
enum class ScrapeResult { kOk, kError, kRefused };

// Whether a target still answers: an answer sets last_ok; a read that got none after it sets
// failing (the first such read of a group target wakes the job). An answer is any HTTP answer
// from the pod: a page kept or refused, another status code (a 503 from a busy server, a 431),
// or, after a group target's page got none (it may wait on another pod: the rendezvous pod's
// fetches rank 0's), its own /healthz, which its server answers at once.
// While a group target's reads fail, the pods set by SetProbes are probed too, each after every
// failed read: by pod uid, how many probes since the page went silent, and whether one answered.
struct ProbeReads {
  int sent = 0;
  bool answered = false;
};
struct PageReads {
  std::string pod_uid;
  std::chrono::system_clock::time_point last_ok{};
  bool failing = false;
  std::map<std::string, ProbeReads> probes;  // cleared whenever the page answers
};

// A pod to probe (GET /healthz, within the scrape timeout): any HTTP answer, whatever its status
// code, is a sign of life.
struct ProbeTarget {
  std::string pod_uid;
  std::string host;
  int port = 0;
  bool operator==(const ProbeTarget& o) const {
    return pod_uid == o.pod_uid && host == o.host && port == o.port;
  }
};

// Every rank's cumulative busy time as of one page (WorkerScrape::busy_by_rank).
using BusyRead = std::map<int, metrics::RankStepTime>;

class ProgressScraper {
 public:
  // GET http://host:port/path within timeout_ms: the answer whatever its status code, or an
  // error when none came (common/http_server.h's HttpFetch by default, with the page cap).
  using Fetch = std::function<StatusOr<HttpAnswer>(const std::string& host, int port,
                                                   const std::string& path, int timeout_ms)>;
  // Called (from a scraper thread, no lock held) when a job's step was first seen, and then on
  // an advance at most once per min_wake_interval; and on the first refused page of a streak.
  using OnAdvance = std::function<void(const std::string& key)>;
  // Called after every fetch with its result (for metrics).
  using OnFetch = std::function<void(ScrapeResult)>;
  // A read slower than half the timeout, or refused, backs the job's reads off: the next one
  // is due after interval * 2^(streak) , at most kMaxBackoff intervals.
  static constexpr int kMaxBackoff = 8;

  ProgressScraper(ProgressScraperOptions options, OnAdvance on_advance, OnFetch on_fetch = {},
                  Fetch fetch = {});
  ~ProgressScraper();
  ProgressScraper(const ProgressScraper&) = delete;
  ProgressScraper& operator=(const ProgressScraper&) = delete;

  void Start();
  // Waits for fetches in flight (each bounded by the timeout). Idempotent.
  void Stop();

  // Reads `key` from `target` from now on; the same target keeps its snapshot and schedule.
  void Track(const std::string& key, const ScrapeTarget& target);
  // Stops reading `key` and drops its snapshot (the job is not running, or is gone).
  void Forget(const std::string& key);
  // The pods to probe after each failed read of `key`'s group target (the controller: the job's
  // pods on the rendezvous pod's node, which tells a silent node from a silent pod); at most
  // kMaxProbes, the first ones. Keeps the reads of the pods still listed. Nothing if not tracked.
  void SetProbes(const std::string& key, std::vector<ProbeTarget> probes);
  static constexpr size_t kMaxProbes = 4;
  // The latest snapshot of `key`; nullopt before a page with a step.
  std::optional<ScrapedProgress> Get(const std::string& key) const;
  // The group report of `key`'s last page (a rendezvous pod's), with its round; nullopt when
  // the last page had none.
  struct ScrapedGroup {
    int round = -1;
    std::string pod_uid;  // the rendezvous pod that served it
    metrics::GroupScrape report;
  };
  std::optional<ScrapedGroup> GetGroup(const std::string& key) const;
  size_t Tracked() const;
  // How `key`'s reads went; nullopt when it is not tracked or never answered.
  std::optional<PageReads> Reads(const std::string& key) const;
  // Why `key`'s last page was refused, the first time it is asked after a refusal that followed
  // a kept page (or the first read); nullopt otherwise, and while the refusal goes on.
  std::optional<std::string> RefusalToReport(const std::string& key);
  // Why `key`'s last page was refused; nullopt when it was not.
  std::optional<std::string> Refusal(const std::string& key) const;
  // The busy reads of `key` gathered since the last call, oldest first (at most kMaxBusyReads;
  // older ones are dropped: the values are cumulative, so only resolution is lost). Empty for
  // pages without the per-rank series (an older worker, a torchrun image).
  std::vector<BusyRead> TakeBusyReads(const std::string& key);
  static constexpr size_t kMaxBusyReads = 16;

 private:
  struct Entry {
    ScrapeTarget target;
    uint64_t epoch = 0;  // bumped on a new target, so a fetch of the old one is dropped
    std::chrono::steady_clock::time_point next_due;
    bool in_flight = false;
    std::optional<std::chrono::steady_clock::time_point> last_wake;
    metrics::ProgressTracker tracker;
    metrics::WorkerScrape last_page;
    std::vector<BusyRead> busy_reads;
    int slow_streak = 0;                 // consecutive slow or refused reads
    std::optional<std::string> refusal;  // the last page's, when it was refused
    bool refusal_reported = false;
    std::optional<std::chrono::system_clock::time_point> last_ok;  // the last answer
    bool failing = false;  // a read after last_ok got no answer
    std::vector<ProbeTarget> probes;
    std::map<std::string, ProbeReads> probe_reads;  // since failing began
  };
  void Loop();
  // The entry due first that no thread is reading and the suspects' quota allows; end() if none.
  std::map<std::string, Entry>::iterator NextDue();
  // Reads one page and checks it; no lock held. *answered: the pod answered (any status code).
  StatusOr<metrics::WorkerScrape> ReadPage(const ScrapeTarget& target, ScrapeResult* result,
                                           bool* answered);
  // Probes each pod once, one after the other; no lock held. Pod uid -> answered.
  std::map<std::string, bool> Probe(const std::vector<ProbeTarget>& probes);

  const ProgressScraperOptions options_;
  OnAdvance on_advance_;
  OnFetch on_fetch_;
  Fetch fetch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
  uint64_t next_epoch_ = 1;
  int suspects_in_flight_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_PROGRESS_SCRAPER_H_
