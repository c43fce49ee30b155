// A generation's steps, summed up (see steps.h).
#include "worker/group/steps.h"

#include <cstdio>

namespace ddp::worker::group {

StepsSummary SummarizeSteps(const std::vector<int64_t>& committed) {
  StepsSummary s;
  for (size_t r = 0; r < committed.size(); ++r) {
    if (committed[r] > s.step) {
      s.step = committed[r];
      s.source = static_cast<int>(r);
    }
  }
  if (s.step < 0) return StepsSummary{};
  for (int64_t c : committed) s.behind += c < s.step ? 1 : 0;
  return s;
}

std::string FormatSteps(const StepsSummary& s) {
  return std::to_string(s.step) + " " + std::to_string(s.source) + " " + std::to_string(s.behind);
}

bool ParseSteps(const std::string& text, StepsSummary* out) {
  long long step = 0;
  int source = 0, behind = 0, used = 0;
  // The writer's own format only: no leading space, no sign but a minus.
  if (text.empty() || !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) return false;
  if (text.size() > 64 ||
      std::sscanf(text.c_str(), "%lld %d %d%n", &step, &source, &behind, &used) != 3 ||
      static_cast<size_t>(used) != text.size()) {
    return false;
  }
  if (step < -1 || behind < 0 || (step < 0 ? (source != -1 || behind != 0) : source < 0)) {
    return false;
  }
  *out = StepsSummary{step, source, behind};
  return true;
}

}  // namespace ddp::worker::group
