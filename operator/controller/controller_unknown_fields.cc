// Unknown fields on a stored DDPJob: warned, never refused. The API server prunes what the
// installed CRD does not declare, so a field reaching the operator is one its CRD knows and this
// binary does not (CRD upgraded first, operator not yet), or one stored with validation off.
// Failing a running job for it would punish the upgrade order the docs ask for.
#include <string>
#include <vector>

#include "common/logging.h"
#include "operator/api/unknown_fields.h"
#include "operator/api/utf8.h"
#include "operator/controller/controller.h"

namespace ddp::controller {

// The Event's reason (kubectl describe ddpj; docs/writing-a-ddpjob.md).
constexpr char kUnknownFieldsReason[] = "UnknownFields";
// Twenty misspellings make a long line; an Event is a summary, the log line below is the same.
constexpr size_t kMaxEventMessageBytes = 1024;

void Controller::WarnUnknownFields(const api::DDPJob& job, const nlohmann::json& raw) {
  const std::string key = job.Key();
  const std::string seen = job.uid + "/" + std::to_string(job.generation);
  {
    std::lock_guard<std::mutex> lock(unknown_mu_);
    auto it = unknown_warned_.find(key);
    if (it != unknown_warned_.end() && it->second == seen) return;
    unknown_warned_[key] = seen;
  }
  const std::vector<std::string> problems = api::UnknownFieldProblems(raw);
  if (problems.empty()) return;
  std::string message = "ignored, not fields of this operator's DDPJob: ";
  for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  message = api::TruncateUtf8(message, kMaxEventMessageBytes);
  // EmitEvents logs the one line (WARNING) and records the Event.
  EmitEvents(job, {{"Warning", kUnknownFieldsReason, message}});
}

}  // namespace ddp::controller
