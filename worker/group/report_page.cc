// The rendezvous pod's own series (see report_page.h).
#include "worker/group/report_page.h"

#include <sstream>

#include "common/group_contract.h"

namespace ddp::worker::group {
namespace {

std::string Quote(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

}  // namespace

std::string RenderGroupReport(const GroupReport& r, const std::string& job, int round) {
  using namespace ddp::group;
  std::ostringstream o;
  const std::string common = "job=\"" + Quote(job) + "\",round=\"" + std::to_string(round) + "\"";
  auto gauge = [&](const char* name, const char* help, double v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n"
      << name << "{" << common << "} " << v << "\n";
  };
  gauge(kGroupGeneration, "The group's generation this round (+1 at every re-formation).",
        static_cast<double>(r.generation));
  gauge(kGroupWorldSize, "Ranks in the group's current generation.",
        static_cast<double>(r.world_size));
  o << "# HELP " << kGroupResizes << " Resizes of the group done in place this round.\n# TYPE "
    << kGroupResizes << " counter\n" << kGroupResizes << "{" << common << "} " << r.resizes << "\n";
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
  o << "# HELP " << kGroupMember << " 1 per pod holding a node rank.\n# TYPE " << kGroupMember
    << " gauge\n";
  for (const auto& [node, pod] : r.members) {
    o << kGroupMember << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\","
      << kNodeRankLabel << "=\"" << node << "\"} 1\n";
  }
  o << "# HELP " << kGroupSpare << " 1 per idle spare pod ready to take a rank.\n# TYPE "
    << kGroupSpare << " gauge\n";
  for (const auto& pod : r.spares) {
    o << kGroupSpare << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\"} 1\n";
  }
  o << "# HELP " << kGroupFenced << " 1 per pod the group fenced while it may still run.\n# TYPE "
    << kGroupFenced << " gauge\n";
  for (const auto& [pod, uid] : r.fenced) {
    o << kGroupFenced << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\","
      << kUidLabel << "=\"" << Quote(uid) << "\"} 1\n";
  }
  o << "# HELP " << kGroupEnded
    << " 1 per pod whose process ended, with the node rank it held (-1: an idle spare).\n# TYPE "
    << kGroupEnded << " gauge\n";
  for (const auto& e : r.ended) {
    o << kGroupEnded << "{" << common << "," << kPodLabel << "=\"" << Quote(e.pod) << "\","
      << kUidLabel << "=\"" << Quote(e.uid) << "\"," << kNodeRankLabel << "=\"" << e.node_rank
      << "\"} 1\n";
  }
  o << "# HELP " << kGroupTrainerIncarnation
    << " Per rank, the incarnation of its trainer (+1 at each restart in place).\n# TYPE "
    << kGroupTrainerIncarnation << " gauge\n";
  for (const auto& [rank, t] : r.trainers) {
    o << kGroupTrainerIncarnation << "{" << common << "," << kRankLabel << "=\"" << rank << "\","
      << kPodLabel << "=\"" << Quote(t.first) << "\"} " << t.second << "\n";
  }
  return o.str();
}

}  // namespace ddp::worker::group
