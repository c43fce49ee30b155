// ParsePodTemplate: what it reads into types, and one exact message per bad field.
#include <gtest/gtest.h>

#include <functional>

#include "operator/api/pod_template.h"

namespace ddp::api {
namespace {

using nlohmann::json;

json Good() {
  return json::parse(R"({
    "metadata": {"labels": {"app": "mingpt"}, "annotations": {"team": "vision"}},
    "spec": {
      "containers": [
        {"name": "sidecar", "image": "s"},
        {"name": "worker", "image": "w:1", "command": ["ddp-worker"], "args": ["--steps=5"],
         "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {}}}],
         "ports": [{"name": "metrics", "containerPort": 9400.0, "protocol": "UDP"}],
         "resources": {"limits": {"nvidia.com/gpu": 8, "memory": "64Gi"},
                       "requests": {"cpu": "500m"}},
         "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}]}],
      "volumes": [{"name": "ckpt", "emptyDir": {}}],
      "nodeSelector": {"gpu": "a100"},
      "terminationGracePeriodSeconds": 30,
      "unknownField": {"kept": true}
    }})");
}

TEST(ParsePodTemplate, ReadsAGoodTemplateIntoTypes) {
  std::vector<std::string> errs;
  const PodTemplate t = ParsePodTemplate(Good(), &errs);
  EXPECT_TRUE(errs.empty()) << errs[0];
  EXPECT_EQ(t.labels.at("app"), "mingpt");
  EXPECT_EQ(t.annotations.at("team"), "vision");
  ASSERT_EQ(t.containers.size(), 2u);
  EXPECT_EQ(t.WorkerIndex(), 1);
  const Container& w = t.containers[1];
  EXPECT_EQ(w.image, "w:1");
  EXPECT_EQ(w.command, std::vector<std::string>{"ddp-worker"});
  EXPECT_EQ(w.args, std::vector<std::string>{"--steps=5"});
  ASSERT_EQ(w.env.size(), 2u);
  EXPECT_EQ(w.env[0].value, std::optional<std::string>("1"));
  EXPECT_TRUE(w.env[1].value_from);
  ASSERT_EQ(w.ports.size(), 1u);
  EXPECT_EQ(w.ports[0].container_port, 9400);  // an integral float counts
  EXPECT_EQ(w.ports[0].protocol, "UDP");
  EXPECT_EQ(w.limits.at("nvidia.com/gpu"), "8");
  EXPECT_EQ(w.requests.at("cpu"), "500m");
  EXPECT_EQ(t.volume_names, std::vector<std::string>{"ckpt"});
  EXPECT_EQ(t.node_selector.at("gpu"), "a100");
  EXPECT_EQ(t.termination_grace_period_seconds, std::optional<int64_t>(30));
}

TEST(ParsePodTemplate, WorkerIndexIsTheFirstWithoutAWorker) {
  std::vector<std::string> errs;
  json t = Good();
  t["spec"]["containers"][1]["name"] = "trainer";
  EXPECT_EQ(ParsePodTemplate(t, &errs).WorkerIndex(), 0);
  EXPECT_EQ(PodTemplate{}.WorkerIndex(), -1);
}

TEST(ParsePodTemplate, OneMessagePerBadField) {
  const std::string s = "spec.template.spec.";
  const std::string c = s + "containers[1].";
  const std::vector<std::pair<std::function<void(json&)>, std::string>> rows = {
      {[](json& t) { t = json::array(); }, "spec.template: want an object, got a list []"},
      {[](json& t) { t["metadata"] = "x"; }, "spec.template.metadata: want an object, got a string \"x\""},
      {[](json& t) { t["metadata"]["labels"]["tier"] = 1; },
       "spec.template.metadata.labels[\"tier\"]: want a string, got an integer 1"},
      {[](json& t) { t["spec"] = 5; }, "spec.template.spec: want an object, got an integer 5"},
      {[](json& t) { t.erase("spec"); }, s + "containers: at least one container is required"},
      {[](json& t) { t["spec"]["containers"] = json::object(); },
       s + "containers: want a list, got an object {}"},
      {[](json& t) { t["spec"]["containers"][0] = "worker"; },
       s + "containers[0]: want an object, got a string \"worker\""},
      {[](json& t) { t["spec"]["containers"][1].erase("name"); }, c + "name is required"},
      {[](json& t) { t["spec"]["containers"][1]["name"] = ""; }, c + "name is required"},
      {[](json& t) { t["spec"]["containers"][1]["name"] = "Worker"; },
       c + "name (\"Worker\") must be a DNS-1123 label: at most 63 lowercase letters, digits or '-'"},
      {[](json& t) { t["spec"]["containers"][1]["name"] = "sidecar"; },
       c + "name (\"sidecar\") is used by another container"},
      {[](json& t) { t["spec"]["containers"][1]["image"] = 1; },
       c + "image: want a string, got an integer 1"},
      {[](json& t) { t["spec"]["containers"][1]["imagePullPolicy"] = "Sometimes"; },
       c + "imagePullPolicy (\"Sometimes\") must be one of Always, IfNotPresent, Never"},
      {[](json& t) { t["spec"]["containers"][1]["args"] = "--steps=5"; },
       c + "args: want a list, got a string \"--steps=5\""},
      {[](json& t) { t["spec"]["containers"][1]["args"][0] = nullptr; },
       c + "args[0]: want a string, got null"},
      {[](json& t) { t["spec"]["containers"][1]["env"][0]["value"] = 1; },
       c + "env[0].value: want a string, got an integer 1"},
      {[](json& t) { t["spec"]["containers"][1]["env"][0]["valueFrom"] = json::object(); },
       c + "env[0]: value and valueFrom are exclusive"},
      {[](json& t) { t["spec"]["containers"][1]["env"][1].erase("name"); }, c + "env[1].name is required"},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0]["containerPort"] = "9400"; },
       c + "ports[0].containerPort: want an integer, got a string \"9400\""},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0]["containerPort"] = 9400.5; },
       c + "ports[0].containerPort: want an integer, got a number 9400.5"},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0]["containerPort"] = 0; },
       c + "ports[0].containerPort (0) must be in 1..65535"},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0].erase("containerPort"); },
       c + "ports[0].containerPort is required"},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0]["protocol"] = "tcp"; },
       c + "ports[0].protocol (\"tcp\") must be one of TCP, UDP, SCTP"},
      {[](json& t) { t["spec"]["containers"][1]["ports"][0]["name"] = "a-very-long-port-name"; },
       c + "ports[0].name (\"a-very-long-port-name\") must be a port name: at most 15 lowercase "
           "letters, digits or '-', with a letter"},
      {[](json& t) { t["spec"]["containers"][1]["ports"].push_back({{"name", "metrics"}, {"containerPort", 1}}); },
       c + "ports[1].name (\"metrics\") is used twice"},
      {[](json& t) { t["spec"]["containers"][1]["resources"]["limits"]["memory"] = "64 GB"; },
       c + "resources.limits[\"memory\"]: want a quantity such as \"8\", \"500m\" or \"64Gi\", "
           "got a string \"64 GB\""},
      {[](json& t) { t["spec"]["containers"][1]["resources"]["requests"]["cpu"] = -1; },
       c + "resources.requests[\"cpu\"]: want a quantity such as \"8\", \"500m\" or \"64Gi\", "
           "got an integer -1"},
      {[](json& t) { t["spec"]["containers"][1]["resources"]["limits"]["bad name!"] = "1"; },
       c + "resources.limits[\"bad name!\"]: not a resource name"},
      {[](json& t) { t["spec"]["containers"][1]["volumeMounts"][0].erase("mountPath"); },
       c + "volumeMounts[0].mountPath is required"},
      {[](json& t) { t["spec"]["containers"][1]["readinessProbe"] = true; },
       c + "readinessProbe: want an object, got a boolean true"},
      {[](json& t) { t["spec"]["volumes"].push_back({{"name", "ckpt"}}); },
       s + "volumes[1].name (\"ckpt\") is used by another volume"},
      {[](json& t) { t["spec"]["volumes"][0]["name"] = 3; }, s + "volumes[0].name: want a string, got an integer 3"},
      {[](json& t) { t["spec"]["nodeSelector"]["gpu"] = true; },
       s + "nodeSelector[\"gpu\"]: want a string, got a boolean true"},
      {[](json& t) { t["spec"]["tolerations"] = {"all"}; },
       s + "tolerations[0]: want an object, got a string \"all\""},
      {[](json& t) { t["spec"]["terminationGracePeriodSeconds"] = -1; },
       s + "terminationGracePeriodSeconds (-1) must be in 0..2147483647"},
      {[](json& t) { t["spec"]["hostNetwork"] = "yes"; }, s + "hostNetwork: want true or false, got a string \"yes\""},
      {[](json& t) { t["spec"]["initContainers"] = {{{"name", "worker"}}}; },
       s + "initContainers[0].name (\"worker\") is used by another container"},
  };
  for (const auto& [edit, want] : rows) {
    json t = Good();
    edit(t);
    std::vector<std::string> errs;
    ParsePodTemplate(t, &errs);
    ASSERT_EQ(errs.size(), 1u) << want << "\ngot: " << (errs.empty() ? "" : errs[0] + " ...");
    EXPECT_EQ(errs[0], want);
  }
}

TEST(ParsePodTemplate, NullIsAbsentAndHugeNumbersAreRangeErrors) {
  std::vector<std::string> errs;
  json t = Good();
  t["spec"]["nodeSelector"] = nullptr;
  t["spec"]["containers"][1]["env"] = nullptr;
  ParsePodTemplate(t, &errs);
  EXPECT_TRUE(errs.empty());
  t["spec"]["containers"][1]["ports"][0]["containerPort"] = std::numeric_limits<uint64_t>::max();
  ParsePodTemplate(t, &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "spec.template.spec.containers[1].ports[0].containerPort "
                     "(18446744073709551615) must be in 1..65535");
}

}  // namespace
}  // namespace ddp::api
