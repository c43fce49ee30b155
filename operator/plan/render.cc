// RenderNewJob: the planner's first pass over a job, its creates (see render.h).
#include "operator/plan/render.h"

namespace ddp::plan {

std::vector<nlohmann::json> RenderNewJob(const api::DDPJob& job, int round,
                                         const PlanOptions& options, TimePoint now) {
  api::DDPJob fresh = job;
  fresh.status = api::DDPJobStatus{};
  fresh.status.round = round;  // StartJob starts the job in its status' round
  fresh.deletion_timestamp.reset();
  fresh.spec.run_policy.suspend = false;  // a suspended job: what it creates once resumed
  return PlanReconcile(fresh, Observed{}, now, options).creates;
}

}  // namespace ddp::plan
