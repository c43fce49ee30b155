// Status -> exit code; the termination log.
#include "worker/train/exit_codes.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/group_contract.h"

namespace ddp::worker {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      return kExitInvalidConfig;
    case StatusCode::kNotFound:
    case StatusCode::kDataLoss:
      return kExitInvalidData;
    default:
      return kExitRetryable;
  }
}

std::string TerminationLogPath() {
  if (const char* env = std::getenv(group::kEnvTerminationLog)) return env;
  std::error_code ec;
  return std::filesystem::is_regular_file(group::kDefaultTerminationLog, ec)
             ? group::kDefaultTerminationLog
             : "";
}

bool WriteTerminationLog(const std::string& path, const std::string& message) {
  if (path.empty()) return false;
  std::ofstream f(path, std::ios::trunc);
  f << message << "\n";
  return static_cast<bool>(f.flush());
}

}  // namespace ddp::worker
