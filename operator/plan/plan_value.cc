// Plan's equality and its readable form for tests and debug logs.
#include <sstream>

#include "operator/api/serialize.h"
#include "operator/plan/plan.h"

namespace ddp::plan {

bool Plan::operator==(const Plan& o) const {
  return creates == o.creates && deletes == o.deletes && patches == o.patches &&
         status == o.status && events == o.events && requeue_after == o.requeue_after &&
         delete_job == o.delete_job;
}

bool Plan::empty() const {
  return creates.empty() && deletes.empty() && patches.empty() && !status && events.empty() &&
         !requeue_after && !delete_job;
}

std::string Plan::ToString() const {
  std::ostringstream out;
  out << "Plan{";
  for (const auto& c : creates) {
    out << "\n  create " << c.value("kind", "?") << " "
        << c["metadata"].value("name", "?");
    if (c["metadata"].contains("labels") && c["metadata"]["labels"].contains("ddp.dev/round")) {
      out << " round " << c["metadata"]["labels"]["ddp.dev/round"].get<std::string>();
    }
  }
  for (const auto& d : deletes) {
    out << "\n  delete " << d.kind << " " << d.name;
    if (d.grace_period_seconds) out << " (grace " << *d.grace_period_seconds << "s)";
  }
  for (const auto& p : patches) {
    out << "\n  patch " << p.kind << " " << p.name << " " << p.merge_patch.dump();
  }
  if (status) out << "\n  status " << api::StatusToJson(*status).dump();
  for (const auto& e : events) out << "\n  event " << e.type << " " << e.reason << ": " << e.message;
  if (requeue_after) out << "\n  requeue after " << requeue_after->count() << "ms";
  if (delete_job) out << "\n  delete job";
  out << (empty() ? "}" : "\n}");
  return out.str();
}

}  // namespace ddp::plan
