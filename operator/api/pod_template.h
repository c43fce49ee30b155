// spec.template read into types: every field of the PodTemplateSpec that the operator reads,
// copies into its pods or hands to local mode, checked for its JSON type (and its few
// Kubernetes-side rules: port ranges, quantities, unique names) with one message per bad field.
// Pure; thread-compatible. The template itself stays JSON in DDPJobSpec (unknown fields pass
// through to the pods); builders only read a template that ParsePodTemplate accepted.
#ifndef DDP_OPERATOR_API_POD_TEMPLATE_H_
#define DDP_OPERATOR_API_POD_TEMPLATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::api {

struct EnvVar {
  std::string name;
  std::optional<std::string> value;
  bool value_from = false;  // valueFrom is set (its contents are the kubelet's business)
};

struct ContainerPort {
  std::string name;  // "" = unnamed
  int container_port = 0;
  std::string protocol = "TCP";
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::vector<ContainerPort> ports;
  std::map<std::string, std::string> limits;    // resources.limits, quantities as strings
  std::map<std::string, std::string> requests;  // resources.requests
  // Where the kubelet reads the container's termination message; "" when not set (Kubernetes'
  // default, /dev/termination-log). When set: an absolute path of at most kMaxPathBytes bytes,
  // without control characters (it becomes an env value: the builders' DDP_TERMINATION_LOG).
  std::string termination_message_path;
};

inline constexpr size_t kMaxPathBytes = 4096;

struct PodTemplate {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::vector<std::string> volume_names;
  std::map<std::string, std::string> node_selector;
  std::optional<int64_t> termination_grace_period_seconds;
  // The container that receives the operator's env: the one named "worker", else the first.
  // -1 when there is none.
  int WorkerIndex() const;
};

// The messages are capped: past kMaxTemplateProblems, one line says how many more there were.
inline constexpr size_t kMaxTemplateProblems = 20;

// Reads `tmpl` (spec.template as the user wrote it). Appends one message per bad field to *errs,
// each starting with the field's full path, e.g.
//   spec.template.spec.containers[0].ports[0].containerPort: want an integer, got a string "9000"
// and returns what could be read (fields in error are left at their defaults). Never throws.
PodTemplate ParsePodTemplate(const nlohmann::json& tmpl, std::vector<std::string>* errs);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_POD_TEMPLATE_H_
