// Object names derived from the job's name; see names.h.
#include "operator/plan/names.h"

namespace ddp::plan {

std::string PodName(const api::DDPJob& job, int index) {
  return job.name + "-worker-" + std::to_string(index);
}

std::string SparePodName(const api::DDPJob& job, int index) {
  return job.name + "-spare-" + std::to_string(index);
}

std::string RendezvousPodName(const api::DDPJob& job) { return job.name + "-rendezvous"; }

std::string StoreAddr(const api::DDPJob& job) {
  return RendezvousPodName(job) + "." + ServiceName(job) + "." + job.namespace_name + ".svc";
}

std::string ServiceName(const api::DDPJob& job) { return job.name; }

std::string Selector(const api::DDPJob& job) {
  return std::string(api::kJobNameLabel) + "=" + job.name;
}

std::string MasterAddr(const api::DDPJob& job) {
  return PodName(job, 0) + "." + ServiceName(job) + "." + job.namespace_name + ".svc";
}

std::string JobIdentity(const api::DDPJob& job) {
  return (job.namespace_name.empty() ? std::string("default") : job.namespace_name) + "/" +
         job.name;
}

std::string CheckpointDir(const api::DDPJob& job) {
  if (!job.spec.checkpoint.path || job.spec.checkpoint.path->empty()) return "";
  std::string root = *job.spec.checkpoint.path;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return (root == "/" ? "" : root) + "/" + JobIdentity(job);
}

}  // namespace ddp::plan
