// Termination reasons of supervised pods (see group_contract.h).
#include "common/group_contract.h"

#include <cstdlib>

namespace ddp::group {
namespace {

constexpr char kPrefix[] = "ddp: ";
constexpr EndReason kAll[] = {EndReason::kBudgetSpent, EndReason::kNotRetryable,
                              EndReason::kGroupAbandoned, EndReason::kDeparted,
                              EndReason::kStopped, EndReason::kFenced,
                              EndReason::kFinished, EndReason::kReleased,
                              EndReason::kResized};

}  // namespace

const char* EndReasonName(EndReason r) {
  switch (r) {
    case EndReason::kBudgetSpent:
      return "BudgetSpent";
    case EndReason::kNotRetryable:
      return "NotRetryable";
    case EndReason::kGroupAbandoned:
      return "GroupAbandoned";
    case EndReason::kDeparted:
      return "Departed";
    case EndReason::kStopped:
      return "Stopped";
    case EndReason::kFenced:
      return "Fenced";
    case EndReason::kFinished:
      return "Finished";
    case EndReason::kReleased:
      return "Released";
    case EndReason::kResized:
      return "Resized";
  }
  return "";
}

std::string FormatEnd(EndReason r, const std::string& text) {
  return std::string(kPrefix) + EndReasonName(r) + ": " + text;
}

std::optional<EndReason> ParseEnd(const std::string& message) {
  const std::string line = message.substr(0, message.find('\n'));
  if (line.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string rest = line.substr(sizeof(kPrefix) - 1);
  for (EndReason r : kAll) {
    const std::string name = EndReasonName(r);
    if (rest.rfind(name, 0) == 0 && (rest.size() == name.size() || rest[name.size()] == ':')) {
      return r;
    }
  }
  return std::nullopt;
}

std::string FormatFinished(const FinishedReport& report) {
  std::string text = "step " + std::to_string(report.steps) + " of " + std::to_string(report.steps);
  if (report.recoveries) {
    text += "; " + std::to_string(*report.recoveries) + " recoveries charged in the group this round";
  }
  return FormatEnd(EndReason::kFinished, text);
}

namespace {

// A decimal count at `*at` (no sign, at most 18 digits); advances `*at` past it.
std::optional<int64_t> Count(const std::string& s, size_t* at) {
  size_t i = *at;
  int64_t n = 0;
  while (i < s.size() && i - *at < 18 && s[i] >= '0' && s[i] <= '9') n = n * 10 + (s[i++] - '0');
  if (i == *at || (i < s.size() && s[i] >= '0' && s[i] <= '9')) return std::nullopt;
  *at = i;
  return n;
}

bool Literal(const std::string& s, size_t* at, const char* lit) {
  const std::string l(lit);
  if (s.compare(*at, l.size(), l) != 0) return false;
  *at += l.size();
  return true;
}

}  // namespace

std::optional<FinishedReport> ParseFinished(const std::string& message) {
  if (ParseEnd(message) != EndReason::kFinished) return std::nullopt;
  const std::string line = message.substr(0, message.find('\n'));
  size_t at = sizeof(kPrefix) - 1 + std::string(EndReasonName(EndReason::kFinished)).size();
  if (!Literal(line, &at, ": ")) return std::nullopt;
  FinishedReport r;
  if (Literal(line, &at, "step ")) {
    auto step = Count(line, &at);
    if (!step || !Literal(line, &at, " of ")) return std::nullopt;
    auto total = Count(line, &at);
    if (!total || *total != *step) return std::nullopt;
    r.steps = *step;
    if (at == line.size()) return r;
    if (!Literal(line, &at, "; ")) return std::nullopt;
  } else {
    r.steps = -1;  // an earlier supervisor's message: the recoveries only
  }
  auto n = Count(line, &at);
  if (!n || !Literal(line, &at, " recoveries")) return std::nullopt;
  // A count past the bound is a lie or an overflow: the finish stands, the count is not taken.
  if (*n <= kMaxFinishedCount) r.recoveries = *n;
  return r;
}

}  // namespace ddp::group
