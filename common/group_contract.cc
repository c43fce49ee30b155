// Termination reasons of supervised pods (see group_contract.h).
#include "common/group_contract.h"

#include <cstdlib>

namespace ddp::group {
namespace {

constexpr char kPrefix[] = "ddp: ";
constexpr EndReason kAll[] = {EndReason::kBudgetSpent, EndReason::kNotRetryable,
                              EndReason::kGroupAbandoned, EndReason::kDeparted,
                              EndReason::kStopped, EndReason::kFenced,
                              EndReason::kFinished};

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

std::string FormatFinished(int64_t recoveries) {
  return FormatEnd(EndReason::kFinished,
                   std::to_string(recoveries) + " recoveries charged in the group this round");
}

std::optional<int64_t> ParseFinished(const std::string& message) {
  if (ParseEnd(message) != EndReason::kFinished) return std::nullopt;
  const size_t at = message.find(": ", sizeof(kPrefix) - 1);
  if (at == std::string::npos) return std::nullopt;
  const char* start = message.c_str() + at + 2;
  char* end = nullptr;
  const long long n = std::strtoll(start, &end, 10);
  // A pod writes this message: a count past kMaxFinishedCount is a lie or an overflow, never
  // something to add to status.recoveries.
  if (end == start || n < 0 || n > kMaxFinishedCount ||
      std::string(end).rfind(" recoveries", 0) != 0) {
    return std::nullopt;
  }
  return n;
}

}  // namespace ddp::group
