// One tenant's object cannot take the operator down (issue: a string containerPort crash-looped
// it). The fake API server stores what a CRD without a template schema would let through; the
// test plays the kubelet. No fixed sleeps: every wait polls a condition with a deadline.
#include <stdexcept>

#include <gtest/gtest.h>

#include "operator/controller/controller.h"
#include "operator/kube/operator_metrics.h"
#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};

json JobWithContainer(const std::string& name, const json& container) {
  json job = World::Job(name, 2);
  job["spec"]["template"]["spec"]["containers"] = json::array({container});
  return job;
}

std::vector<json> PodsOf(World& w, const std::string& job) {
  std::vector<json> out;
  for (const json& p : w.Pods()) {
    const json& labels = p["metadata"].value("labels", json::object());
    if (labels.value("ddp.dev/job-name", "") == job) out.push_back(p);
  }
  return out;
}

std::string EventsAbout(World& w, const std::string& job) {
  std::string out;
  for (const json& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
    if (e["involvedObject"].value("name", "") == job) out += e.value("message", "") + "\n";
  }
  return out;
}

// The report's hostile templates, beside a good job: the operator lives, the good job runs,
// each bad one is Failed/InvalidSpec with its field named (status and Event), with no pods.
TEST(HostileJobE2e, BadTemplatesFailAloneAndTheOperatorLives) {
  World w;
  auto op = w.StartOperator("op");
  const std::string c0 = "spec.template.spec.containers[0]";
  const std::vector<std::pair<json, std::string>> bad = {
      {JobWithContainer("string-port", {{"name", "worker"},
                                        {"image", "w"},
                                        {"ports", {{{"containerPort", "9000"}}}}}),
       c0 + ".ports[0].containerPort: want an integer, got a string \"9000\""},
      {JobWithContainer("int-port-name", {{"name", "worker"},
                                          {"image", "w"},
                                          {"ports", {{{"containerPort", 9000}, {"name", 7}}}}}),
       c0 + ".ports[0].name: want a string, got an integer 7"},
      {JobWithContainer("int-env-name",
                        {{"name", "worker"}, {"image", "w"}, {"env", {{{"name", 5}}}}}),
       c0 + ".env[0].name: want a string, got an integer 5"},
      {JobWithContainer("int-container-name", {{"name", 3}, {"image", "w"}}),
       c0 + ".name: want a string, got an integer 3"},
  };
  for (const auto& [job, field] : bad) w.CreateJob(job);
  w.CreateJob(World::Job("good", 2));

  ASSERT_TRUE(w.RunRound("good", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("good").value("phase", "") == "Running"; }, kWait))
      << op->Log();
  for (const auto& [job, field] : bad) {
    const std::string name = job["metadata"]["name"];
    ASSERT_TRUE(WaitFor([&] { return w.JobStatus(name).value("phase", "") == "Failed"; }, kWait))
        << name << ": " << w.JobStatus(name).dump() << op->Log();
    const json st = w.JobStatus(name);
    bool named = false;
    for (const json& c : st["conditions"]) {
      if (c["type"] == "Failed") {
        EXPECT_EQ(c["reason"], "InvalidSpec") << name;
        named = c.value("message", "").find(field) != std::string::npos;
      }
    }
    EXPECT_TRUE(named) << name << ": the Failed condition names " << field << "\n" << st.dump();
    ASSERT_TRUE(WaitFor([&] { return EventsAbout(w, name).find(field) != std::string::npos; },
                        kWait))
        << name << ": no Event names " << field << "\n" << EventsAbout(w, name);
    EXPECT_TRUE(PodsOf(w, name).empty()) << name;
  }
  EXPECT_FALSE(op->ExitCode().has_value()) << "the operator ended:\n" << op->Log();
  // Still serving: a job created after the bad ones gets its pods.
  w.CreateJob(World::Job("later", 1));
  ASSERT_TRUE(w.RunRound("later", 0, 1, kWait)) << op->Log();
  EXPECT_FALSE(op->ExitCode().has_value());
}

