// The committed steps of a generation's members, summed up: which step the group is at, which
// member holds it (the heal's source) and how many are behind. The last member to arrive in a
// generation writes it once (membership.h), so each member reads one key instead of every
// other member's arrival. Pure.
#ifndef DDP_WORKER_GROUP_STEPS_H_
#define DDP_WORKER_GROUP_STEPS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::worker::group {

struct StepsSummary {
  int64_t step = -1;  // the group's latest committed step; -1: nobody has state
  int source = -1;    // the lowest rank at `step`; -1 when step is -1
  int behind = 0;     // members below `step`

  bool operator==(const StepsSummary& o) const {
    return step == o.step && source == o.source && behind == o.behind;
  }
};

// `committed` by rank, -1 for a member without state.
StepsSummary SummarizeSteps(const std::vector<int64_t>& committed);

// "<step> <source> <behind>", and back (false for anything else: the value is read from the
// store, written by a member).
std::string FormatSteps(const StepsSummary& s);
bool ParseSteps(const std::string& text, StepsSummary* out);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_STEPS_H_
