// Planner test builders; see planner_fixture.h.
#include "tests/operator/planner_fixture.h"

#include <algorithm>

#include "operator/plan/names.h"

namespace ddp::plan::testing {

api::DDPJob Job(int replicas) {
  api::DDPJob j;
  j.name = "mingpt";
  j.namespace_name = "ml";
  j.uid = "uid-1";
  j.generation = 1;
  j.spec.replicas = replicas;
  j.spec.pod_template = {
      {"spec", {{"containers", {{{"name", "worker"}, {"image", "ddp-worker:test"}}}}}}};
  return j;
}

api::DDPJob Elastic(api::DDPJob j, int min, int max, int pending_timeout_seconds) {
  j.spec.elastic = api::ElasticPolicy{min, max, pending_timeout_seconds};
  return j;
}

api::DDPJob Policy(api::DDPJob j, api::RestartPolicy p, int max_restarts) {
  j.spec.failure_policy.restart_policy = p;
  j.spec.failure_policy.max_restarts = max_restarts;
  return j;
}

api::DDPJob InPhase(api::DDPJob j, const std::string& phase, int round, int size, int restarts) {
  j.status.phase = phase;
  j.status.round = round;
  j.status.replicas = size;
  j.status.world_size = size * j.spec.nproc_per_node;
  j.status.restarts = restarts;
  j.status.observed_generation = j.generation;
  j.status.selector = "ddp.dev/job-name=mingpt";
  j.status.start_time = At(0);
  return j;
}

api::DDPJob Scaled(api::DDPJob j, int replicas) {
  j.spec.replicas = replicas;
  j.generation += 1;
  return j;
}

api::DDPJob InPlace(api::DDPJob j, int spares) {
  j.spec.failure_policy.recovery = api::Recovery::kInPlace;
  j.spec.failure_policy.spares = spares;
  return j;
}

ObservedPod Pod(int index, int round, const std::string& phase) {
  ObservedPod p;
  p.name = "mingpt-worker-" + std::to_string(index);
  p.index = index;
  p.round = round;
  p.phase = phase;
  p.ready = phase == "Running";
  p.uid = p.name + "-r" + std::to_string(round);
  p.owner_uid = Job(1).uid;  // controlled by the job the rows plan for
  p.created = At(0);
  if (phase == "Succeeded") p.exit_code = 0;
  return p;
}

namespace {

ObservedPod Renamed(ObservedPod p, const std::string& name, const char* role, int index) {
  p.name = name;
  p.role = role;
  p.index = index;
  p.uid = name + "-r" + std::to_string(p.round);
  return p;
}

}  // namespace

ObservedPod Rendezvous(int round, const std::string& phase) {
  return Renamed(Pod(0, round, phase), "mingpt-rendezvous", group::kRoleRendezvous, 0);
}

ObservedPod Spare(int k, int round, const std::string& phase) {
  return Renamed(Pod(k, round, phase), "mingpt-spare-" + std::to_string(k), group::kRoleSpare, k);
}

ObservedPod Ends(ObservedPod p, group::EndReason reason, const std::string& text, int code) {
  p.phase = "Failed";
  p.ready = false;
  p.exit_code = code;
  p.reason = "Error";
  p.message = group::FormatEnd(reason, text);
  return p;
}

ObservedPod Exited(int index, int round, int code) {
  ObservedPod p = Pod(index, round, code == 0 ? "Succeeded" : "Failed");
  p.exit_code = code;
  p.reason = code == 0 ? "Completed" : "Error";
  return p;
}

ObservedPod OwnedBy(ObservedPod p, const std::string& owner_uid) {
  p.owner_uid = owner_uid;
  return p;
}

ObservedPod ExitedAt(int index, int round, int code, TimePoint finished) {
  ObservedPod p = Exited(index, round, code);
  p.finished_at = finished;
  return p;
}

ObservedPod Evicted(int index, int round) {
  ObservedPod p = Pod(index, round, "Failed");
  p.reason = "Evicted";
  p.message = "The node was low on resource: memory.";
  return p;
}

ObservedPod Deleting(ObservedPod p) {
  p.deleting = true;
  return p;
}

ObservedPod Unschedulable(int index, int round, TimePoint since) {
  ObservedPod p = Pod(index, round, "Pending");
  p.unschedulable_since = since;
  return p;
}

std::vector<ObservedPod> Pods(int n, int round, const std::string& phase) {
  std::vector<ObservedPod> out;
  for (int i = 0; i < n; ++i) out.push_back(Pod(i, round, phase));
  return out;
}

Observed World(std::vector<ObservedPod> pods, bool service) {
  Observed w;
  w.pods = std::move(pods);
  w.service_exists = service;
  return w;
}

Observed GroupWorld(int n, int round, int spares, const std::string& phase) {
  std::vector<ObservedPod> pods = Pods(n, round, phase);
  pods.push_back(Rendezvous(round, phase));
  for (int k = 0; k < spares; ++k) pods.push_back(Spare(k, round, phase));
  return World(std::move(pods));
}

ObservedGroup Report(int round, std::map<std::string, int> members,
                     std::vector<std::string> spares, double recoveries,
                     std::map<std::string, std::string> fenced) {
  ObservedGroup g;
  g.round = round;
  g.report.present = true;
  g.report.members = std::move(members);
  g.report.spares = std::move(spares);
  g.report.recoveries = recoveries;
  for (auto& [name, uid] : fenced) g.report.fenced.emplace_back(name, uid);
  return g;
}

Observed With(Observed w, ObservedPod p) {
  for (auto& existing : w.pods) {
    if (existing.name == p.name) {
      existing = p;
      return w;
    }
  }
  w.pods.push_back(p);
  return w;
}

void Apply(const Plan& plan, api::DDPJob* job, Observed* world, TimePoint now) {
  for (const auto& d : plan.deletes) {
    if (d.kind == "Service") world->service_exists = false;
    if (d.kind == kNetworkPolicyKind) {
      world->network_policy_exists = false;
      world->network_policy.reset();
    }
    if (d.kind == kPodGroupKind && world->pod_group && world->pod_group->name == d.name) {
      world->pod_group.reset();
    }
    for (auto& p : world->pods) {
      if (d.kind == "Pod" && p.name == d.name) p.deleting = true;
    }
    // A force delete removes its incarnation at once; a stale UID precondition removes nothing.
    if (d.kind == "Pod" && d.grace_period_seconds == 0) {
      auto& pods = world->pods;
      pods.erase(std::remove_if(pods.begin(), pods.end(),
                                [&](const ObservedPod& p) {
                                  return p.name == d.name && (d.uid.empty() || p.uid == d.uid);
                                }),
                 pods.end());
    }
  }
  for (const auto& patch : plan.patches) {
    if (patch.kind == kPodGroupKind && world->pod_group && world->pod_group->name == patch.name) {
      nlohmann::json group = {{"spec", world->pod_group->spec}};
      group.merge_patch(patch.merge_patch);
      world->pod_group->spec = group["spec"];
    }
    if (patch.kind == kNetworkPolicyKind && world->network_policy &&
        world->network_policy->name == patch.name) {
      nlohmann::json policy = {{"spec", world->network_policy->spec}};
      policy.merge_patch(patch.merge_patch);
      world->network_policy->spec = policy["spec"];
    }
    if (patch.kind == "Pod") {  // the rendezvous pod's group-size annotation
      for (auto& pod : world->pods) {
        if (pod.name != patch.name) continue;
        nlohmann::json obj = {{"metadata", {{"name", pod.name}, {"labels", {{api::kRoleLabel, pod.role}}}}}};
        obj.merge_patch(patch.merge_patch);
        pod.group_size = ObservePod(obj).group_size;
      }
    }
  }
  for (const auto& obj : plan.creates) {
    if (obj["kind"] == "Service") {
      world->service_exists = true;
      continue;
    }
    if (obj["kind"] == kNetworkPolicyKind) {
      world->network_policy_exists = true;
      world->network_policy = ObserveNetworkPolicy(obj);
      continue;
    }
    if (obj["kind"] == kPodGroupKind) {
      nlohmann::json group = obj;
      group["metadata"]["uid"] = obj["metadata"]["name"].get<std::string>() + "-pg";
      world->pod_group = ObservePodGroup(group);
      continue;
    }
    nlohmann::json pod = obj;
    pod["metadata"]["uid"] = obj["metadata"]["name"].get<std::string>() + "-new";
    pod["metadata"]["creationTimestamp"] = api::FormatTime(now);
    pod["status"] = {{"phase", "Pending"}};
    world->pods.push_back(ObservePod(pod));
  }
  if (plan.status) job->status = *plan.status;
  if (plan.delete_job) job->deletion_timestamp = now;
}

void ReapDeleting(Observed* world) {
  std::vector<ObservedPod> kept;
  for (auto& p : world->pods) {
    if (!p.deleting) kept.push_back(p);
  }
  world->pods = kept;
}

std::vector<std::string> DescribeCreates(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& obj : plan.creates) {
    std::string s = obj["kind"].get<std::string>() + " " +
                    obj["metadata"]["name"].get<std::string>();
    if (obj["kind"] == "Pod") {
      s += " r" + obj["metadata"]["labels"][api::kRoundLabel].get<std::string>();
    }
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> DescribeDeletes(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& d : plan.deletes) {
    out.push_back(d.kind + " " + d.name +
                  (d.grace_period_seconds
                       ? " (grace " + std::to_string(*d.grace_period_seconds) + "s)"
                       : ""));
  }
  return out;
}

std::vector<std::string> EventReasons(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan.events) out.push_back(e.reason);
  return out;
}

}  // namespace ddp::plan::testing
