// Straggler detection: from successive reads of every rank's cumulative step time, the ranks
// that are persistently slower than the others. Pure; thread-compatible. A decision to report,
// never to restart.
//
// In data-parallel training every rank's step takes as long as the slowest one's (the all-reduce
// waits for it), so the wall time of a step cannot tell ranks apart. What differs is the busy
// time: step time minus the time spent waiting for the all-reduce. A straggler's busy time is
// long, its peers' short (they wait for it).
#ifndef DDP_OPERATOR_PLAN_STRAGGLERS_H_
#define DDP_OPERATOR_PLAN_STRAGGLERS_H_

#include <map>
#include <string>
#include <vector>

#include "common/worker_progress.h"
#include "operator/api/types.h"
#include "operator/plan/plan.h"

namespace ddp::plan {

struct Straggler {
  int rank = -1;
  double busy_seconds = 0;          // its mean busy time per step over the last interval
  double others_median_seconds = 0;  // the median of the other ranks' over the same interval
  std::string Describe() const;      // "rank 3 is a straggler: 0.412 s busy per step, 2.1x ..."
};

struct StragglerOptions {
  double factor = 1.5;  // slower than the others' median by at least this
  int reads = 3;        // for this many consecutive reads
};

class StragglerDetector {
 public:
  explicit StragglerDetector(StragglerOptions options = {}) : options_(options) {}

  // Feeds one read of every rank's cumulative times (a rank missing from a read keeps its
  // streak; a rank whose counters went back, a restarted process, gives no interval this read).
  // Returns the ranks that just became stragglers: each once, until it has been back within
  // the factor for a read. With world_size > 0, ranks outside [0, world_size) are ignored (a
  // page cannot claim more ranks than the job has). O(n log n) in the ranks read: one sort
  // gives every rank's median of the others.
  std::vector<Straggler> Add(const std::map<int, metrics::RankStepTime>& by_rank,
                             int world_size = 0);
  // Ranks currently flagged.
  size_t flagged() const;

 private:
  struct RankState {
    metrics::RankStepTime last;
    bool has_last = false;
    int streak = 0;
    bool flagged = false;
  };
  StragglerOptions options_;
  std::map<int, RankState> ranks_;
};

// The reason of the one Event per newly flagged rank.
inline constexpr char kStragglerReason[] = "Straggler";

// That Event for `job`: a Warning naming the rank's pod (rank / nproc_per_node) and saying it
// is reported, not restarted.
Event StragglerEvent(const api::DDPJob& job, const Straggler& straggler);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_STRAGGLERS_H_