// Strict field validation in the operator warns instead of refusing: a job carrying a field this
// operator's CRD does not declare (a newer CRD, or validation off) still runs, and one Warning
// Event names the field and the one meant.
TEST(HostileJobE2e, UnknownFieldsAreWarnedAboutAndTheJobRuns) {
  World w;
  auto op = w.StartOperator("op");
  json job = World::Job("misspelt", 2);
  job["spec"]["failurePolicy"]["livenessTimeoutSecond"] = 10;
  w.CreateJob(job);
  ASSERT_TRUE(w.RunRound("misspelt", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("misspelt").value("phase", "") == "Running"; },
                      kWait))
      << op->Log();
  const std::string want =
      "unknown field \"spec.failurePolicy.livenessTimeoutSecond\" (did you mean "
      "livenessTimeoutSeconds?)";
  ASSERT_TRUE(WaitFor([&] { return EventsAbout(w, "misspelt").find(want) != std::string::npos; },
                      kWait))
      << EventsAbout(w, "misspelt");
  int warnings = 0;
  for (const json& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
    if (e["involvedObject"].value("name", "") == "misspelt" && e.value("reason", "") == "UnknownFields") {
      EXPECT_EQ(e.value("type", ""), "Warning");
      ++warnings;
    }
  }
  EXPECT_EQ(warnings, 1) << "one Event per generation, not one per pass";
  EXPECT_NE(op->Log().find(want), std::string::npos) << op->Log();
}

// A client that throws on one job's status write: stands for any bug an object could still
// reach. The controller must contain it to that job's key.
class ThrowingClient : public controller::KubeClient {
 public:
  ThrowingClient(controller::KubeClient* real, std::string poisoned)
      : real_(real), poisoned_(std::move(poisoned)) {}
  StatusOr<json> Get(const controller::Resource& r, const std::string& ns,
                     const std::string& name) override {
    return real_->Get(r, ns, name);
  }
  StatusOr<json> List(const controller::Resource& r, const std::string& ns,
                      const controller::ListOptions& o) override {
    return real_->List(r, ns, o);
  }
  Status Watch(const controller::Resource& r, const std::string& ns,
               const controller::WatchOptions& o,
               const std::function<bool(const controller::WatchEvent&)>& f) override {
    return real_->Watch(r, ns, o, f);
  }
  StatusOr<json> Create(const controller::Resource& r, const std::string& ns,
                        const json& obj) override {
    return real_->Create(r, ns, obj);
  }
  Status Delete(const controller::Resource& r, const std::string& ns, const std::string& name,
                const controller::DeleteOptions& o) override {
    return real_->Delete(r, ns, name, o);
  }
  std::vector<Status> CreateAll(const std::vector<controller::CreateCall>& c) override {
    return real_->CreateAll(c);
  }
  std::vector<Status> DeleteAll(const std::vector<controller::DeleteCall>& c) override {
    return real_->DeleteAll(c);
  }
  StatusOr<json> MergePatch(const controller::Resource& r, const std::string& ns,
                            const std::string& name, const json& patch) override {
    return real_->MergePatch(r, ns, name, patch);
  }
  StatusOr<json> Update(const controller::Resource& r, const std::string& ns,
                        const std::string& name, const json& obj) override {
    return real_->Update(r, ns, name, obj);
  }
  StatusOr<json> UpdateStatus(const controller::Resource& r, const std::string& ns,
                              const std::string& name, const json& obj) override {
    if (name == poisoned_) throw std::runtime_error("injected: status write of " + name);
    return real_->UpdateStatus(r, ns, name, obj);
  }
  StatusOr<json> MergePatchStatus(const controller::Resource& r, const std::string& ns,
                                  const std::string& name, const json& patch) override {
    if (name == poisoned_) throw std::runtime_error("injected: status patch of " + name);
    return real_->MergePatchStatus(r, ns, name, patch);
  }
  void SetRequestObserver(controller::RequestObserver o) override {
    real_->SetRequestObserver(std::move(o));
  }
  void Stop() override { real_->Stop(); }

 private:
  controller::KubeClient* real_;
  const std::string poisoned_;
};

TEST(HostileJobE2e, AnExceptionInOneReconcileIsThatJobsErrorOnly) {
  World w;
  ThrowingClient client(&w.client(), "poisoned");
  controller::OperatorMetrics metrics;
  controller::ControllerOptions options;
  options.ns = World::kNs;
  options.workers = 2;
  controller::Controller c(&client, &metrics, options);
  w.CreateJob(World::Job("poisoned", 1));
  ASSERT_TRUE(c.Start(kWait).ok());
  w.CreateJob(World::Job("healthy", 2));
  ASSERT_TRUE(w.RunRound("healthy", 0, 2, kWait));
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("healthy").value("phase", "") == "Running"; },
                      kWait));
  // The poisoned job is retried with backoff: more than one pass threw, none ended the process.
  ASSERT_TRUE(WaitFor(
      [&] { return metrics.reconcile_panics_total.Get().value() >= 2; }, kWait));
  EXPECT_GE(metrics.reconcile_errors_total.Get().value(),
            metrics.reconcile_panics_total.Get().value());
  EXPECT_TRUE(PodsOf(w, "poisoned").empty()) << "the status write comes first: no pods";
  c.Stop();
}

}  // namespace
}  // namespace ddp::e2e
