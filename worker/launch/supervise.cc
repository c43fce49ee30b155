// Supervisor decisions (see supervise.h).
#include "worker/launch/supervise.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "worker/train/exit_codes.h"

namespace ddp::worker {

StatusOr<RecoverySettings> RecoverySettingsFromLookup(
    const std::function<const char*(const char*)>& getenv) {
  RecoverySettings s;
  if (const char* v = getenv(kEnvRecovery); v != nullptr && *v != '\0') {
    const std::string mode = v;
    if (mode == "InPlace") {
      s.in_place = true;
    } else if (mode != "Restart") {
      return Status::InvalidArgument(std::string(kEnvRecovery) + "=\"" + mode +
                                     "\": want InPlace or Restart");
    }
  }
  if (const char* v = getenv(kEnvMaxRecoveries); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < 0) {
      return Status::InvalidArgument(std::string(kEnvMaxRecoveries) + "=\"" + v +
                                     "\": want an integer >= 0");
    }
    s.max_recoveries = n;
  }
  if (const char* v = getenv(kEnvWarmStandby); v != nullptr && *v != '\0') {
    const std::string on = v;
    if (on != "0" && on != "1") {
      return Status::InvalidArgument(std::string(kEnvWarmStandby) + "=\"" + on + "\": want 0 or 1");
    }
    s.warm_standby = on == "1";
  }
  return s;
}

OnTrainerExit DecideTrainerExit(int code, const RecoverySettings& settings,
                                int64_t group_recoveries_including_this) {
  if (code == kExitOk) return OnTrainerExit::kDone;
  if (code == kExitInvalidConfig || code == kExitInvalidData) return OnTrainerExit::kFailPod;
  if (settings.in_place && group_recoveries_including_this <= settings.max_recoveries) {
    return OnTrainerExit::kRestart;
  }
  return OnTrainerExit::kFailPod;
}

}  // namespace ddp::worker
