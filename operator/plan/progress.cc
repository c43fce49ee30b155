// Progress, hangs and recovery time (see progress.h); DESIGN.md "Progress, hangs and recovery
// time in the status".
#include "operator/plan/progress.h"

#include <algorithm>
#include <cmath>

#include "common/group_contract.h"
#include "operator/api/time_format.h"

namespace ddp::plan::internal {
namespace {

int64_t Round(double v) { return static_cast<int64_t>(std::llround(v)); }

api::Progress FromSnapshot(const metrics::ProgressSnapshot& s, TimePoint now) {
  api::Progress out;
  out.step = Round(s.step);
  if (s.total_steps && std::isfinite(*s.total_steps)) out.total_steps = Round(*s.total_steps);
  if (s.loss && std::isfinite(*s.loss)) out.loss = *s.loss;
  if (s.tokens_per_second && std::isfinite(*s.tokens_per_second)) {
    out.tokens_per_second = *s.tokens_per_second;
  }
  if (auto eta = s.EtaSeconds(); eta && std::isfinite(*eta)) out.eta_seconds = Round(*eta);
  out.updated_at = now;
  return out;
}

}  // namespace

const ObservedProgress* CurrentProgress(const Pass& p) {
  const auto& prog = p.seen->progress;
  return prog && prog->round == p.round ? &*prog : nullptr;
}

std::optional<std::string> HangMessage(Pass* p) {
  const auto& timeout = p->job.spec.failure_policy.hang_timeout_seconds;
  const ObservedProgress* prog = CurrentProgress(*p);
  if (!timeout || !prog || p->st.phase != api::kPhaseRunning) return std::nullopt;
  const TimePoint deadline = prog->snapshot.last_advance + std::chrono::seconds(*timeout);
  if (p->now < deadline) {
    Requeue(p, deadline);
    return std::nullopt;
  }
  return "no step progress for " + std::to_string(*timeout) + "s: last step " +
         std::to_string(Round(prog->snapshot.step)) + " seen at " +
         api::FormatTime(prog->snapshot.last_advance);
}

void UpdateProgress(Pass* p) {
  const ObservedProgress* prog = CurrentProgress(*p);
  if (!prog) return;
  const auto& cur = p->st.progress;
  // A new rank 0 (a new round, a replaced pod 0) shows step 0 until it has resumed: the job is
  // still where it was, so its progress stays (and its ETA with it) until a real step is read.
  if (cur && cur->step > 0 && prog->snapshot.step <= 0) return;
  api::Progress next = FromSnapshot(prog->snapshot, p->now);
  // In-place recoveries inside the pods reach status.recoveries through MirrorGroup
  // (inplace.h); progress.recoveries, how many of this round were added, is kept here.
  next.recoveries = cur ? cur->recoveries : 0;
  if (cur && cur->SameValues(next)) return;
  const bool riding_along = p->st != p->job.status;
  if (cur && cur->updated_at && !riding_along) {
    const TimePoint due = *cur->updated_at + kProgressWriteInterval;
    if (p->now < due) {
      Requeue(p, due);
      return;
    }
  }
  p->st.progress = next;
}

namespace {

// The highest step the current round's pods say they finished at; -1 when none says.
int64_t FinishedStep(const Pass& p) {
  std::vector<const ObservedPod*> pods = CurrentPods(p);
  for (const ObservedPod* s : CurrentSpares(p)) pods.push_back(s);
  int64_t most = -1;
  for (const ObservedPod* pod : pods) {
    if (pod == nullptr || pod->phase != "Succeeded") continue;
    if (auto r = group::ParseFinished(pod->message)) most = std::max(most, r->steps);
  }
  return most;
}

}  // namespace

void RecordFinish(Pass* p) {
  const int64_t step = FinishedStep(*p);
  auto& prog = p->st.progress;
  if (step < 0 && !(prog && prog->total_steps)) return;  // nothing known of the steps
  if (!prog) prog = api::Progress{};
  if (step >= 0) {
    prog->step = step;
    if (!prog->total_steps) prog->total_steps = step;
  } else {
    prog->step = *prog->total_steps;
  }
  prog->eta_seconds.reset();
  prog->tokens_per_second.reset();
  prog->updated_at = p->now;
}

std::string FinishedSteps(const Pass& p) {
  const int64_t step = FinishedStep(p);
  if (step < 0) return "";
  return " (step " + std::to_string(step) + " of " + std::to_string(step) + ")";
}

void RecordRecovery(Pass* p) {
  auto& f = p->st.last_failure;
  if (!f || !f->time || f->recovery_seconds || p->round == 0) return;
  f->recovery_seconds =
      std::max(0.0, std::chrono::duration<double>(p->now - *f->time).count());
}

}  // namespace ddp::plan::internal
