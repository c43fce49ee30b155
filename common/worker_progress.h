// Training progress read from a ddp-worker's /metrics page: one parser for `ddp-operator local`
// and the operator's scraper, and the tracker that turns successive pages into a step rate and
// the time the step last advanced. Pure; a ProgressTracker is thread-compatible.
#ifndef DDP_COMMON_WORKER_PROGRESS_H_
#define DDP_COMMON_WORKER_PROGRESS_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/exposition.h"
#include "common/group_contract.h"

namespace ddp::metrics {

// Worker series read here (exported by worker/train/worker_metrics.cc, listed in docs/metrics.md).
inline constexpr char kWorkerSteps[] = "ddp_worker_steps_total";
inline constexpr char kWorkerLoss[] = "ddp_worker_loss";
inline constexpr char kWorkerTokensPerSecond[] = "ddp_worker_tokens_per_second";
inline constexpr char kWorkerTotalSteps[] = "ddp_worker_total_steps";
inline constexpr char kWorkerStepSeconds[] = "ddp_worker_step_seconds";
inline constexpr char kWorkerExposedAllreduceSeconds[] = "ddp_worker_exposed_allreduce_seconds_total";
// In-place recovery: the group's generation this round (gauge) and the time from a failure to
// the group's next committed step (histogram). Absent from workers without in-place recovery.
inline constexpr char kWorkerGeneration[] = "ddp_worker_generation";
inline constexpr char kWorkerRecoverySeconds[] = "ddp_worker_recovery_seconds";
// A trainer's own record of the last time training stood still for it (worker/train/
// stall_clock.h): unix times by label kStallEdgeLabel, and the step training resumed from.
inline constexpr char kWorkerLastStall[] = "ddp_worker_last_stall_timestamp_seconds";
inline constexpr char kWorkerLastStallStep[] = "ddp_worker_last_stall_step";
inline constexpr char kStallEdgeLabel[] = "edge";
// The same records of the pod holding node rank 1, as the rendezvous pod relays them
// (worker/launch/rendezvous_pod.cc): a survivor's when rank 0's pod was the one lost.
inline constexpr char kGroupPeerLastStall[] = "ddp_group_peer_last_stall_timestamp_seconds";
inline constexpr char kGroupPeerLastStallStep[] = "ddp_group_peer_last_stall_step";

// Rank 0's page only: every rank's busy seconds (label kPeerRankLabel) over the steps counted by
// kWorkerRankBusySteps, handed to rank 0 in the step agreement. Absent from older workers.
inline constexpr char kWorkerRankBusySeconds[] = "ddp_worker_rank_busy_seconds_total";
inline constexpr char kWorkerRankBusySteps[] = "ddp_worker_rank_busy_steps_total";
// The rank a kWorkerRankBusySeconds series is about (`rank` is the page's own, under launch).
inline constexpr char kPeerRankLabel[] = "peer_rank";

// Cumulative step time of one rank (the _sum and _count of ddp_worker_step_seconds) and the part
// of it spent waiting for the all-reduce (ddp_worker_exposed_allreduce_seconds_total).
struct RankStepTime {
  double sum_seconds = 0;
  double count = 0;
  double exposed_allreduce_seconds = 0;
};

// One trainer's last stall (kWorkerLastStall), unix seconds. start and detected are absent for
// a process whose first commit it is (it saw no start: a new round, a healed newcomer).
struct StallRecord {
  int rank = -1;  // the page's rank label; -1 without one
  std::optional<double> start, detected;
  double end = 0;
  double step = 0;  // the committed step training resumed from
  bool operator==(const StallRecord& o) const {
    return rank == o.rank && start == o.start && detected == o.detected && end == o.end &&
           step == o.step;
  }
};

// What the rendezvous pod of an InPlace job says about its group (common/group_contract.h).
struct GroupScrape {
  bool present = false;     // the page had the group's series
  double generation = 0;
  double recoveries = 0;    // failures healed in place this round, charged in the group
  double budget_left = 0;
  double world_size = 0;    // ranks in the current generation; 0: not reported (an older page)
  double resizes = 0;       // resizes done in place this round
  double shrunk_nodes = 0;  // node ranks the group runs without after losses with no spare
  double silent_held = 0;   // pods silent past the liveness timeout not declared lost (held back)
  std::map<std::string, int> members;  // pod name -> node rank
  std::vector<std::string> spares;     // idle spare pods
  std::vector<std::pair<std::string, std::string>> fenced;  // pod name, uid
  struct Ended {
    std::string pod, uid;
    int node_rank = -1;  // held when its process ended; -1: an idle spare
    bool operator==(const Ended& o) const {
      return pod == o.pod && uid == o.uid && node_rank == o.node_rank;
    }
  };
  std::vector<Ended> ended;
  bool abandoned = false;
  // rank -> (pod, incarnation) of the trainer registered on it (kGroupTrainerIncarnation).
  std::map<int, std::pair<std::string, int>> trainers;
  bool operator==(const GroupScrape& o) const;
};

// What one page says. Every field is absent when the page lacks its series.
struct WorkerScrape {
  std::optional<double> steps;
  std::optional<double> loss;
  std::optional<double> tokens_per_second;
  std::optional<double> total_steps;
  std::optional<double> generation;
  std::optional<double> recovery_seconds_sum;
  std::optional<double> recovery_seconds_count;
  GroupScrape group;  // a rendezvous pod's page
  // The page's newest stall record (of any rank it carries): the one with the latest end; when
  // that one saw no start, another rank's record of the same stall (end within kSameStall)
  // that did. Absent when no rank has one.
  std::optional<StallRecord> last_stall;
  bool stall_series = false;  // the page has kWorkerLastStallStep (a worker that records stalls)
  // By the `rank` label; a page without one (a worker run alone) is rank -1.
  std::map<int, RankStepTime> step_time_by_rank;
  // Every rank's busy time from rank 0's per-rank series, by peer_rank: sum_seconds is the busy
  // time (already net of the all-reduce wait, so exposed_allreduce_seconds is 0), count the
  // steps covered. Empty when the page lacks either series.
  std::map<int, RankStepTime> busy_by_rank;
};

// With `ddp-worker launch` every series carries a `rank` label: the rank="0" series is used;
// without it, the first series of each name.
WorkerScrape ReadWorkerScrape(const std::vector<ParsedFamily>& families);

// Bounds on the numbers a page may carry. A value past them refuses the page: a count of
// 4294967291 recoveries is an overflow or a lie, never something to add to a status.
inline constexpr double kMaxPageSteps = 9007199254740992.0;  // 2^53: exact in a double
inline constexpr double kMaxPageCount = 1e9;  // generations, recoveries: an int with room to add
inline constexpr int kMaxPageRank = 1 << 20;  // a rank label past this is not a rank

// Checks the values of a read page before any reaches a status, fixing what is merely absent:
// a loss or token rate that is NaN or infinite is dropped (a diverging run is no hostile page).
// FailedPrecondition naming the series and its value for: a step count or total that is not a
// whole number in [0, kMaxPageSteps]; a group count (generation, recoveries, budget) not whole
// or past kMaxPageCount in size; a negative token rate; a step time, count or busy time that is
// negative or not finite.
Status CheckWorkerScrape(WorkerScrape* s);

// Parses `text` within `limits`, reads it and checks it (CheckWorkerScrape); the parser's
// errors otherwise.
StatusOr<WorkerScrape> ReadWorkerPage(const std::string& text, const ParseLimits& limits = {});

// ReadWorkerPage without limits; a page that does not parse or fails the checks yields an
// empty WorkerScrape (a scrape racing a worker's shutdown is no error).
WorkerScrape ParseWorkerScrape(const std::string& text);

using WallTime = std::chrono::system_clock::time_point;

// Two ranks' records of one stall end within this (they commit the same step together).
inline constexpr double kSameStall = 1.0;

// Rank 0's progress as of the last page that had a step.
struct ProgressSnapshot {
  double step = 0;
  std::optional<double> total_steps;
  std::optional<double> loss;
  std::optional<double> tokens_per_second;
  std::optional<double> steps_per_second;  // over the last advances; absent until two are seen
  WallTime last_advance{};  // when a page first showed `step` (the first page counts)
  WallTime scraped_at{};    // the last page with a step
  std::optional<StallRecord> last_stall;  // that page's (WorkerScrape::last_stall)
  bool stall_series = false;
  // The seconds to totalSteps at steps_per_second; absent without both.
  std::optional<double> EtaSeconds() const;
};

// Feeds successive pages of one worker (one round): the step rate is measured between the
// first page showing a step and the latest, over at most kRateWindow, so one slow step does not
// swing the ETA. A page without a step leaves the snapshot as it was; so does a page showing
// step 0 once a later step was seen (a new rank 0 before it resumed). Step 0 never starts the
// rate: the advance after it may be a resume from a checkpoint, not training.
class ProgressTracker {
 public:
  static constexpr std::chrono::seconds kRateWindow{120};
  // Returns true when the step advanced (or the first step was seen).
  bool Add(const WorkerScrape& page, WallTime now);
  const std::optional<ProgressSnapshot>& snapshot() const { return snapshot_; }

 private:
  struct Point {
    WallTime at;
    double step;
  };
  std::optional<ProgressSnapshot> snapshot_;
  std::vector<Point> advances_;  // (time, step) at each advance, within kRateWindow
};

}  // namespace ddp::metrics

#endif  // DDP_COMMON_WORKER_PROGRESS_H_
