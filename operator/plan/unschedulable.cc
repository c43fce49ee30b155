// The Unschedulable condition and its Events (see unschedulable.h).
#include "operator/plan/unschedulable.h"

#include <algorithm>

#include "operator/plan/conditions.h"

namespace ddp::plan::internal {

void RecordUnschedulable(Pass* p) {
  if (p->gang_wait) return;
  std::vector<const ObservedPod*> stuck;
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.deleting || pod.phase != "Pending" || !pod.unschedulable_since) continue;
    if (IsCurrent(*p, pod)) stuck.push_back(&pod);
  }
  const api::Condition* c = p->st.FindCondition(kCondUnschedulable);
  const int64_t gen = p->job.generation;
  if (stuck.empty()) {
    if (!c || c->status != "True") return;
    const std::string msg = "round " + std::to_string(p->round) + ": every pod is scheduled";
    ClearCondition(&p->st, kCondUnschedulable, kReasonScheduled, msg, p->now, gen);
    AddEvent(p, "Normal", kReasonScheduled, msg);
    return;
  }
  std::sort(stuck.begin(), stuck.end(),
            [](const ObservedPod* a, const ObservedPod* b) { return a->name < b->name; });
  const ObservedPod& first = *stuck.front();
  std::string msg = "pod " + first.name + " cannot be scheduled: " +
                    (first.unschedulable_message.empty() ? "the scheduler gives no reason"
                                                         : first.unschedulable_message);
  if (stuck.size() > 1) msg += " (and " + std::to_string(stuck.size() - 1) + " more)";
  const bool news = !c || c->status != "True" || c->message != msg;
  SetCondition(&p->st, kCondUnschedulable, "True", kReasonUnschedulable, msg, p->now, gen);
  if (news) AddEvent(p, "Warning", kReasonUnschedulable, msg);
}

}  // namespace ddp::plan::internal
