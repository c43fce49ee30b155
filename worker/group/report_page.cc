// The rendezvous pod's own series (see report_page.h), written by prometheus-cpp through
// common/prometheus.h: a registry per page, filled from the report.
#include "worker/group/report_page.h"

#include "common/group_contract.h"
#include "common/prometheus.h"

namespace ddp::worker::group {

std::string RenderGroupReport(const GroupReport& r, const std::string& job, int round) {
  using namespace ddp::group;
  metrics::Registry reg;
  const std::string round_text = std::to_string(round);
  auto gauge = [&](const char* name, const char* help, double v) {
    reg.AddGauge(name, help, {"job", "round"}).Labels({job, round_text}).Set(v);
  };
  gauge(kGroupGeneration, "The group's generation this round (+1 at every re-formation).",
        static_cast<double>(r.generation));
  gauge(kGroupWorldSize, "Ranks in the group's current generation.",
        static_cast<double>(r.world_size));
  reg.AddCounter(kGroupResizes, "Resizes of the group done in place this round.", {"job", "round"})
      .Labels({job, round_text})
      .Inc(static_cast<double>(r.resizes));
  gauge(kGroupShrunkNodes,
        "Node ranks the group runs without after members lost with no spare (it grows back).",
        static_cast<double>(r.shrunk_nodes));
  gauge(kGroupSilentHeld,
        "Pods silent past the liveness timeout not declared lost: a mass silence waited out.",
        static_cast<double>(r.silent_held));
  gauge(kGroupRecoveries, "Failures healed in place this round, charged to maxRestarts.",
        static_cast<double>(r.recoveries));
  gauge(kGroupBudgetLeft, "Failures the group may still heal in place this round.",
        static_cast<double>(r.budget_left));
  gauge(kGroupAbandoned, "1 once the group gave up re-forming in place this round.",
        r.abandoned ? 1 : 0);
  auto& members = reg.AddGauge(kGroupMember, "1 per pod holding a node rank.",
                               {"job", "round", kPodLabel, kNodeRankLabel});
  for (const auto& [node, pod] : r.members) {
    members.Labels({job, round_text, pod, std::to_string(node)}).Set(1);
  }
  auto& spares = reg.AddGauge(kGroupSpare, "1 per idle spare pod ready to take a rank.",
                              {"job", "round", kPodLabel});
  for (const auto& pod : r.spares) spares.Labels({job, round_text, pod}).Set(1);
  auto& fenced = reg.AddGauge(kGroupFenced, "1 per pod the group fenced while it may still run.",
                              {"job", "round", kPodLabel, kUidLabel});
  for (const auto& [pod, uid] : r.fenced) fenced.Labels({job, round_text, pod, uid}).Set(1);
  auto& ended = reg.AddGauge(
      kGroupEnded, "1 per pod whose process ended, with the node rank it held (-1: an idle spare).",
      {"job", "round", kPodLabel, kUidLabel, kNodeRankLabel});
  for (const auto& e : r.ended) {
    ended.Labels({job, round_text, e.pod, e.uid, std::to_string(e.node_rank)}).Set(1);
  }
  auto& trainers = reg.AddGauge(
      kGroupTrainerIncarnation,
      "Per rank, the incarnation of its trainer (+1 at each restart in place).",
      {"job", "round", kRankLabel, kPodLabel});
  for (const auto& [rank, t] : r.trainers) {
    trainers.Labels({job, round_text, std::to_string(rank), t.first})
        .Set(static_cast<double>(t.second));
  }
  return reg.Render();
}

}  // namespace ddp::worker::group
