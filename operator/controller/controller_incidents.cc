// The controller's side of status.incidents: the per-job series of docs/metrics.md "Incidents
// and goodput". The figures themselves are the planner's (plan/incidents.h, plan/goodput.h);
// this file only counts what a status write changed and renders the goodput at each scrape.
#include <set>

#include "common/logging.h"
#include "operator/api/serialize.h"
#include "operator/controller/controller.h"
#include "operator/plan/goodput.h"

namespace ddp::controller {
namespace {

// The same incident in two statuses (its fields but the ones that fill in as it closes).
bool Same(const api::Incident& a, const api::Incident& b) {
  return a.kind == b.kind && a.pod == b.pod && a.pod_uid == b.pod_uid && a.rank == b.rank &&
         a.round == b.round && a.incarnation == b.incarnation && a.step == b.step;
}

}  // namespace

void Controller::CountIncidents(const api::DDPJob& job, const api::DDPJobStatus& next) {
  const std::vector<std::string> who = {job.namespace_name, job.name};
  const int64_t opened = next.incidents_total - job.status.incidents_total;
  const auto& rows = next.incidents;
  for (int64_t k = 0; k < opened && k < static_cast<int64_t>(rows.size()); ++k) {
    const api::Incident& i = rows[rows.size() - 1 - static_cast<size_t>(k)];
    metrics_->job_incidents_total.Labels({who[0], who[1], i.kind}).Inc();
  }
  for (const api::Incident& i : rows) {
    if (!i.Closed()) continue;
    bool was_closed = false;
    for (const api::Incident& o : job.status.incidents) was_closed = was_closed || (Same(o, i) && o.Closed());
    if (was_closed) continue;
    metrics_->job_recovery_seconds.Labels({who[0], who[1], i.kind, i.outcome}).Observe(*i.stall_seconds);
  }
}

void Controller::UpdateJobGauges() {
  const auto now = std::chrono::system_clock::now();
  std::set<std::pair<std::string, std::string>> live;
  jobs_.ForEach([&](const std::string& key, const JobEntry& e) {
    const size_t slash = key.find('/');
    if (slash == std::string::npos || !e.raw) return;
    const std::pair<std::string, std::string> who{key.substr(0, slash), key.substr(slash + 1)};
    live.insert(who);
    auto st = e.raw->find("status");
    if (st == e.raw->end()) return;
    StatusOr<api::DDPJobStatus> status = api::ParseStatusJson(*st);
    if (!status.ok()) return;
    if (std::optional<double> g = plan::GoodputRatio(*status, now)) {
      metrics_->job_goodput_ratio.Labels({who.first, who.second}).Set(*g);
    }
  });
  // A job that is gone takes its series along (its name may come back as another job).
  auto gone = [&](const std::vector<std::string>& labels) {
    return labels.size() >= 2 && !live.count({labels[0], labels[1]});
  };
  std::vector<std::vector<std::string>> drop;
  metrics_->job_goodput_ratio.ForEach([&](const std::vector<std::string>& l, const metrics::Gauge&) {
    if (gone(l)) drop.push_back(l);
  });
  for (const auto& l : drop) metrics_->job_goodput_ratio.Remove(l);
  drop.clear();
  metrics_->job_incidents_total.ForEach([&](const std::vector<std::string>& l, const metrics::Counter&) {
    if (gone(l)) drop.push_back(l);
  });
  for (const auto& l : drop) metrics_->job_incidents_total.Remove(l);
  drop.clear();
  metrics_->job_recovery_seconds.ForEach([&](const std::vector<std::string>& l, const metrics::Histogram&) {
    if (gone(l)) drop.push_back(l);
  });
  for (const auto& l : drop) metrics_->job_recovery_seconds.Remove(l);
}

}  // namespace ddp::controller
