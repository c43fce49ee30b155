// RenderNewJob: the planner's first passes over a job, their creates (see render.h).
#include "operator/plan/render.h"

#include "operator/plan/gang.h"
#include "operator/plan/observe.h"

namespace ddp::plan {
namespace {

// Stands for any node: the second pass needs the first pass's pods bound, not where.
constexpr char kRenderedNode[] = "rendered-node";

}  // namespace

std::vector<nlohmann::json> RenderNewJob(const api::DDPJob& job, int round,
                                         const PlanOptions& options, TimePoint now) {
  api::DDPJob fresh = job;
  fresh.status = api::DDPJobStatus{};
  fresh.status.round = round;  // StartJob starts the job in its status' round
  fresh.deletion_timestamp.reset();
  fresh.spec.run_policy.suspend = false;  // a suspended job: what it creates once resumed
  Plan first = PlanReconcile(fresh, Observed{}, now, options);
  std::vector<nlohmann::json> out = std::move(first.creates);
  if (options.gang.scheduler == GangScheduler::kNone) return out;
  // Under a PodGroup scheduler the spares come once the round's gang is bound (SparesMayJoin):
  // a second pass that sees every object of the first, its pods bound, adds them.
  Observed seen;
  for (const nlohmann::json& o : out) {
    const std::string kind = o.value("kind", "");
    if (kind == "Pod") {
      ObservedPod pod = ObservePod(o);
      pod.node_name = kRenderedNode;
      seen.pods.push_back(std::move(pod));
    } else if (kind == kPodGroupKind) {
      seen.pod_group = ObservePodGroup(o);
    } else if (kind == "Service") {
      seen.service_exists = true;
    } else if (kind == "NetworkPolicy") {
      seen.network_policy_exists = true;
    }
  }
  if (first.status) fresh.status = *first.status;
  for (nlohmann::json& o : PlanReconcile(fresh, seen, now, options).creates) {
    if (o.value("kind", "") == "Pod" && ObservePod(o).role == "spare") out.push_back(std::move(o));
  }
  return out;
}

}  // namespace ddp::plan
