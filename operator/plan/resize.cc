// Elastic in place: the round's and the group's sizes (see resize.h).
#include "operator/plan/resize.h"

#include <algorithm>
#include <vector>

#include "common/group_contract.h"
#include "operator/plan/conditions.h"
#include "operator/plan/gang.h"
#include "operator/plan/incidents.h"
#include "operator/plan/inplace.h"
#include "operator/plan/names.h"

namespace ddp::plan::internal {

bool ResizesInPlace(const Pass& p) {
  return InPlace(p) && p.job.spec.elastic.has_value() && KueueQueue(p.job, p.gang).empty();
}

namespace {

// Which pods of the round are unschedulable past the timeout, by index (arms the requeue for
// those still inside it). A pod not created yet, or not known to be unschedulable, is not: the
// group waits for it as for any pod that is starting.
std::vector<bool> Expired(Pass* p) {
  std::vector<bool> out(static_cast<size_t>(p->size), false);
  const auto timeout = std::chrono::seconds(p->job.spec.elastic->pending_timeout_seconds);
  const auto pods = CurrentPods(*p);
  for (size_t i = 0; i < pods.size(); ++i) {
    const ObservedPod* pod = pods[i];
    if (!pod || !pod->unschedulable_since || pod->phase != "Pending") continue;
    if (p->now >= *pod->unschedulable_since + timeout) {
      out[i] = true;
    } else {
      Requeue(p, *pod->unschedulable_since + timeout);
    }
  }
  return out;
}

}  // namespace

int GroupSize(Pass* p) {
  if (!ResizesInPlace(*p)) return p->size;
  // Only the highest indices: a group keeps its ranks dense and a survivor keeps its rank, so a
  // hole below (UnschedulableBelowTop) is not a smaller group.
  const std::vector<bool> expired = Expired(p);
  int size = p->size;
  while (size > 0 && expired[static_cast<size_t>(size - 1)]) --size;
  return std::min(p->size, std::max(size, p->job.spec.elastic->min_replicas));
}

bool UnschedulableBelowTop(Pass* p) {
  if (!ResizesInPlace(*p)) return false;
  const std::vector<bool> expired = Expired(p);
  const int group = GroupSize(p);
  int below = 0;
  for (int i = 0; i < group; ++i) below += expired[static_cast<size_t>(i)] ? 1 : 0;
  // A lost member's replacement: the group went on without it already (a pod moved into its
  // rank: worker/group/authority.h rule 10) and takes it in once it starts, whenever that is.
  const metrics::GroupScrape* g = CurrentGroup(*p);
  return below > (g != nullptr ? static_cast<int>(g->shrunk_nodes) : 0);
}

void ResizeInPlace(Pass* p, int to, const std::string& why) {
  const std::string msg = "round " + std::to_string(p->round) + ": resize " +
                          std::to_string(p->size) + " -> " + std::to_string(to) +
                          " pods in place (" + why + "); no pod restarts";
  api::Incident i;
  i.kind = api::kIncidentResize;
  i.outcome = to < p->size ? api::kOutcomeShrank : api::kOutcomeGrew;
  i.message = msg;
  OpenIncident(p, i);
  p->size = to;
  AddEvent(p, "Normal", kReasonResizedInPlace, msg);
}

void PlanGroupSize(Pass* p) {
  if (!ResizesInPlace(*p)) return;
  const int want = GroupSize(p);
  const metrics::GroupScrape* g = CurrentGroup(*p);
  const int nproc = p->job.spec.nproc_per_node;
  if (g != nullptr && g->world_size > 0) p->st.world_size = static_cast<int>(g->world_size);
  const ObservedPod* rdzv = CurrentRendezvous(*p);
  if (rdzv != nullptr && rdzv->group_size != want) {
    p->plan.patches.push_back(
        {"v1", "Pod", rdzv->name,
         {{"metadata", {{"annotations", {{group::kGroupSizeAnnotation, std::to_string(want)}}}}}}});
    const int from = rdzv->group_size;
    std::string why = want < p->size
                          ? std::to_string(p->size - want) +
                                (p->size - want == 1 ? " pod" : " pods") + " unschedulable for " +
                                std::to_string(p->job.spec.elastic->pending_timeout_seconds) +
                                "s (left Pending: the group grows back once scheduled)"
                          : "the round's size";
    AddEvent(p, "Normal", kReasonGroupResized,
             "round " + std::to_string(p->round) + ": the group's size " +
                 (from > 0 ? std::to_string(from) : std::string("unset")) + " -> " +
                 std::to_string(want) + " pods (" + why + "), at its next generation");
  }
  const int world = p->st.world_size;
  const int full = p->size * nproc;
  const int64_t gen = p->job.generation;
  if (want < p->size) {
    SetCondition(&p->st, api::kCondBelowSize, "True", "PendingTimeout",
                 "the group runs " + std::to_string(want) + " of " + std::to_string(p->size) +
                     " pods: the others are unschedulable; they join once they start",
                 p->now, gen);
  } else if (g != nullptr && g->world_size > 0 && world < full && g->shrunk_nodes > 0) {
    const int lost = static_cast<int>(g->shrunk_nodes);
    SetCondition(&p->st, api::kCondBelowSize, "True", kReasonMemberLost,
                 "the group runs " + std::to_string(world) + " of " + std::to_string(full) +
                     " ranks: " + std::to_string(lost) + (lost == 1 ? " member" : " members") +
                     " lost with no spare to take " + (lost == 1 ? "its rank" : "their ranks") +
                     "; it trains on at the same global batch and grows back when the "
                     "replacement is ready",
                 p->now, gen);
  } else if (g != nullptr && g->world_size > 0 && world < full) {
    SetCondition(&p->st, api::kCondBelowSize, "True", "Growing",
                 "the group runs " + std::to_string(world) + " of " + std::to_string(full) +
                     " ranks: the others join at its next generation",
                 p->now, gen);
  } else {
    ClearCondition(&p->st, api::kCondBelowSize, "AtSize",
                   "the group runs all " + std::to_string(full) + " ranks", p->now, gen);
  }
}

}  // namespace ddp::plan::internal
