#include "operator/controller/events.h"

#include <atomic>
#include <cstdio>

#include "operator/api/time_format.h"

namespace ddp::controller {

nlohmann::json BuildEvent(const api::DDPJob& job, const plan::Event& event,
                          std::chrono::system_clock::time_point now, const std::string& instance) {
  static std::atomic<unsigned> sequence{0};
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".%llx%x", static_cast<unsigned long long>(nanos),
                sequence.fetch_add(1) & 0xfff);
  std::string when = api::FormatTime(now);
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", job.name + suffix}, {"namespace", job.namespace_name}}},
      {"involvedObject",
       {{"apiVersion", api::kApiVersion},
        {"kind", api::kKind},
        {"namespace", job.namespace_name},
        {"name", job.name},
        {"uid", job.uid},
        {"resourceVersion", job.resource_version}}},
      {"type", event.type},
      {"reason", event.reason},
      {"message", event.message},
      {"source", {{"component", kEventComponent}, {"host", instance}}},
      {"reportingComponent", kEventComponent},
      {"reportingInstance", instance},
      {"firstTimestamp", when},
      {"lastTimestamp", when},
      {"count", 1},
  };
}

}  // namespace ddp::controller
