// The failure decision (see failure_policy.h).
#include "common/failure_policy.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace ddp::failure {

Verdict Decide(const Rules& rules, int exit_code) {
  if (exit_code == 0) return Verdict::kSucceeded;
  switch (rules.policy) {
    case RestartPolicy::kNever:
      return Verdict::kNotRetryable;
    case RestartPolicy::kOnFailure:
      return Verdict::kRetry;
    case RestartPolicy::kExitCode: {
      if (exit_code >= 128) return Verdict::kRetry;
      const auto& codes = rules.retryable_exit_codes;
      return std::find(codes.begin(), codes.end(), exit_code) != codes.end()
                 ? Verdict::kRetry
                 : Verdict::kNotRetryable;
    }
  }
  return Verdict::kNotRetryable;
}

const char* PolicyName(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kExitCode:
      return "ExitCode";
    case RestartPolicy::kNever:
      return "Never";
  }
  return "OnFailure";
}

bool ParsePolicy(const std::string& name, RestartPolicy* out) {
  for (RestartPolicy p : {RestartPolicy::kOnFailure, RestartPolicy::kExitCode, RestartPolicy::kNever}) {
    if (name == PolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

std::string FormatExitCodes(const std::vector<int>& codes) {
  if (codes.empty()) return "none";
  std::string s;
  for (int c : codes) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

StatusOr<std::vector<int>> ParseExitCodes(const std::string& text, const std::string& what) {
  std::vector<int> codes;
  if (text == "none") return codes;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || errno != 0 || *end != '\0' || v < 0 || v > 255) {
      return Status::InvalidArgument(what + "=\"" + text + "\": want exit codes 0..255 separated by commas");
    }
    codes.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return codes;
}

}  // namespace ddp::failure
