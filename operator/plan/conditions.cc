// Condition updates; see conditions.h.
#include "operator/plan/conditions.h"

#include "operator/api/utf8.h"

namespace ddp::plan {
namespace {

// metav1.Condition's message limit: a longer one fails the status write for good.
constexpr size_t kMaxConditionMessage = 32768;

}  // namespace

void SetCondition(api::DDPJobStatus* s, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& full_message, api::TimePoint now,
                  int64_t generation) {
  // Cut here, once, so the status read back equals the one planned (no write per pass).
  const std::string message = api::TruncateUtf8(full_message, kMaxConditionMessage);
  for (auto& c : s->conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = now;
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.observed_generation = generation;
    return;
  }
  api::Condition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  c.message = message;
  c.last_transition_time = now;
  c.observed_generation = generation;
  s->conditions.push_back(c);
}

void ClearCondition(api::DDPJobStatus* s, const std::string& type, const std::string& reason,
                    const std::string& message, api::TimePoint now, int64_t generation) {
  const api::Condition* c = s->FindCondition(type);
  if (c == nullptr || c->status != "True") return;
  SetCondition(s, type, "False", reason, message, now, generation);
}

}  // namespace ddp::plan
