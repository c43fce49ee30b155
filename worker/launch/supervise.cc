// Supervisor decisions (see supervise.h).
#include "worker/launch/supervise.h"

#include <string>

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
  if (const char* v = getenv(kEnvWarmStandby); v != nullptr && *v != '\0') {
    const std::string on = v;
    if (on != "0" && on != "1") {
      return Status::InvalidArgument(std::string(kEnvWarmStandby) + "=\"" + on + "\": want 0 or 1");
    }
    s.warm_standby = on == "1";
  }
  return s;
}

}  // namespace ddp::worker
