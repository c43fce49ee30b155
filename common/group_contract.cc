// Termination reasons of supervised pods (see group_contract.h).
#include "common/group_contract.h"

namespace ddp::group {
namespace {

constexpr char kPrefix[] = "ddp: ";
constexpr EndReason kAll[] = {EndReason::kBudgetSpent, EndReason::kNotRetryable,
                              EndReason::kGroupAbandoned, EndReason::kDeparted,
                              EndReason::kStopped, EndReason::kFenced};

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

}  // namespace ddp::group
