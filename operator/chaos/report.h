// `ddp-operator chaos`: the failures it can inject and the reports it prints, from a job's
// status (status.incidents, operator/plan/incidents.h). Pure: parsing and text only.
#ifndef DDP_OPERATOR_CHAOS_REPORT_H_
#define DDP_OPERATOR_CHAOS_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::chaos {

enum class FailureKind { kKillTrainer, kDeletePod, kFreezePod, kDrainNode, kKillRendezvous };

// One named failure: `kill-trainer RANK`, `delete-pod RANK`, `freeze-pod RANK SECONDS`,
// `drain-node NODE`, `kill-rendezvous`.
struct Failure {
  FailureKind kind = FailureKind::kKillTrainer;
  int rank = -1;          // kill-trainer: a global rank; delete-pod, freeze-pod: a node rank
  double seconds = 0;     // freeze-pod
  std::string node;       // drain-node
  std::string ToString() const;  // as written on the command line
};

// Parses `words` (the failure's name and its arguments). InvalidArgument naming what is wrong
// (an unknown name, a missing or extra argument, a rank that is not a number >= 0, seconds
// not in (0, 3600]).
StatusOr<Failure> ParseFailure(const std::vector<std::string>& words);

// The incident's report, several lines:
//   incident 3: TrainerExit of pod mingpt-worker-1 (node kit-1, rank 1) at 2026-...Z
//     detected after 0.05 s; training stood still 0.61 s (measured by the workers); 0 steps lost
//     outcome: HealedInPlace
std::string FormatIncident(const api::Incident& i, int64_t number);

// The soak's table: one row per incident (number, kind, pod, rank, stall, detection, steps
// lost, outcome), then the count, the mean and the longest stall, and the goodput.
std::string FormatTable(const std::vector<api::Incident>& incidents, int64_t first_number,
                        std::optional<double> goodput);

}  // namespace ddp::chaos

#endif  // DDP_OPERATOR_CHAOS_REPORT_H_
