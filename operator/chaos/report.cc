// Failures by name and the chaos command's reports (see report.h).
#include "operator/chaos/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "operator/api/time_format.h"

namespace ddp::chaos {
namespace {

std::string Fixed(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// A whole number >= 0 (a rank); nullopt otherwise.
std::optional<int> Rank(const std::string& s) {
  if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::atoi(s.c_str());
}

}  // namespace

std::string Failure::ToString() const {
  switch (kind) {
    case FailureKind::kKillTrainer: return "kill-trainer " + std::to_string(rank);
    case FailureKind::kDeletePod: return "delete-pod " + std::to_string(rank);
    case FailureKind::kFreezePod: return "freeze-pod " + std::to_string(rank) + " " + Fixed(seconds, 0);
    case FailureKind::kDrainNode: return "drain-node " + node;
    case FailureKind::kKillRendezvous: return "kill-rendezvous";
  }
  return "?";
}

StatusOr<Failure> ParseFailure(const std::vector<std::string>& words) {
  const std::string usage =
      "HINT: one of kill-trainer RANK, delete-pod RANK, freeze-pod RANK SECONDS, drain-node "
      "NODE, kill-rendezvous";
  if (words.empty()) return Status::InvalidArgument("no failure named. " + usage);
  const std::string& name = words[0];
  auto want = [&](size_t n) -> Status {
    if (words.size() == n + 1) return Status::OK();
    return Status::InvalidArgument(name + " takes " + std::to_string(n) + " argument(s), got " +
                                   std::to_string(words.size() - 1) + ". " + usage);
  };
  Failure f;
  if (name == "kill-rendezvous") {
    DDP_RETURN_IF_ERROR(want(0));
    f.kind = FailureKind::kKillRendezvous;
    return f;
  }
  if (name == "drain-node") {
    DDP_RETURN_IF_ERROR(want(1));
    if (words[1].empty() || words[1].size() > 253) {
      return Status::InvalidArgument("drain-node: a node name, at most 253 characters");
    }
    f.kind = FailureKind::kDrainNode;
    f.node = words[1];
    return f;
  }
  if (name == "kill-trainer" || name == "delete-pod") {
    DDP_RETURN_IF_ERROR(want(1));
    f.kind = name == "kill-trainer" ? FailureKind::kKillTrainer : FailureKind::kDeletePod;
  } else if (name == "freeze-pod") {
    DDP_RETURN_IF_ERROR(want(2));
    f.kind = FailureKind::kFreezePod;
    char* end = nullptr;
    f.seconds = std::strtod(words[2].c_str(), &end);
    if (end == words[2].c_str() || *end != '\0' || !(f.seconds > 0) || f.seconds > 3600) {
      return Status::InvalidArgument("freeze-pod: SECONDS \"" + words[2] +
                                     "\" is not a number in (0, 3600]");
    }
  } else {
    return Status::InvalidArgument("unknown failure \"" + name + "\". " + usage);
  }
  const std::optional<int> rank = Rank(words[1]);
  if (!rank) return Status::InvalidArgument(name + ": RANK \"" + words[1] + "\" is not a rank (0, 1, ...)");
  f.rank = *rank;
  return f;
}

std::string FormatIncident(const api::Incident& i, int64_t number) {
  std::string out = "incident " + std::to_string(number) + ": " + i.kind;
  out += i.pod.empty() ? "" : " of pod " + i.pod;
  std::string where;
  if (!i.node.empty()) where = "node " + i.node;
  if (i.rank >= 0) where += (where.empty() ? "" : ", ") + std::string("rank ") + std::to_string(i.rank);
  if (!where.empty()) out += " (" + where + ")";
  out += " at " + api::FormatTime(i.time) + ", step " + std::to_string(i.step) + "\n  ";
  if (i.detection_seconds) out += "detected after " + Fixed(*i.detection_seconds) + " s; ";
  if (i.stall_seconds) {
    out += "training stood still " + Fixed(*i.stall_seconds) + " s (measured by the " +
           (i.source == api::kSourceWorkers ? "workers" : "operator") + ")";
  } else {
    out += "training has not advanced since";
  }
  if (i.steps_lost) out += "; " + std::to_string(*i.steps_lost) + " steps lost";
  out += "\n  outcome: " + (i.outcome.empty() ? std::string("still recovering") : i.outcome) + "\n";
  if (!i.message.empty()) out += "  " + i.message + "\n";
  return out;
}

std::string FormatTable(const std::vector<api::Incident>& incidents, int64_t first_number,
                        std::optional<double> goodput) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof(line), "%4s  %-12s %-28s %5s %9s %9s %5s  %s\n", "#", "kind", "pod",
                "rank", "stall s", "detect s", "lost", "outcome");
  out += line;
  double sum = 0, longest = 0;
  int stalls = 0;
  int64_t n = first_number;
  for (const api::Incident& i : incidents) {
    const std::string stall = i.stall_seconds ? Fixed(*i.stall_seconds) : "-";
    const std::string detect = i.detection_seconds ? Fixed(*i.detection_seconds) : "-";
    const std::string lost = i.steps_lost ? std::to_string(*i.steps_lost) : "-";
    std::snprintf(line, sizeof(line), "%4lld  %-12s %-28s %5d %9s %9s %5s  %s\n",
                  static_cast<long long>(n++), i.kind.c_str(),
                  (i.pod.empty() ? "-" : i.pod.substr(0, 28)).c_str(), i.rank, stall.c_str(),
                  detect.c_str(), lost.c_str(), i.outcome.empty() ? "recovering" : i.outcome.c_str());
    out += line;
    if (i.stall_seconds) {
      sum += *i.stall_seconds;
      longest = std::max(longest, *i.stall_seconds);
      ++stalls;
    }
  }
  out += std::to_string(incidents.size()) + " incident(s)";
  if (stalls > 0) {
    out += "; stall mean " + Fixed(sum / stalls) + " s, longest " + Fixed(longest) + " s";
  }
  out += "\n";
  if (goodput) out += "goodput " + Fixed(*goodput, 4) + " (docs/metrics.md)\n";
  return out;
}

}  // namespace ddp::chaos
